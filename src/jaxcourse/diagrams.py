"""Pictures of the ideas, drawn from real JAX objects: jit's pipeline, vmap's axes, flatten, sharding.

Each picture has two halves. A data function asks JAX what happens (`jit_pipeline`,
`batching_layout`, `flatten_layout`, `shard_blocks`), so tests can check the picture against JAX;
a `plot_*` function draws that data with matplotlib and returns the axes.
"""

from __future__ import annotations

import inspect
import itertools
import re
import textwrap
from dataclasses import dataclass
from typing import Any, Callable, Iterator, Sequence

import jax
import matplotlib.pyplot as plt
import numpy as np
from matplotlib.patches import FancyArrowPatch, FancyBboxPatch, Rectangle

from . import hlo

MONO = "DejaVu Sans Mono"
SHARED_COLOR = (0.85, 0.85, 0.85, 1.0)  # a shared input, a replicated block
BOX_COLORS = {"python": "#fde0c5", "trace": "#fff2b3", "jaxpr": "#d4ecd0", "hlo": "#cfe2f3", "run": "#e4d7f0"}


def _color(index: int) -> tuple[float, ...]:
    """One distinct colour per batch index, leaf or device (tab10, then tab20 beyond 10)."""
    palette = plt.get_cmap("tab10" if index < 10 else "tab20")
    return palette(index % palette.N)


def _light(color, amount: float = 0.55) -> tuple[float, ...]:
    """`color` mixed with white, light enough to write black text on."""
    rgb = np.asarray(color[:3])
    return tuple(rgb + (1.0 - rgb) * amount)


def _cell_color(index: int) -> tuple[float, ...]:
    """The fill of a cell or block that belongs to batch index, leaf or device `index` (RGBA)."""
    return (*_light(_color(index), 0.35), 1.0)


def _new_axes(ax, figsize: tuple[float, float]):
    if ax is None:
        _, ax = plt.subplots(figsize=figsize)
    ax.set_axis_off()
    return ax


def _box(ax, center, size, title: str, body: str = "", *, color="white", mono_body: bool = False):
    """A rounded box with a bold title line and an optional body below it."""
    (x, y), (width, height) = center, size
    ax.add_patch(
        FancyBboxPatch(
            (x - width / 2, y - height / 2), width, height,
            boxstyle="round,pad=0.02,rounding_size=0.08", facecolor=color, edgecolor="#444444", linewidth=1,
        )
    )
    top = y + height / 2 - 0.12
    ax.text(x, top, title, ha="center", va="top", fontsize=9, fontweight="bold")
    if body:
        ax.text(
            x - width / 2 + 0.12 if mono_body else x, top - 0.3, body, ha="left" if mono_body else "center",
            va="top", fontsize=7 if mono_body else 8, family=MONO if mono_body else None, linespacing=1.3,
        )


def _arrow(ax, start, end, label: str = "", *, label_offset=(0.0, 0.12), color="#333333"):
    """A straight arrow from `start` to `end`, with an optional italic label above its middle."""
    ax.add_patch(FancyArrowPatch(start, end, arrowstyle="-|>", mutation_scale=12, color=color, linewidth=1.2))
    if label:
        middle = (np.asarray(start) + np.asarray(end)) / 2 + np.asarray(label_offset)
        ax.text(*middle, label, ha="center", va="bottom", fontsize=7.5, color=color, style="italic")


# --- jit: Python function -> tracers -> jaxpr -> StableHLO -> executable, and the cache ----------


@dataclass(frozen=True)
class JitPipeline:
    """What `jax.jit` makes of one function at one set of argument types, stage by stage."""

    name: str
    arg_names: tuple[str, ...] | None  # None when the arguments are not one array each
    abstract_args: tuple[str, ...]
    jaxpr_lines: tuple[str, ...]
    primitives: tuple[str, ...]
    stablehlo_ops: tuple[str, ...]
    compiled_ops: tuple[str, ...]

    @property
    def fusions(self) -> int:
        """How many of the compiled instructions are fused kernels."""
        return self.compiled_ops.count("fusion")


