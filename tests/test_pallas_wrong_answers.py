"""The Pallas chapter's checkers reject typical wrong answers with the hint that names the
mistake: a jnp expression, an index map that returns element offsets, a grid that misses the
edge block, a missing mask, a missing pl.when initialisation, a reduction axis marked parallel,
an alias of the wrong input. Each wrong answer is the reference with one thing changed."""

import functools

import jax
import jax.numpy as jnp
import pytest
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu
from wrong_answers import assert_fails_with

from jaxcourse.exercises.pallas import (
    check_add_in_place,
    check_add_vectors,
    check_block_sums,
    check_exp_column_sums,
    check_matmul,
    check_row_softmax,
)

# Exercises 1 and 6: a vector add, on a grid, maybe aliased -------------------------------------------


def add_kernel(x_ref, y_ref, out_ref):
    out_ref[...] = x_ref[...] + y_ref[...]


def subtract_kernel(x_ref, y_ref, out_ref):
    out_ref[...] = x_ref[...] - y_ref[...]


def vector_add(
    x,
    y,
    *,
    kernel=add_kernel,
    block=128,
    grid=None,
    index_map=lambda i: (i,),
    aliases=None,
    interpret=True,
):
    spec = pl.BlockSpec((block,), index_map)
    return pl.pallas_call(
        kernel,
        out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype),
        grid=grid(x.shape[0]) if grid else (pl.cdiv(x.shape[0], block),),
        in_specs=[spec, spec],
        out_specs=spec,
        input_output_aliases=aliases or {},
        interpret=interpret,
    )(x, y)


