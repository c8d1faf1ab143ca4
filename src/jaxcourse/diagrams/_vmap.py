"""vmap's axes, drawn from a real `jax.vmap` call: which axis of each input is mapped, what one
call sees, how the outputs stack."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import jax
import numpy as np
from matplotlib.patches import Rectangle

from ._drawing import MONO, SHARED_COLOR, arrow, cell_color, new_axes, parameter_names, shape_text


@dataclass(frozen=True)
class BatchingLayout:
    """One `jax.vmap` call: the inputs, the mapped axis of each (None: shared), and the output."""

    name: str
    names: tuple[str, ...]
    in_shapes: tuple[tuple[int, ...], ...]
    in_axes: tuple[int | None, ...]
    slice_shapes: tuple[tuple[int, ...], ...]
    slice_out_shape: tuple[int, ...]
    out_shape: tuple[int, ...]
    out_axis: int
    batch_size: int


def _axis_per_argument(in_axes, n_args: int) -> tuple[int | None, ...]:
    axes = tuple(in_axes) if isinstance(in_axes, (tuple, list)) else (in_axes,) * n_args
    if len(axes) != n_args:
        raise ValueError(f"in_axes has {len(axes)} entries for {n_args} arguments")
    if any(
        axis is not None and (isinstance(axis, bool) or not isinstance(axis, int)) for axis in axes
    ):
        raise TypeError(
            f"batching_layout draws an int or None per argument, got in_axes={in_axes!r}"
        )
    return axes


def batching_layout(
    fun: Callable, *args, in_axes=0, out_axes: int = 0, names: Sequence[str] | None = None
) -> BatchingLayout:
    """Runs `jax.vmap(fun, in_axes, out_axes)(*args)` and records which axis of what was mapped.

    Args:
        fun: the per-example function; it must return one array.
        *args: arrays of at most 2 dimensions (so they can be drawn as grids).
        in_axes: an int or None per argument, or one for all, as for `jax.vmap`.
        out_axes: where the batch axis goes in the output.
        names: the arguments' names, for the labels (default: from `fun`'s signature).

    Raises:
        ValueError: an argument or the output has more than 2 dimensions, or no argument is mapped.
        TypeError: an `in_axes` entry is neither an int nor None.
    """
    arrays = [jax.numpy.asarray(arg) for arg in args]
    axes = _axis_per_argument(in_axes, len(arrays))
    if any(array.ndim > 2 for array in arrays):
        raise ValueError("batching_layout draws arguments of at most 2 dimensions")
    if all(axis is None for axis in axes):
        raise ValueError(
            "batching_layout needs at least one mapped argument (an in_axes entry that is not None)"
        )
    out = jax.vmap(fun, in_axes=axes, out_axes=out_axes)(*arrays)
    if not isinstance(out, jax.Array) or out.ndim > 2:
        raise ValueError(
            "batching_layout draws functions that return one array of at most 2 dimensions"
        )
    slices = [
        array if axis is None else jax.numpy.take(array, 0, axis=axis)
        for array, axis in zip(arrays, axes)
    ]
    names = (
        names or parameter_names(fun, len(arrays)) or tuple(f"arg{i}" for i in range(len(arrays)))
    )
    return BatchingLayout(
        name=getattr(fun, "__name__", "f"),
        names=tuple(names),
        in_shapes=tuple(array.shape for array in arrays),
        in_axes=axes,
        slice_shapes=tuple(piece.shape for piece in slices),
        slice_out_shape=jax.eval_shape(fun, *slices).shape,
        out_shape=out.shape,
        out_axis=out_axes % out.ndim,
        batch_size=next(array.shape[axis] for array, axis in zip(arrays, axes) if axis is not None),
    )


CELL = 0.32


def _cells(ax, corner, colors: np.ndarray) -> tuple[float, float]:
    """Draws a grid of cells with their top-left corner at `corner`, one colour per cell
    (`colors` has shape (rows, cols, 3 or 4)). Returns the grid's width and height."""
    rows, cols = colors.shape[:2]
    for i, j in np.ndindex(rows, cols):
        ax.add_patch(
            Rectangle(
                (corner[0] + j * CELL, corner[1] - (i + 1) * CELL),
                CELL,
                CELL,
                facecolor=colors[i, j],
                edgecolor="white",
                linewidth=1.5,
            )
        )
    return cols * CELL, rows * CELL


def _labelled_cells(ax, corner, colors: np.ndarray, label: str, **text_style):
    """`_cells`, with `label` just above the grid's top-left corner."""
    _cells(ax, corner, colors)
    ax.text(
        corner[0], corner[1] + 0.06, label, fontsize=8, va="bottom", linespacing=1.2, **text_style
    )


