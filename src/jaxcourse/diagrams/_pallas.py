"""A Pallas grid, drawn from a traced `pallas_call`: which block of an operand each grid step
reads or writes, and how far the edge blocks reach past the array."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from itertools import product

from matplotlib.patches import Rectangle

from ..pallas_kernels import pallas_call_layouts
from ._drawing import cell_color, new_axes, shape_text


@dataclass(frozen=True)
class BlockVisit:
    """One block of an operand and the grid steps that use it.

    Attributes:
        steps: the grid indices (program ids) of the steps that read or write this block.
        rows, cols: the block's element ranges, [start, stop); stop may pass the array's edge.
    """

    steps: tuple[tuple[int, ...], ...]
    rows: tuple[int, int]
    cols: tuple[int, int]


@dataclass(frozen=True)
class GridLayout:
    """The blocks of one operand of a `pallas_call` (`grid_blocks`)."""

    grid: tuple[int, ...]
    array_shape: tuple[int, ...]
    block_shape: tuple[int, ...]
    visits: tuple[BlockVisit, ...]


def _as_2d(shape: tuple) -> tuple[int, int]:
    return (1, shape[0]) if len(shape) == 1 else (shape[0], shape[1])


def grid_blocks(fn: Callable, *args, operand: str = "input", index: int = 0) -> GridLayout:
    """The blocks that each step of the first `pl.pallas_call` in `fn(*args)` reads (operand
    "input") or writes ("output") of its `index`-th such operand, found by evaluating the
    BlockSpec's index map at every grid index. A 1-D operand is drawn as one row; squeezed
    dimensions count as blocks of 1.

    Raises:
        ValueError: `fn` calls no `pallas_call`, `operand` is neither "input" nor "output", or
            the operand has more than 2 dimensions.
    """
    if operand not in ("input", "output"):
        raise ValueError(f"operand must be 'input' or 'output', got {operand!r}.")
    layouts = pallas_call_layouts(fn, *args)
    if not layouts:
        raise ValueError("grid_blocks found no pallas_call in the traced function.")
    layout = layouts[0]
    block_map = (layout.inputs if operand == "input" else layout.outputs)[index]
    if len(block_map.array_shape) not in (1, 2):
        raise ValueError(f"grid_blocks draws 1- or 2-D operands, got {block_map.array_shape}.")
    block_shape = tuple(1 if size is None else size for size in block_map.block_shape)
    block = _as_2d(block_shape)
    steps_of: dict[tuple[int, int], list[tuple[int, ...]]] = {}
    for step in product(*(range(size) for size in layout.grid)):
        indices = tuple(block_map.index_map(*step))
        block_index = (0, indices[0]) if len(indices) == 1 else (indices[0], indices[1])
        steps_of.setdefault(block_index, []).append(step)
    visits = tuple(
        BlockVisit(
            tuple(steps),
            (r * block[0], (r + 1) * block[0]),
            (c * block[1], (c + 1) * block[1]),
        )
        for (r, c), steps in sorted(steps_of.items())
    )
    return GridLayout(layout.grid, tuple(block_map.array_shape), block_shape, visits)


def _steps_text(steps: tuple[tuple[int, ...], ...]) -> str:
    shown = ", ".join(shape_text(step) for step in steps[:3])
    return shown + (f", … ({len(steps)} steps)" if len(steps) > 3 else "")


def plot_grid_blocks(layout: GridLayout, *, ax=None, title: str | None = None):
    """Draws the operand as a frame and each block in its own colour, labelled with the grid
    steps that use it and its element ranges; the parts of edge blocks past the array are
    hatched. Returns the axes."""
    n_rows, n_cols = _as_2d(layout.array_shape)
    top = max(n_rows, max(visit.rows[1] for visit in layout.visits))
    right = max(n_cols, max(visit.cols[1] for visit in layout.visits))
    ax = new_axes(ax, (6, 3))
    for k, visit in enumerate(layout.visits):
        (r0, r1), (c0, c1) = visit.rows, visit.cols
        ax.add_patch(
            Rectangle(
                (c0, top - r1),
                c1 - c0,
                r1 - r0,
                facecolor=cell_color(k),
                edgecolor="white",
                linewidth=2,
            )
        )
        if r1 > n_rows or c1 > n_cols:  # the part of the block past the array's edge
            inside_rows, inside_cols = min(r1, n_rows), min(c1, n_cols)
            for corner, width, height in (
                ((inside_cols, top - r1), c1 - inside_cols, r1 - r0),
                ((c0, top - r1), inside_cols - c0, r1 - inside_rows),
            ):
                if width > 0 and height > 0:
                    ax.add_patch(
                        Rectangle(
                            corner, width, height, fill=False, hatch="///", edgecolor="#888888"
                        )
                    )
        label = f"step {_steps_text(visit.steps)}\nrows {r0}:{r1}, cols {c0}:{c1}"
        ax.text((c0 + c1) / 2, top - (r0 + r1) / 2, label, ha="center", va="center", fontsize=7)
    ax.add_patch(
        Rectangle((0, top - n_rows), n_cols, n_rows, fill=False, edgecolor="black", linewidth=1.5)
    )
    ax.set_xlim(-0.01 * right, right * 1.01)
    ax.set_ylim(-0.02 * top, top * 1.02)
    ax.set_title(
        title
        or f"array {shape_text(layout.array_shape)}, blocks {shape_text(layout.block_shape)}, "
        f"grid {shape_text(layout.grid)}",
        fontsize=8.5,
    )
    return ax