@pytest.mark.slow_after_first
@pytest.mark.parametrize(
    "wrong, hint",
    [
        (lambda x, y: x + y, "no pl.pallas_call"),
        (functools.partial(vector_add, index_map=lambda i: (i * 128,)), "element offsets"),
        (functools.partial(vector_add, grid=lambda n: (n // 128,)), "pl.cdiv"),
        (functools.partial(vector_add, block=256), "block shape (256,)"),
        (functools.partial(vector_add, kernel=subtract_kernel), "differs from the reference"),
        (functools.partial(vector_add, interpret=False), "interpret=interpret_mode()"),
    ],
)
def test_add_vectors_wrong_answers_fail(wrong, hint):
    assert_fails_with(check_add_vectors(wrong), hint)


@pytest.mark.parametrize(
    "wrong, hint",
    [
        (vector_add, "input_output_aliases are {}"),
        (functools.partial(vector_add, aliases={1: 0}), "aliases input 1, y"),
        (
            functools.partial(vector_add, aliases={0: 0}, kernel=subtract_kernel),
            "differs from the reference",
        ),
        (lambda x, y: x + y, "no pl.pallas_call"),
        (
            functools.partial(vector_add, aliases={0: 0}, index_map=lambda i: (128 * i,)),
            "element offsets",
        ),
    ],
)
def test_add_in_place_wrong_answers_fail(wrong, hint):
    assert_fails_with(check_add_in_place(wrong), hint)


# Exercise 2: a row-wise softmax ---------------------------------------------------------------------


def softmax_kernel(x_ref, out_ref, *, axis=1, stable=True):
    row = x_ref[...]
    if stable:
        row = row - jnp.max(row, axis=axis, keepdims=True)
    e = jnp.exp(row)
    out_ref[...] = e / jnp.sum(e, axis=axis, keepdims=True)


def row_softmax(x, *, kernel=softmax_kernel, rows_per_block=1, index_map=lambda i: (i, 0)):
    m, n = x.shape
    spec = pl.BlockSpec((rows_per_block, n), index_map)
    return pl.pallas_call(
        kernel,
        out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype),
        grid=(pl.cdiv(m, rows_per_block),),
        in_specs=[spec],
        out_specs=spec,
        interpret=True,
    )(x)


@pytest.mark.slow_after_first
@pytest.mark.parametrize(
    "wrong, hint",
    [
        (
            functools.partial(row_softmax, kernel=functools.partial(softmax_kernel, stable=False)),
            "Subtract the row's max",
        ),
        (
            functools.partial(row_softmax, kernel=functools.partial(softmax_kernel, axis=0)),
            "axis=1",
        ),
        (functools.partial(row_softmax, rows_per_block=8), "the exercise asks for (1, 128)"),
        (functools.partial(row_softmax, index_map=lambda i: (0, i)), "index map of the input"),
        (lambda x: jax.nn.softmax(x, axis=1), "no pl.pallas_call"),
    ],
)
def test_row_softmax_wrong_answers_fail(wrong, hint):
    assert_fails_with(check_row_softmax(wrong), hint)


# Exercise 3: a tiled matrix product -------------------------------------------------------------------


def matmul_kernel(x_ref, y_ref, out_ref, acc_ref, *, initialise=True, accumulate=True):
    if initialise:

        @pl.when(pl.program_id(2) == 0)
        def _start():
            acc_ref[...] = jnp.zeros_like(acc_ref)

    if accumulate:
        acc_ref[...] += x_ref[...] @ y_ref[...]
    else:
        acc_ref[...] = x_ref[...] @ y_ref[...]

    @pl.when(pl.program_id(2) == pl.num_programs(2) - 1)
    def _finish():
        out_ref[...] = acc_ref[...]


def matmul(
    x, y, *, kernel=matmul_kernel, y_map=lambda i, j, kk: (kk, j), order=None, semantics=None
):
    (m, k), n = x.shape, y.shape[1]
    grid = (pl.cdiv(m, 32), pl.cdiv(n, 32), k // 32)
    x_map, out_map = (lambda i, j, kk: (i, kk)), (lambda i, j, kk: (i, j))
    if order == "k first":
        grid = (grid[2], grid[0], grid[1])
        x_map, y_map, out_map = (
            (lambda kk, i, j: (i, kk)),
            (lambda kk, i, j: (kk, j)),
            (lambda kk, i, j: (i, j)),
        )
    return pl.pallas_call(
        kernel,
        out_shape=jax.ShapeDtypeStruct((m, n), x.dtype),
        grid=grid,
        in_specs=[pl.BlockSpec((32, 32), x_map), pl.BlockSpec((32, 32), y_map)],
        out_specs=pl.BlockSpec((32, 32), out_map),
        scratch_shapes=[pltpu.VMEM((32, 32), jnp.float32)],
        compiler_params=None
        if semantics is None
        else pltpu.CompilerParams(dimension_semantics=semantics),
        interpret=True,
    )(x, y)


@pytest.mark.slow_after_first
@pytest.mark.parametrize(
    "wrong, hint",
    [
        (
            functools.partial(matmul, kernel=functools.partial(matmul_kernel, initialise=False)),
            "@pl.when(pl.program_id(2) == 0)",
        ),
        (
            functools.partial(matmul, kernel=functools.partial(matmul_kernel, accumulate=False)),
            "instead of adding",
        ),
        (functools.partial(matmul, y_map=lambda i, j, kk: (j, kk)), "index map of y"),
        (functools.partial(matmul, order="k first"), "a reduction axis goes last"),
        (
            functools.partial(matmul, semantics=("parallel", "parallel", "parallel")),
            "Mark it 'arbitrary'",
        ),
        (lambda x, y: x @ y, "no pl.pallas_call"),
    ],
)
def test_matmul_wrong_answers_fail(wrong, hint):
    assert_fails_with(check_matmul(wrong), hint)


# Exercise 4: a masked edge block ------------------------------------------------------------------


def block_sums(x, *, mask="right", out_block=1, index_map=lambda i: (i,)):
    n = x.shape[0]

    def kernel(x_ref, out_ref):
        position = jax.lax.broadcasted_iota(jnp.int32, (128,), 0)
        index = {
            "right": pl.program_id(0) * 128 + position,
            "off by one": pl.program_id(0) * 128 + position - 1,
            "no offset": position,
        }.get(mask)
        block = x_ref[...] if index is None else jnp.where(index < n, x_ref[...], 0.0)
        out_ref[...] = jnp.broadcast_to(jnp.sum(block), (out_block,))

    return pl.pallas_call(
        kernel,
        out_shape=jax.ShapeDtypeStruct((pl.cdiv(n, 128) * out_block,), x.dtype),
        grid=(pl.cdiv(n, 128),),
        in_specs=[pl.BlockSpec((128,), index_map)],
        out_specs=pl.BlockSpec((out_block,), lambda i: (i,)),
        interpret=True,
    )(x)


@pytest.mark.parametrize(
    "wrong, hint",
    [
        (functools.partial(block_sums, mask=None), "Mask it"),
        (functools.partial(block_sums, mask="off by one"), "pl.program_id(0) * 128"),
        (functools.partial(block_sums, mask="no offset"), "the block's offset plus the position"),
        (functools.partial(block_sums, out_block=128), "block shape (128,)"),
        (functools.partial(block_sums, index_map=lambda i: (128 * i,)), "element offsets"),
        (lambda x: jnp.sum(x), "no pl.pallas_call"),
    ],
)
def test_block_sums_wrong_answers_fail(wrong, hint):
    assert_fails_with(check_block_sums(wrong), hint)


# Exercise 5: a fused exp and column sum ---------------------------------------------------------


def exp_column_sums(x, *, initialise=True, mask=True, exp=True, rows_first=False):
    n, p = x.shape

    def kernel(x_ref, out_ref):
        i = pl.program_id(0 if rows_first else 1)
        if initialise:

            @pl.when(i == 0)
            def _start():
                out_ref[...] = jnp.zeros_like(out_ref)

        values = jnp.exp(x_ref[...]) if exp else x_ref[...]
        if mask:
            rows = i * 32 + jax.lax.broadcasted_iota(jnp.int32, (32, 128), 0)
            values = jnp.where(rows < n, values, 0.0)
        out_ref[...] += jnp.sum(values, axis=0)

    grid, x_map, out_map = (
        (pl.cdiv(p, 128), pl.cdiv(n, 32)),
        (lambda j, i: (i, j)),
        (lambda j, i: (j,)),
    )
    if rows_first:
        grid, x_map, out_map = grid[::-1], (lambda i, j: (i, j)), (lambda i, j: (j,))
    return pl.pallas_call(
        kernel,
        out_shape=jax.ShapeDtypeStruct((p,), x.dtype),
        grid=grid,
        in_specs=[pl.BlockSpec((32, 128), x_map)],
        out_specs=pl.BlockSpec((128,), out_map),
        interpret=True,
    )(x)


@pytest.mark.slow_after_first
@pytest.mark.parametrize(
    "wrong, hint",
    [
        (
            functools.partial(exp_column_sums, initialise=False),
            "zero it under @pl.when(pl.program_id(1) == 0)",
        ),
        (functools.partial(exp_column_sums, mask=False), "Mask those rows"),
        (functools.partial(exp_column_sums, exp=False), "apply jnp.exp"),
        (functools.partial(exp_column_sums, rows_first=True), "a reduction axis goes last"),
        (lambda x: jnp.sum(jnp.exp(x), axis=0), "no pl.pallas_call"),
    ],
)
def test_exp_column_sums_wrong_answers_fail(wrong, hint):
    assert_fails_with(check_exp_column_sums(wrong), hint)
