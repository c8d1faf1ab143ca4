"""The Pallas chapter's checkers accept the reference solutions, say 'no answer yet' to a stub,
and never pass a jnp expression (tests/test_pallas_wrong_answers.py has the wrong answers)."""

import jax
import jax.numpy as jnp
import pytest
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu

from jaxcourse import ladder
from jaxcourse.exercises import pallas as exercises
from jaxcourse.pallas_kernels import interpret_mode

CHECKERS = [
    exercises.check_add_vectors,
    exercises.check_row_softmax,
    exercises.check_matmul,
    exercises.check_block_sums,
    exercises.check_exp_column_sums,
    exercises.check_add_in_place,
]


def stub(*args):
    raise NotImplementedError


def vector_spec():
    return pl.BlockSpec((128,), lambda i: (i,))


def add_vectors(x, y, **options):
    """Exercise 1's reference; `options` go to `pl.pallas_call` (Exercise 6 aliases x to the output)."""

    def kernel(x_ref, y_ref, out_ref):
        out_ref[...] = x_ref[...] + y_ref[...]

    return pl.pallas_call(
        kernel,
        out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype),
        grid=(pl.cdiv(x.shape[0], 128),),
        in_specs=[vector_spec(), vector_spec()],
        out_specs=vector_spec(),
        interpret=interpret_mode(),
        **options,
    )(x, y)


def row_softmax(x):
    def kernel(x_ref, out_ref):
        row = x_ref[...]
        e = jnp.exp(row - jnp.max(row, axis=1, keepdims=True))
        out_ref[...] = e / jnp.sum(e, axis=1, keepdims=True)

    m, n = x.shape
    spec = pl.BlockSpec((1, n), lambda i: (i, 0))
    return pl.pallas_call(
        kernel,
        out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype),
        grid=(m,),
        in_specs=[spec],
        out_specs=spec,
        interpret=interpret_mode(),
    )(x)


def matmul(x, y):
    def kernel(x_ref, y_ref, out_ref, acc_ref):
        @pl.when(pl.program_id(2) == 0)
        def _start():
            acc_ref[...] = jnp.zeros_like(acc_ref)

        acc_ref[...] += x_ref[...] @ y_ref[...]

        @pl.when(pl.program_id(2) == pl.num_programs(2) - 1)
        def _finish():
            out_ref[...] = acc_ref[...]

    (m, k), n = x.shape, y.shape[1]
    return pl.pallas_call(
        kernel,
        out_shape=jax.ShapeDtypeStruct((m, n), x.dtype),
        grid=(pl.cdiv(m, 32), pl.cdiv(n, 32), k // 32),
        in_specs=[
            pl.BlockSpec((32, 32), lambda i, j, kk: (i, kk)),
            pl.BlockSpec((32, 32), lambda i, j, kk: (kk, j)),
        ],
        out_specs=pl.BlockSpec((32, 32), lambda i, j, kk: (i, j)),
        scratch_shapes=[pltpu.VMEM((32, 32), jnp.float32)],
        interpret=interpret_mode(),
    )(x, y)


def block_sums(x):
    n = x.shape[0]

    def kernel(x_ref, out_ref):
        index = pl.program_id(0) * 128 + jax.lax.broadcasted_iota(jnp.int32, (128,), 0)
        out_ref[...] = jnp.sum(jnp.where(index < n, x_ref[...], 0.0), keepdims=True)

    return pl.pallas_call(
        kernel,
        out_shape=jax.ShapeDtypeStruct((pl.cdiv(n, 128),), x.dtype),
        grid=(pl.cdiv(n, 128),),
        in_specs=[vector_spec()],
        out_specs=pl.BlockSpec((1,), lambda i: (i,)),
        interpret=interpret_mode(),
    )(x)


def exp_column_sums(x):
    n, p = x.shape

    def kernel(x_ref, out_ref):
        i = pl.program_id(1)

        @pl.when(i == 0)
        def _start():
            out_ref[...] = jnp.zeros_like(out_ref)

        rows = i * 32 + jax.lax.broadcasted_iota(jnp.int32, (32, 128), 0)
        out_ref[...] += jnp.sum(jnp.where(rows < n, jnp.exp(x_ref[...]), 0.0), axis=0)

    return pl.pallas_call(
        kernel,
        out_shape=jax.ShapeDtypeStruct((p,), x.dtype),
        grid=(pl.cdiv(p, 128), pl.cdiv(n, 32)),
        in_specs=[pl.BlockSpec((32, 128), lambda j, i: (i, j))],
        out_specs=pl.BlockSpec((128,), lambda j, i: (j,)),
        interpret=interpret_mode(),
    )(x)


def add_in_place(x, y):
    return add_vectors(x, y, input_output_aliases={0: 0})


REFERENCES = [add_vectors, row_softmax, matmul, block_sums, exp_column_sums, add_in_place]


@pytest.mark.slow
@pytest.mark.parametrize(
    "checker, reference", list(zip(CHECKERS, REFERENCES)), ids=lambda f: getattr(f, "__name__", "")
)
def test_the_reference_passes(checker, reference):
    verdict = checker(reference)
    assert verdict, verdict.message


@pytest.mark.slow_after_first
@pytest.mark.parametrize("checker", CHECKERS, ids=lambda c: c.__name__)
def test_a_stub_is_not_yet(checker):
    verdict = checker(stub)
    assert not verdict and "no answer yet" in verdict.message


def test_every_checker_has_a_hint_ladder():
    assert all(len(set(ladder.hints_for(checker))) >= 2 for checker in CHECKERS)