_STABLEHLO_OP = re.compile(r"= stablehlo\.(?P<op>[\w.]+)")
_HLO_OPCODE = re.compile(r"=\s.*?\s(?P<op>[a-z][a-z0-9\-]*)\(")


def _parameter_names(fun: Callable, n_args: int) -> tuple[str, ...] | None:
    """The names of `fun`'s parameters if it has exactly `n_args` of them, else None."""
    try:
        names = tuple(inspect.signature(fun).parameters)
    except (TypeError, ValueError):  # some builtins and C functions have no signature
        return None
    return names if len(names) == n_args else None


def jit_pipeline(fun: Callable, *args) -> JitPipeline:
    """Traces, lowers and compiles `jax.jit(fun)(*args)`, and records what each stage produced.

    Args:
        fun: a function of arrays (not already jitted: its name labels the picture).
        *args: example arguments; only their shapes and dtypes matter.

    Returns:
        the abstract values the tracers carried, the jaxpr's lines and primitives, the StableHLO
        operations, and the instructions of the compiled program's entry computation (parameters
        left out), all in program order.
    """
    if not callable(fun):
        raise TypeError(f"jit_pipeline needs a function, got {type(fun).__name__}")
    closed = jax.make_jaxpr(fun)(*args)
    stablehlo = jax.jit(fun).lower(*args).as_text()
    entry = hlo.entry_computation(fun, *args).splitlines()
    leaves = jax.tree.leaves(args)
    return JitPipeline(
        name=getattr(fun, "__name__", "f"),
        arg_names=_parameter_names(fun, len(args)) if len(leaves) == len(args) else None,
        abstract_args=tuple(str(jax.typeof(leaf)) for leaf in leaves),
        jaxpr_lines=tuple(str(closed).splitlines()),
        primitives=tuple(eqn.primitive.name for eqn in closed.jaxpr.eqns),
        stablehlo_ops=tuple(match["op"] for match in _STABLEHLO_OP.finditer(stablehlo)),
        compiled_ops=tuple(
            match["op"]
            for line in entry
            if (match := _HLO_OPCODE.search(line)) and match["op"] != "parameter"
        ),
    )


def _excerpt(lines: Sequence[str], n_lines: int, width: int) -> str:
    """The first `n_lines` of `lines`, each cut to `width` characters, then '…' if any were left."""
    shown = [line if len(line) <= width else line[: width - 1] + "…" for line in lines[:n_lines]]
    return "\n".join(shown + (["…"] if len(lines) > n_lines else []))


def _first_names(names: Sequence[str], n: int = 4) -> str:
    return "\n".join([*names[:n], *(["…"] if len(names) > n else [])])


