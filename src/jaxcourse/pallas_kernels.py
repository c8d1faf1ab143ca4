"""The course's Pallas kernels: small ones that the Pallas chapter takes apart, and the one that
fuses the elementwise work of the case study's level-5 iteration into one pass over (n, p) blocks.

Every kernel runs in interpret mode unless `COMPILE_ENV` asks for compiled kernels on a GPU or
TPU (`interpret_mode`): a CPU supports nothing else, and the course has not yet run its kernels
compiled on any accelerator. Pallas keeps its blocks' shapes static, so block sizes are arguments
with defaults, never traced values.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import NamedTuple

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu

COMPILE_ENV = "JAXCOURSE_PALLAS_COMPILE"
"""Set to "1" to compile the kernels on a GPU or TPU instead of interpreting them."""


def interpret_mode() -> bool:
    """Whether `pl.pallas_call` runs its kernel in interpret mode here.

    Always on a CPU, where compiled Pallas kernels do not exist (`ValueError: Only interpret mode
    is supported on CPU backend.`). On a GPU or TPU too, unless the environment variable
    `COMPILE_ENV` is "1": the course's kernels have only been run interpreted so far, and a
    compiled kernel needs a backend that supports its blocks (Mosaic GPU targets Hopper and
    newer; Colab's T4 is older), so a learner's notebook must not depend on it.
    """
    if jax.default_backend() == "cpu":
        return True
    return os.environ.get(COMPILE_ENV) != "1"


def _check_matrix(name: str, x) -> None:
    if jnp.ndim(x) != 2:
        raise ValueError(f"{name} must be a 2-D array, got shape {jnp.shape(x)}.")


def block_grid(shape: tuple[int, ...], block: tuple[int, ...]) -> tuple[int, ...]:
    """The grid that covers an array of `shape` with blocks of `block`: one step per block,
    the edge blocks included (`pl.cdiv`, division rounded up)."""
    return tuple(pl.cdiv(size, width) for size, width in zip(shape, block))


# --- The chapter's first kernel: elementwise, on a 2-D grid ---------------------------------------


def _scale_add_kernel(x_ref, y_ref, out_ref):
    out_ref[...] = 2.0 * x_ref[...] + y_ref[...]


def scale_add(x: jax.Array, y: jax.Array, *, block: tuple[int, int] = (8, 128)) -> jax.Array:
    """`2 x + y` for two `(m, n)` arrays, one `block` of each per step of a 2-D grid."""
    _check_matrix("x", x)
    if jnp.shape(y) != jnp.shape(x):
        raise ValueError(f"x and y must have one shape, got {jnp.shape(x)} and {jnp.shape(y)}.")
    spec = pl.BlockSpec(block, lambda i, j: (i, j))  # block indices, not element offsets
    return pl.pallas_call(
        _scale_add_kernel,
        out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype),
        grid=block_grid(x.shape, block),
        in_specs=[spec, spec],
        out_specs=spec,
        interpret=interpret_mode(),
    )(x, y)


# --- Accumulating over a reduction axis, with the edge blocks masked -------------------------------


def _row_sums_kernel(n_cols, x_ref, out_ref, acc_ref):
    k = pl.program_id(1)  # the step along the reduction axis, the last of the grid

    @pl.when(k == 0)
    def _start():
        acc_ref[...] = jnp.zeros_like(acc_ref)

    block = x_ref[...]
    cols = k * block.shape[1] + jax.lax.broadcasted_iota(jnp.int32, block.shape, 1)
    acc_ref[...] += jnp.sum(jnp.where(cols < n_cols, block, 0.0), axis=1)

    @pl.when(k == pl.num_programs(1) - 1)
    def _finish():
        out_ref[...] = acc_ref[...]


def row_sums(x: jax.Array, *, block: tuple[int, int] = (8, 128)) -> jax.Array:
    """`jnp.sum(x, axis=1)` for a float `(m, n)` array: a grid over (row blocks, column blocks)
    whose second axis is the reduction. A scratch accumulator of one row block is zeroed at the
    first column block (`pl.when`), added to at each, and written out at the last; the columns
    past the edge of the last column block are masked out."""
    _check_matrix("x", x)
    n_rows, n_cols = x.shape

    def kernel(x_ref, out_ref, acc_ref):
        _row_sums_kernel(n_cols, x_ref, out_ref, acc_ref)

    return pl.pallas_call(
        kernel,
        out_shape=jax.ShapeDtypeStruct((n_rows,), x.dtype),
        grid=block_grid(x.shape, block),
        in_specs=[pl.BlockSpec(block, lambda i, k: (i, k))],
        out_specs=pl.BlockSpec((block[0],), lambda i, k: (i,)),  # the same block for every k
        scratch_shapes=[pltpu.VMEM((block[0],), jnp.float32)],
        interpret=interpret_mode(),
    )(x)


# --- The case study: level 5's elementwise work in one pass ----------------------------------------

PLN_BLOCK = (32, 128)
"""Rows and columns of the blocks of `pln_pass`: oaks, 116 x 114, takes a grid of 4 x 1 blocks,
the last row block and the only column block both past the array's edge."""


class PLNPass(NamedTuple):
    """What `pln_pass` returns.

    Attributes:
        poisson_partials: `(row blocks, 1, p)`: the Poisson sum of each row block, by column;
            their total is `profiled.poisson_sum`.
        grad_mean, grad_sqrt_var: dJ/dM and dJ/dS, `(n, p)` each.
        curvature_mean, curvature_sqrt_var: the diagonal curvatures of `profiled.Evaluation`.
    """

    poisson_partials: jax.Array
    grad_mean: jax.Array
    grad_sqrt_var: jax.Array
    curvature_mean: jax.Array
    curvature_sqrt_var: jax.Array


def _pln_kernel(
    n_rows,
    counts_ref,
    offsets_ref,
    shifted_ref,
    mean_ref,
    sqrt_var_ref,
    residual_precision_ref,
    diag_precision_ref,
    poisson_ref,
    grad_mean_ref,
    grad_sqrt_var_ref,
    curvature_mean_ref,
    curvature_sqrt_var_ref,
):
    counts, mean, sqrt_var = counts_ref[...], mean_ref[...], sqrt_var_ref[...]
    diag_precision = diag_precision_ref[...]  # (1, block columns): broadcast over the rows
    variance = sqrt_var * sqrt_var
    rate = jnp.exp(offsets_ref[...] + mean + 0.5 * variance)
    grad_mean_ref[...] = counts - rate - residual_precision_ref[...]
    inverse = 1.0 / sqrt_var
    grad_sqrt_var_ref[...] = inverse - sqrt_var * (rate + diag_precision)
    curvature_mean_ref[...] = rate + diag_precision
    # profiled.evaluate's form, rounded alike (it is written so for XLA's sake, see there)
    curvature_sqrt_var_ref[...] = (
        inverse * inverse + rate + sqrt_var * (rate * sqrt_var) + diag_precision
    )
    terms = counts * (mean + shifted_ref[...]) + counts - rate + jnp.log(jnp.abs(sqrt_var))
    # Rows past the edge of the last row block hold padding (NaN in interpret mode, anything
    # on hardware): leave them out of the sum. Columns past the edge are dropped on writing.
    rows = pl.program_id(0) * terms.shape[0] + jax.lax.broadcasted_iota(jnp.int32, terms.shape, 0)
    poisson_ref[...] = jnp.sum(jnp.where(rows < n_rows, terms, 0.0), axis=0, keepdims=True)


def pln_pass(
    counts,
    offsets,
    shifted_offsets,
    mean,
    sqrt_var,
    residual_precision,
    diag_precision,
    *,
    block: tuple[int, int] = PLN_BLOCK,
) -> PLNPass:
    """Everything level 5's evaluation computes outside its matrix products, in one pass over
    `(n, p)` blocks: the rates A = exp(O + M + S^2/2), the Poisson sum of the ELBO by row block,
    and the gradient and curvature in M and S (`profiled.evaluate` has the formulas).

    Args:
        counts, offsets, shifted_offsets: Y, O and O - log Y of a `profiled.Problem`, `(n, p)`.
        mean, sqrt_var: M and S, `(n, p)`.
        residual_precision: `(M - XB) Omega`, `(n, p)`, the one matrix product the gradient needs.
        diag_precision: the diagonal of Omega, `(p,)`.
        block: the rows and columns of a block (static).

    Returns:
        A `PLNPass`. Each `(n, p)` input is read once and each output written once.
    """
    for name, array in (("counts", counts), ("mean", mean), ("sqrt_var", sqrt_var)):
        _check_matrix(name, array)
    n_rows, n_cols = counts.shape
    grid = block_grid(counts.shape, block)
    tile = pl.BlockSpec(block, lambda i, j: (i, j))
    dtype = mean.dtype
    matrix = jax.ShapeDtypeStruct((n_rows, n_cols), dtype)

    def kernel(*refs):
        _pln_kernel(n_rows, *refs)

    outputs = pl.pallas_call(
        kernel,
        out_shape=(jax.ShapeDtypeStruct((grid[0], 1, n_cols), dtype), *[matrix] * 4),
        grid=grid,
        in_specs=[tile] * 6 + [pl.BlockSpec((1, block[1]), lambda i, j: (0, j))],
        out_specs=(pl.BlockSpec((None, 1, block[1]), lambda i, j: (i, 0, j)), *[tile] * 4),
        interpret=interpret_mode(),
    )(
        counts,
        offsets,
        shifted_offsets,
        mean,
        sqrt_var,
        residual_precision,
        jnp.reshape(diag_precision, (1, n_cols)),
    )
    return PLNPass(*outputs)


# --- Reading a pallas_call back from a traced program ------------------------------------------------


class BlockMap(NamedTuple):
    """How one operand of a `pallas_call` is cut into blocks.

    Attributes:
        array_shape: the whole operand's shape.
        block_shape: one block's shape; None where the BlockSpec squeezes a dimension away.
        index_map: grid indices -> the block's index along each dimension (ints): the traced
            index map of the BlockSpec, evaluated.
    """

    array_shape: tuple[int, ...]
    block_shape: tuple[int | None, ...]
    index_map: Callable[..., tuple[int, ...]]


class CallLayout(NamedTuple):
    """What a traced `pl.pallas_call` says about its grid and blocks (`pallas_call_layouts`).

    Attributes:
        grid: the grid's shape.
        inputs, outputs: one `BlockMap` per input and per output.
        scratch_shapes: the shape of each scratch buffer.
        input_output_aliases: (input index, output index) pairs.
        dimension_semantics: the compiler parameters' semantics of each grid axis
            ("parallel", "arbitrary"), None where none were given.
    """

    grid: tuple[int, ...]
    inputs: tuple[BlockMap, ...]
    outputs: tuple[BlockMap, ...]
    scratch_shapes: tuple[tuple[int, ...], ...]
    input_output_aliases: tuple[tuple[int, int], ...]
    dimension_semantics: tuple[str, ...] | None


def _block_size(dim) -> int | None:
    size = getattr(dim, "block_size", dim)
    return size if isinstance(size, int) else None


def _evaluated(closed_jaxpr) -> Callable[..., tuple[int, ...]]:
    def index_map(*grid_indices):
        values = jax.core.eval_jaxpr(closed_jaxpr.jaxpr, closed_jaxpr.consts, *grid_indices)
        return tuple(int(value) for value in values)

    return index_map


def _layout(eqn) -> CallLayout:
    mapping = eqn.params["grid_mapping"]
    blocks = tuple(
        BlockMap(
            tuple(block.array_aval.shape),
            tuple(_block_size(dim) for dim in block.block_shape),
            _evaluated(block.index_map_jaxpr),
        )
        for block in mapping.block_mappings
    )
    semantics = getattr(eqn.params.get("compiler_params"), "dimension_semantics", None)
    return CallLayout(
        grid=tuple(int(size) for size in mapping.grid),
        inputs=blocks[: mapping.num_inputs],
        outputs=blocks[mapping.num_inputs :],
        scratch_shapes=tuple(tuple(aval.shape) for aval in mapping.scratch_avals),
        input_output_aliases=tuple(tuple(pair) for pair in eqn.params["input_output_aliases"]),
        dimension_semantics=None if semantics is None else tuple(map(str, semantics)),
    )


def _pallas_equations(jaxpr):
    for eqn in jaxpr.eqns:
        if eqn.primitive.name == "pallas_call":
            yield eqn
            continue  # the kernel's own body holds no further pallas_call
        for value in eqn.params.values():
            for item in value if isinstance(value, (tuple, list)) else (value,):
                inner = getattr(item, "jaxpr", item)
                if hasattr(inner, "eqns"):
                    yield from _pallas_equations(inner)


def pallas_call_layouts(fn: Callable, *args) -> list[CallLayout]:
    """The grid and blocks of every `pl.pallas_call` in `fn(*args)`, in the order they run,
    read from `jax.make_jaxpr(fn)(*args)`, nested programs (jit, scan, ...) included."""
    closed = jax.make_jaxpr(fn)(*args)
    return [_layout(eqn) for eqn in _pallas_equations(closed.jaxpr)]
