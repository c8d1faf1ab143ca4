"""The Pallas chapter's error cell and the silent behaviours it shows, pinned: Pallas refuses to
run compiled on a CPU; in interpret mode, edge blocks read NaN and scratch starts as NaN; plain
interpret mode ignores the grid's dimension semantics where the TPU interpreter does not."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu

# More than a few seconds: left out of the fast tier (scripts/test.sh --fast).
pytestmark = pytest.mark.slow


def double(x_ref, out_ref):
    out_ref[...] = 2.0 * x_ref[...]


def test_a_compiled_kernel_on_a_cpu_raises():
    """Cell 'pl.pallas_call(double, ..., interpret=False)' of @sec-pallas-call, on the CPU device
    whatever the default backend."""
    call = pl.pallas_call(
        double, out_shape=jax.ShapeDtypeStruct((8,), jnp.float32), interpret=False
    )
    with jax.default_device(jax.devices("cpu")[0]):
        with pytest.raises(ValueError, match="Only interpret mode is supported on CPU backend"):
            call(jnp.ones(8))


def test_interpret_mode_runs_the_same_call():
    call = pl.pallas_call(double, out_shape=jax.ShapeDtypeStruct((8,), jnp.float32), interpret=True)
    np.testing.assert_array_equal(call(jnp.arange(8.0)), 2.0 * jnp.arange(8.0))


def block_sum(x_ref, out_ref):
    out_ref[...] = jnp.sum(x_ref[...], keepdims=True)


def test_an_unmasked_edge_block_sums_to_nan_in_interpret_mode():
    """@sec-pallas-edges: blocks of 4 over 10 entries; the third reads two entries past the end."""
    sums = pl.pallas_call(
        block_sum,
        out_shape=jax.ShapeDtypeStruct((3,), jnp.float32),
        grid=(3,),
        in_specs=[pl.BlockSpec((4,), lambda i: (i,))],
        out_specs=pl.BlockSpec((1,), lambda i: (i,)),
        interpret=True,
    )(jnp.arange(10.0))
    np.testing.assert_array_equal(sums[:2], [6.0, 22.0])
    assert np.isnan(sums[2])


def test_scratch_memory_starts_as_nan_in_interpret_mode():
    """@sec-pallas-reduction: an accumulator never zeroed."""

    def kernel(x_ref, out_ref, acc_ref):
        acc_ref[...] += jnp.sum(x_ref[...], axis=1)
        out_ref[...] = acc_ref[...]

    sums = pl.pallas_call(
        kernel,
        out_shape=jax.ShapeDtypeStruct((8,), jnp.float32),
        grid=(1, 2),
        in_specs=[pl.BlockSpec((8, 128), lambda i, k: (i, k))],
        out_specs=pl.BlockSpec((8,), lambda i, k: (i,)),
        scratch_shapes=[pltpu.VMEM((8,), jnp.float32)],
        interpret=True,
    )(jnp.ones((8, 256)))
    assert np.all(np.isnan(sums))


def matmul(x, y, semantics, interpret, block=32):
    def kernel(x_ref, y_ref, out_ref, acc_ref):
        @pl.when(pl.program_id(2) == 0)
        def _():
            acc_ref[...] = jnp.zeros_like(acc_ref)

        acc_ref[...] += x_ref[...] @ y_ref[...]

        @pl.when(pl.program_id(2) == pl.num_programs(2) - 1)
        def _():
            out_ref[...] = acc_ref[...]

    (m, k), n = x.shape, y.shape[1]
    return pl.pallas_call(
        kernel,
        out_shape=jax.ShapeDtypeStruct((m, n), x.dtype),
        grid=(m // block, n // block, k // block),
        in_specs=[
            pl.BlockSpec((block, block), lambda i, j, kk: (i, kk)),
            pl.BlockSpec((block, block), lambda i, j, kk: (kk, j)),
        ],
        out_specs=pl.BlockSpec((block, block), lambda i, j, kk: (i, j)),
        scratch_shapes=[pltpu.VMEM((block, block), jnp.float32)],
        compiler_params=pltpu.CompilerParams(dimension_semantics=semantics),
        interpret=interpret,
    )(x, y)


@pytest.mark.parametrize(
    "reduction, interpreter, right",
    [
        ("arbitrary", "plain", True),
        ("arbitrary", "tpu", True),
        ("parallel", "plain", True),
        ("parallel", "tpu", False),
    ],
)
def test_only_the_tpu_interpreter_minds_a_parallel_reduction_axis(reduction, interpreter, right):
    """@sec-pallas-interpret's table of four runs."""
    a = jax.random.normal(jax.random.key(2), (64, 96))
    b = jax.random.normal(jax.random.key(3), (96, 64))
    interpret = True if interpreter == "plain" else pltpu.InterpretParams()
    product = matmul(a, b, ("parallel", "parallel", reduction), interpret)
    error = float(jnp.max(jnp.abs(product - a @ b)))
    assert (error < 1e-3) == right, error


def test_pl_load_and_store_are_gone():
    """@sec-pallas-call: the older tutorials' pl.load and pl.store no longer exist."""
    assert not hasattr(pl, "load") and not hasattr(pl, "store")


def test_xla_already_fuses_an_elementwise_chain():
    """@sec-pallas-why: 2 x + y writes no array between loops and moves 3 arrays' bytes."""
    from jaxcourse import hlo, roofline

    x = jnp.ones((1_000, 1_000))
    assert hlo.written_arrays(lambda a, b: 2.0 * a + b, x, x) == {}
    assert roofline.cost_of(lambda a, b: 2.0 * a + b, x, x).bytes_accessed == 3 * x.size * 4


def test_level_5_writes_n_by_p_arrays_between_its_loops():
    """@sec-pallas-why's table: the XLA path writes several (n, p) arrays per evaluation."""
    from jaxcourse import hlo
    from jaxcourse.pln import init_variational, load_oaks
    from jaxcourse.pln.profiled import evaluate, prepare

    data = load_oaks()
    written = hlo.intermediate_arrays(
        evaluate, prepare(data), init_variational(data), shape=data.counts.shape
    )
    assert sum(shape == data.counts.shape for shape in written.values()) >= 2