def plot_jit_pipeline(pipeline: JitPipeline, *, ax=None):
    """Draws `pipeline` (from `jit_pipeline`): a call looks up the cache; a hit runs the stored
    executable, a miss makes tracers, runs the Python function on them into a jaxpr, lowers it to
    StableHLO and compiles it. Each stage shows what it produced. Returns the axes."""
    ax = _new_axes(ax, (10, 4.6))
    ax.set_xlim(0, 12.1)
    ax.set_ylim(0.0, 5.3)
    if pipeline.arg_names is None:
        names, args = "...", "\n".join(pipeline.abstract_args)
    else:
        names = ", ".join(pipeline.arg_names)
        args = "\n".join(f"{name}: {kind}" for name, kind in zip(pipeline.arg_names, pipeline.abstract_args))
    row, size, step = 1.2, (1.85, 2.1), 2.5
    jaxpr_head = [line.strip() for line in pipeline.jaxpr_lines[1:-1]]
    compiled = f"{len(pipeline.compiled_ops)} instruction(s)\n{pipeline.fusions} fused kernel(s)"
    stages = [
        ("tracers", f"{args}\n\nshape and dtype,\nno values", "trace", False),
        ("Python function", f"{pipeline.name}({names})\nruns once;\neach jnp call\nis recorded", "python", False),
        ("jaxpr", f"{len(pipeline.primitives)} equations\n\n{_excerpt(jaxpr_head, 4, 21)}", "jaxpr", True),
        ("StableHLO", f"{len(pipeline.stablehlo_ops)} operations\n\n{_first_names(pipeline.stablehlo_ops)}",
         "hlo", True),
        ("XLA executable", f"{compiled}\n\n{_first_names(pipeline.compiled_ops)}", "run", True),
    ]
    centers = [1.05 + step * k for k in range(len(stages))]
    for x, (title, body, color, mono) in zip(centers, stages):
        _box(ax, (x, row), size, title, body, color=BOX_COLORS[color], mono_body=mono)
    for x0, x1, label in zip(centers, centers[1:], ["call", "record", "lower", "compile"]):
        _arrow(ax, (x0 + size[0] / 2, row + 0.6), (x1 - size[0] / 2, row + 0.6), label)

    top, edge = 4.6, row + size[1] / 2
    _box(ax, (centers[0], top), (2.0, 1.0), "call", f"jit({pipeline.name})({names})")
    _box(ax, (centers[2] - 0.6, top), (3.2, 1.0), "cache lookup",
         "key: argument shapes and dtypes,\nstatic arguments, the function", color="#f4f4f4")
    _box(ax, (centers[-1], top), (2.0, 1.0), "run", "the stored\nexecutable", color=BOX_COLORS["run"])
    _arrow(ax, (centers[0] + 1.0, top), (centers[2] - 2.2, top))
    hit, miss = "#2a7a2a", "#b03a2e"
    _arrow(ax, (centers[2] + 1.0, top), (centers[-1] - 1.0, top), "hit: no tracing, no compiling", color=hit)
    _arrow(ax, (centers[2] - 1.6, top - 0.5), (centers[0] + 0.4, edge), "miss", label_offset=(0.45, -0.1),
           color=miss)
    _arrow(ax, (centers[-1], edge), (centers[-1], top - 0.5), "store", label_offset=(-0.35, -0.1))
    return ax


# --- vmap: which axis of each input is mapped, what one call sees, how outputs stack -------------


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
    if any(axis is not None and (isinstance(axis, bool) or not isinstance(axis, int)) for axis in axes):
        raise TypeError(f"batching_layout draws an int or None per argument, got in_axes={in_axes!r}")
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
        raise ValueError("batching_layout needs at least one mapped argument (an in_axes entry that is not None)")
    out = jax.vmap(fun, in_axes=axes, out_axes=out_axes)(*arrays)
    if not isinstance(out, jax.Array) or out.ndim > 2:
        raise ValueError("batching_layout draws functions that return one array of at most 2 dimensions")
    slices = [array if axis is None else jax.numpy.take(array, 0, axis=axis) for array, axis in zip(arrays, axes)]
    names = names or _parameter_names(fun, len(arrays)) or tuple(f"arg{i}" for i in range(len(arrays)))
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
    for (i, j) in np.ndindex(rows, cols):
        ax.add_patch(
            Rectangle((corner[0] + j * CELL, corner[1] - (i + 1) * CELL), CELL, CELL,
                      facecolor=colors[i, j], edgecolor="white", linewidth=1.5)
        )
    return cols * CELL, rows * CELL


def _labelled_cells(ax, corner, colors: np.ndarray, label: str, **text_style):
    """`_cells`, with `label` just above the grid's top-left corner."""
    _cells(ax, corner, colors)
    ax.text(corner[0], corner[1] + 0.06, label, fontsize=8, va="bottom", linespacing=1.2, **text_style)


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
            colors[i, j] = _cell_color(along)
    return colors




def _first_slice(shape: tuple[int, ...], axis: int | None, *, column: bool) -> np.ndarray:
    """The colours of what call i = 0 sees: grey for a shared input, batch colour 0 otherwise."""
    colors = _batch_colors(shape, None, column=column)
    if axis is not None:
        colors[:] = _cell_color(0)
    return colors