def _batch_colors(shape: tuple[int, ...], axis: int | None, *, column: bool = False) -> np.ndarray:
    """Cell colours of an array drawn as a grid: by index along `axis`, grey if it is None.
    A 0-D array is one cell; a 1-D array is one row, or one column if `column`."""
    if len(shape) == 2:
        grid = shape
    else:
        length = shape[0] if shape else 1
        grid = (length, 1) if column else (1, length)
    colors = np.empty((*grid, 4))
    for i, j in np.ndindex(*grid):
        if axis is None:
            colors[i, j] = SHARED_COLOR
        else:
            along = (i, j)[axis] if len(shape) == 2 else (i if column else j)
            colors[i, j] = cell_color(along)
    return colors


def _first_slice(shape: tuple[int, ...], axis: int | None, *, column: bool) -> np.ndarray:
    """The colours of what call i = 0 sees: grey for a shared input, batch colour 0 otherwise."""
    colors = _batch_colors(shape, None, column=column)
    if axis is not None:
        colors[:] = cell_color(0)
    return colors


def _slice_text(name: str, axis: int | None, ndim: int) -> str:
    if axis is None:
        return name
    return (
        f"{name}["
        + ", ".join("i" if k == axis else ":" for k in range(ndim)).removesuffix(", :")
        + "]"
    )


def plot_batching(layout: BatchingLayout, *, ax=None, title: str | None = None):
    """Draws `layout` (from `batching_layout`) in three columns: the inputs with their mapped axis
    in colour (one colour per batch index, grey for a shared input); one call of the function
    with the slices it sees for i = 0; the output with the results stacked along `out_axes`.
    Returns the axes."""
    ax = new_axes(ax, (8, 3))
    inputs = [_batch_colors(shape, axis) for shape, axis in zip(layout.in_shapes, layout.in_axes)]
    # A slice keeps the orientation it had in its input: a column of a matrix is drawn as a column.
    pieces = [
        _first_slice(shape, axis, column=len(full) == 2 and axis == 1)
        for shape, full, axis in zip(layout.slice_shapes, layout.in_shapes, layout.in_axes)
    ]
    gap = 0.85
    height = sum(colors.shape[0] * CELL for colors in inputs) + gap * (len(inputs) - 1)
    left = max(colors.shape[1] * CELL for colors in inputs)
    middle = max(left + 1.3, 3.0)
    y = height
    for name, shape, axis, colors, piece in zip(
        layout.names, layout.in_shapes, layout.in_axes, inputs, pieces
    ):
        how = "shared: in_axes None" if axis is None else f"in_axes {axis}"
        _labelled_cells(ax, (0.0, y), colors, f"{name} {shape_text(shape)}\n{how}")
        _labelled_cells(ax, (middle, y), piece, _slice_text(name, axis, len(shape)), family=MONO)
        y -= colors.shape[0] * CELL + gap
    center = height / 2
    arrow(ax, (left + 0.15, center), (middle - 0.2, center), "slice i")

    piece_end = middle + max(piece.shape[1] * CELL for piece in pieces)
    out_piece = _first_slice(
        layout.slice_out_shape, 0, column=layout.out_axis == 1 and len(layout.out_shape) == 2
    )
    result_x = piece_end + 1.5
    arrow(ax, (piece_end + 0.15, center), (result_x - 0.2, center), layout.name)
    _labelled_cells(
        ax,
        (result_x, center + out_piece.shape[0] * CELL / 2),
        out_piece,
        f"result i\n{shape_text(layout.slice_out_shape)}",
    )
    calls = f"one call per i = 0, …, {layout.batch_size - 1}\n(traced once, not a loop)"
    ax.text((middle + result_x) / 2, -0.1, calls, ha="center", va="top", fontsize=8, style="italic")

    result_end = result_x + out_piece.shape[1] * CELL
    out_x = result_end + 1.3
    arrow(ax, (result_end + 0.15, center), (out_x - 0.2, center), "stack")
    output = _batch_colors(layout.out_shape, layout.out_axis)
    _labelled_cells(
        ax,
        (out_x, center + output.shape[0] * CELL / 2),
        output,
        f"output {shape_text(layout.out_shape)}\nout_axes {layout.out_axis}",
    )
    ax.set_xlim(-0.1, out_x + max(output.shape[1] * CELL, 1.4) + 0.1)
    ax.set_ylim(-0.75, height + 0.65)
    ax.set_aspect("equal")
    if title:
        ax.set_title(title, fontsize=9, family=MONO)
    return ax