def _slice_text(name: str, axis: int | None, ndim: int) -> str:
    if axis is None:
        return name
    return f"{name}[" + ", ".join("i" if k == axis else ":" for k in range(ndim)).removesuffix(", :") + "]"


def _shape_text(shape: tuple[int, ...]) -> str:
    return "(" + ", ".join(map(str, shape)) + ("," if len(shape) == 1 else "") + ")"


def plot_batching(layout: BatchingLayout, *, ax=None, title: str | None = None):
    """Draws `layout` (from `batching_layout`) in three columns: the inputs with their mapped axis
    in colour (one colour per batch index, grey for a shared input); one call of the function
    with the slices it sees for i = 0; the output with the results stacked along `out_axes`.
    Returns the axes."""
    ax = _new_axes(ax, (8, 3))
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
    for name, shape, axis, colors, piece in zip(layout.names, layout.in_shapes, layout.in_axes, inputs, pieces):
        how = "shared: in_axes None" if axis is None else f"in_axes {axis}"
        _labelled_cells(ax, (0.0, y), colors, f"{name} {_shape_text(shape)}\n{how}")
        _labelled_cells(ax, (middle, y), piece, _slice_text(name, axis, len(shape)), family=MONO)
        y -= colors.shape[0] * CELL + gap
    center = height / 2
    _arrow(ax, (left + 0.15, center), (middle - 0.2, center), "slice i")

    piece_end = middle + max(piece.shape[1] * CELL for piece in pieces)
    out_piece = _first_slice(layout.slice_out_shape, 0, column=layout.out_axis == 1 and len(layout.out_shape) == 2)
    result_x = piece_end + 1.5
    _arrow(ax, (piece_end + 0.15, center), (result_x - 0.2, center), layout.name)
    _labelled_cells(ax, (result_x, center + out_piece.shape[0] * CELL / 2), out_piece,
                    f"result i\n{_shape_text(layout.slice_out_shape)}")
    calls = f"one call per i = 0, …, {layout.batch_size - 1}\n(traced once, not a loop)"
    ax.text((middle + result_x) / 2, -0.1, calls, ha="center", va="top", fontsize=8, style="italic")

    result_end = result_x + out_piece.shape[1] * CELL
    out_x = result_end + 1.3
    _arrow(ax, (result_end + 0.15, center), (out_x - 0.2, center), "stack")
    output = _batch_colors(layout.out_shape, layout.out_axis)
    _labelled_cells(ax, (out_x, center + output.shape[0] * CELL / 2), output,
                    f"output {_shape_text(layout.out_shape)}\nout_axes {layout.out_axis}")
    ax.set_xlim(-0.1, out_x + max(output.shape[1] * CELL, 1.4) + 0.1)
    ax.set_ylim(-0.75, height + 0.65)
    ax.set_aspect("equal")
    if title:
        ax.set_title(title, fontsize=9, family=MONO)
    return ax


# --- pytrees: a container -> leaves + treedef (with aux data) -> back -----------------------------


@dataclass(frozen=True)
class TreeNode:
    """One node of a pytree as flatten sees it: a leaf (with its index in the flat list), None
    (a node without leaves), or a container with its aux data and keyed children."""

    kind: str  # "leaf", "none" or "container"
    label: str
    leaf_index: int | None = None
    aux: Any = None
    children: tuple[tuple[str, "TreeNode"], ...] = ()


@dataclass(frozen=True)
class FlattenLayout:
    """A pytree, its leaves in flattening order, and its treedef."""

    root: TreeNode
    leaves: tuple[str, ...]
    treedef: str


def _leaf_label(leaf) -> str:
    if isinstance(leaf, (jax.Array, np.ndarray)):
        return str(jax.typeof(leaf)) if isinstance(leaf, jax.Array) else f"{leaf.dtype}{list(leaf.shape)}"
    return textwrap.shorten(repr(leaf), 14, placeholder="…")


def _tree_node(tree, leaf_numbers: Iterator[int]) -> TreeNode:
    """Builds the TreeNode of `tree`, numbering its leaves from `leaf_numbers` as it meets them."""
    if tree is None:
        return TreeNode("none", "None")
    treedef = jax.tree.structure(tree)
    if treedef.num_nodes == 1 and treedef.num_leaves == 1:  # ([] is one node too, with no leaf)
        return TreeNode("leaf", _leaf_label(tree), leaf_index=next(leaf_numbers))
    node_type, aux = treedef.node_data()
    # One level down: every strict subtree of `tree` counts as a leaf, so None children stay.
    children, _ = jax.tree_util.tree_flatten_with_path(tree, is_leaf=lambda node: node is not tree)
    return TreeNode(
        "container",
        node_type.__name__,
        aux=aux,
        children=tuple((jax.tree_util.keystr(path), _tree_node(child, leaf_numbers)) for path, child in children),
    )


def flatten_layout(tree) -> FlattenLayout:
    """What `jax.tree.flatten(tree)` does, node by node: which leaf lands at which index, the aux
    data each container keeps in the treedef, and the treedef itself."""
    leaves, treedef = jax.tree.flatten(tree)
    root = _tree_node(tree, itertools.count())
    return FlattenLayout(root=root, leaves=tuple(_leaf_label(leaf) for leaf in leaves), treedef=str(treedef))


def _place(node: TreeNode, depth: int, next_x: list[float], positions: list) -> float:
    """Lays the tree out: terminals left to right in order, parents centred over their children."""
    if not node.children:
        x = next_x[0]
        next_x[0] += TREE_SPACING
    else:
        xs = [_place(child, depth + 1, next_x, positions) for _, child in node.children]
        x = (xs[0] + xs[-1]) / 2
    positions.append((node, x, depth))
    return x


TREE_SPACING, TREE_DEPTH = 1.55, 1.2


def _aux_text(aux) -> str:
    return "aux: " + textwrap.shorten(repr(aux), 22, placeholder="…")


def _node_style(node: TreeNode) -> tuple[str, tuple | str, str]:
    """The text, fill colour and edge colour of one node of the drawn tree."""
    if node.kind == "leaf":
        return f"{node.leaf_index}: {node.label}", _light(_color(node.leaf_index)), "#444444"
    if node.kind == "container":
        return node.label if node.children else f"{node.label}\n(empty)", "white", "#444444"
    return "None\n(no leaf)", "white", "#aaaaaa"


def _leaf_box(ax, xy, text: str, color, **style):
    ax.text(*xy, text, va="center", fontsize=8, family=MONO, linespacing=1.1,
            bbox=dict(boxstyle="round,pad=0.3", facecolor=color, edgecolor=style.pop("edge", "#444444")), **style)


def plot_flatten(layout: FlattenLayout, *, ax=None):
    """Draws `layout` (from `flatten_layout`): the tree with each leaf in its colour and number,
    each container with its aux data; then the flat list of leaves and the treedef, with the
    flatten and unflatten arrows between them. Returns the axes."""
    ax = _new_axes(ax, (10, 4.6))
    positions: list = []
    _place(layout.root, 0, [0.0], positions)
    xs = {id(node): x for node, x, _ in positions}
    top = 0.0
    for node, x, depth in positions:
        y = top - depth * TREE_DEPTH
        for key, child in node.children:
            child_x, child_y = xs[id(child)], y - TREE_DEPTH
            ax.plot([x, child_x], [y - 0.22, child_y + 0.22], color="#888888", linewidth=1, zorder=0)
            ax.text(x + 0.55 * (child_x - x), y - 0.55 * TREE_DEPTH, key, fontsize=7.5, family=MONO,
                    ha="center", va="center", backgroundcolor="white")
        text, color, edge = _node_style(node)
        _leaf_box(ax, (x, y), text, color, edge=edge, ha="center")
        if node.aux is not None:
            ax.text(x + 0.4, y + 0.12, _aux_text(node.aux), ha="left", va="bottom", fontsize=7.5, color="#555555")
    bottom = top - TREE_DEPTH * max(depth for *_, depth in positions)
    width = max(x for _, x, _ in positions) + 0.9
    right = width + 2.9
    ax.text(right, top + 0.3, "leaves: a list, in flattening order", fontsize=9, fontweight="bold", va="bottom")
    for index, label in enumerate(layout.leaves):
        _leaf_box(ax, (right, top - 0.45 * index), f"{index}: {label}", _light(_color(index)), ha="left")
    treedef_top = top - 0.45 * len(layout.leaves) - 0.3
    ax.text(right, treedef_top, "treedef: the structure, * for each leaf;\ncontainers keep their aux data",
            fontsize=9, fontweight="bold", va="top")
    treedef = "\n".join(textwrap.wrap(layout.treedef, 46))
    ax.text(right, treedef_top - 0.7, treedef, fontsize=8, family=MONO, va="top")
    _arrow(ax, (width, top - 0.2), (right - 0.25, top - 0.2), "jax.tree.flatten")
    _arrow(ax, (right - 0.25, treedef_top - 0.9), (width, treedef_top - 0.9),
           "jax.tree.unflatten(treedef, leaves)", label_offset=(0.0, -0.4))
    ax.set_xlim(-0.8, right + 4.8)
    ax.set_ylim(min(bottom, treedef_top - 1.6) - 0.4, top + 0.8)
    return ax


# --- sharding: which device holds which block of an array ----------------------------------------


@dataclass(frozen=True)
class ShardBlock:
    """One block of an array and the devices that hold a copy of it (several: replicated)."""

    rows: tuple[int, int]
    cols: tuple[int, int]
    device_ids: tuple[int, ...]


def _sharding_and_shape(x, shape):
    if isinstance(x, jax.sharding.Sharding):
        if shape is None:
            raise ValueError("shard_blocks needs `shape` when given a sharding instead of an array")
        return x, tuple(shape)
    if isinstance(x, jax.Array):
        return x.sharding, x.shape if shape is None else tuple(shape)
    raise TypeError(f"shard_blocks takes a jax.Array or a jax.sharding.Sharding, got {type(x).__name__}")


def shard_blocks(x, *, shape: Sequence[int] | None = None) -> list[ShardBlock]:
    """The blocks of a 1- or 2-D array (or of `shape` under a sharding), read from
    `sharding.devices_indices_map(shape)`, each with the ids of the devices holding it.

    A 1-D array is one row. Blocks come in row-major order of their corners.

    Raises:
        TypeError: `x` is neither a `jax.Array` nor a `Sharding`.
        ValueError: the shape has 0 or more than 2 dimensions, or a sharding came without `shape`.
    """
    sharding, shape = _sharding_and_shape(x, shape)
    if len(shape) not in (1, 2):
        raise ValueError(f"shard_blocks draws 1- or 2-D arrays, got shape {shape}")
    grid_shape = (1, *shape) if len(shape) == 1 else shape
    holders: dict[tuple, list[int]] = {}
    for device, index in sharding.devices_indices_map(tuple(shape)).items():
        index = (slice(None), *index) if len(shape) == 1 else index
        bounds = tuple(piece.indices(size)[:2] for piece, size in zip(index, grid_shape))
        holders.setdefault(bounds, []).append(device.id)
    return [ShardBlock(rows, cols, tuple(sorted(ids))) for (rows, cols), ids in sorted(holders.items())]


def _mesh_text(mesh) -> str:
    return "mesh (" + ", ".join(f"{name}: {size}" for name, size in mesh.shape.items()) + ")"


def _describe_sharding(sharding, shape: tuple[int, ...]) -> str:
    if isinstance(sharding, jax.sharding.NamedSharding):
        return f"{_shape_text(shape)}, {sharding.spec}\non {_mesh_text(sharding.mesh)}"
    return f"{_shape_text(shape)}, {type(sharding).__name__}"


def plot_sharding(x, *, shape: Sequence[int] | None = None, ax=None, title: str | None = None):
    """Draws the blocks of `x` (a `jax.Array`, or a sharding and a `shape`) as rectangles in the
    colour of the device holding them, labelled with its id; a block held by several devices is
    grey and lists them all. Returns the axes."""
    sharding, shape = _sharding_and_shape(x, shape)
    blocks = shard_blocks(sharding, shape=shape)
    ax = _new_axes(ax, (4, 3))
    n_rows, n_cols = (1, *shape) if len(shape) == 1 else shape
    for block in blocks:
        (r0, r1), (c0, c1) = block.rows, block.cols
        single = len(block.device_ids) == 1
        color = _cell_color(block.device_ids[0]) if single else SHARED_COLOR
        ax.add_patch(
            Rectangle((c0, n_rows - r1), c1 - c0, r1 - r0, facecolor=color, edgecolor="white", linewidth=2)
        )
        ids = ", ".join(map(str, block.device_ids))
        label = f"device {ids}" if single else f"copies on\ndevices {ids}"
        if len(shape) == 2:
            label += f"\nrows {r0}:{r1}\ncols {c0}:{c1}"
        else:
            label += f"\n[{c0}:{c1}]"
        ax.text((c0 + c1) / 2, n_rows - (r0 + r1) / 2, label, ha="center", va="center", fontsize=7.5)
        if not single:
            _device_chips(ax, (c0, n_rows - r0), block.device_ids, size=(0.05 * n_cols, 0.06 * n_rows))
    ax.set_xlim(0, n_cols)
    ax.set_ylim(0, n_rows)
    ax.set_title(title or _describe_sharding(sharding, tuple(shape)), fontsize=8.5)
    return ax


def _device_chips(ax, corner, device_ids: Sequence[int], *, size: tuple[float, float]):
    """Small squares in the devices' colours along the top-left edge of a replicated block;
    `size` is a chip's width and height in data units."""
    width, height = size
    for k, device_id in enumerate(device_ids):
        chip_corner = (corner[0] + 0.3 * width + 1.2 * width * k, corner[1] - 1.3 * height)
        ax.add_patch(Rectangle(chip_corner, width, height,
                               facecolor=_cell_color(device_id), edgecolor="white", linewidth=0.5))


def plot_mesh(mesh: jax.sharding.Mesh, *, ax=None):
    """Draws a 1- or 2-D mesh: its devices as a grid, coloured as in `plot_sharding`, with the
    axis names along the sides. Returns the axes."""
    if not isinstance(mesh, jax.sharding.Mesh):
        raise TypeError(f"plot_mesh takes a jax.sharding.Mesh, got {type(mesh).__name__}")
    devices = np.asarray(mesh.devices)
    if devices.ndim not in (1, 2):
        raise ValueError(f"plot_mesh draws 1- or 2-D meshes, got {devices.ndim} axes")
    ax = _new_axes(ax, (3, 3))
    grid = devices.reshape(-1, 1) if devices.ndim == 1 else devices
    n_rows, n_cols = grid.shape
    for (i, j), device in np.ndenumerate(grid):
        ax.add_patch(Rectangle((j, n_rows - i - 1), 1, 1, facecolor=_cell_color(device.id),
                               edgecolor="white", linewidth=2))
        ax.text(j + 0.5, n_rows - i - 0.5, f"device\n{device.id}", ha="center", va="center", fontsize=8)
    names = mesh.axis_names
    ax.text(-0.15, n_rows / 2, f"{names[0]} →", rotation=270, ha="right", va="center", fontsize=9, family=MONO)
    if len(names) == 2:
        ax.text(n_cols / 2, n_rows + 0.1, f"{names[1]} →", ha="center", va="bottom", fontsize=9, family=MONO)
    ax.set_xlim(-0.6, n_cols + 0.1)
    ax.set_ylim(-0.1, n_rows + 0.6)
    ax.set_aspect("equal")
    ax.set_title(_mesh_text(mesh), fontsize=8.5)
    return ax
