"""The course's Pallas kernels (`jaxcourse.pallas_kernels`) against their jnp references, on
shapes that divide the block and shapes that do not; and level 5's fused-kernel path against
its XLA path, evaluation by evaluation and fit by fit."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxcourse import pallas_kernels
from jaxcourse.pln import init_variational, level5, load_oaks, simulate
from jaxcourse.pln.profiled import KERNELS, evaluate, prepare

# More than a few seconds: left out of the fast tier (scripts/test.sh --fast).
pytestmark = pytest.mark.slow

SHAPES = [(16, 256), (13, 130), (3, 5), (40, 128)]
"""Shapes of which only the first and last divide the default (8, 128) blocks."""


def matrix(shape, seed=0):
    return jax.random.normal(jax.random.key(seed), shape)


def test_kernels_compile_only_when_asked_and_never_on_a_cpu(monkeypatch):
    monkeypatch.delenv(pallas_kernels.COMPILE_ENV, raising=False)
    assert pallas_kernels.interpret_mode() is True
    monkeypatch.setenv(pallas_kernels.COMPILE_ENV, "1")
    assert pallas_kernels.interpret_mode() is (jax.default_backend() == "cpu")


@pytest.mark.parametrize("shape, block", [((16, 256), (8, 128)), ((13, 130), (8, 128))])
def test_block_grid_counts_the_edge_blocks(shape, block):
    grid = pallas_kernels.block_grid(shape, block)
    assert grid == tuple(-(-size // width) for size, width in zip(shape, block))
    assert all(g * width >= size > (g - 1) * width for g, width, size in zip(grid, block, shape))


@pytest.mark.parametrize("shape", SHAPES)
def test_scale_add_equals_its_jnp_reference(shape):
    x, y = matrix(shape, 1), matrix(shape, 2)
    np.testing.assert_allclose(pallas_kernels.scale_add(x, y), 2.0 * x + y, rtol=1e-6, atol=1e-6)


def test_scale_add_rejects_mismatched_shapes():
    with pytest.raises(ValueError, match="one shape"):
        pallas_kernels.scale_add(jnp.ones((4, 4)), jnp.ones((4, 5)))


@pytest.mark.parametrize("shape", SHAPES)
def test_row_sums_equals_its_jnp_reference(shape):
    x = matrix(shape, 3)
    np.testing.assert_allclose(pallas_kernels.row_sums(x), jnp.sum(x, axis=1), rtol=1e-5, atol=1e-5)


def test_row_sums_without_the_mask_would_be_nan_at_the_edge():
    """What the mask in `row_sums` is for: in interpret mode the columns past the edge of the
    last block read NaN, so an unmasked sum of a shape that does not divide the block is NaN
    (interpret mode on any backend: compiled, the padding is whatever memory holds)."""
    from jax.experimental import pallas as pl

    def unmasked(x_ref, out_ref):
        out_ref[...] = jnp.sum(x_ref[...], axis=1)

    x = matrix((8, 130), 4)
    sums = pl.pallas_call(
        unmasked,
        out_shape=jax.ShapeDtypeStruct((8, 2), x.dtype),
        grid=(1, 2),
        in_specs=[pl.BlockSpec((8, 128), lambda i, k: (i, k))],
        out_specs=pl.BlockSpec((8, None), lambda i, k: (i, k)),
        interpret=True,
    )(x)
    assert np.all(np.isfinite(sums[:, 0])) and np.all(np.isnan(sums[:, 1]))


@pytest.fixture(scope="module")
def oaks():
    return load_oaks()


def wobbly(data, seed=0):
    """A point away from the start, so that every term of the evaluation matters."""
    start = init_variational(data)
    noise = 0.3 * jax.random.normal(jax.random.key(seed), (2, *start.latent_mean.shape))
    return type(start)(start.latent_mean + noise[0], start.latent_sqrt_var * jnp.exp(noise[1]))


def largest_relative_gap(fused, reference):
    gaps = jax.tree.map(
        lambda a, b: float(jnp.max(jnp.abs(a - b) / (1.0 + jnp.abs(b)))), fused, reference
    )
    return max(jax.tree.leaves(gaps))


@pytest.mark.parametrize("which", ["oaks", "simulated 45 x 140"])
def test_the_fused_evaluation_equals_level_5s(which, oaks):
    """On oaks (116 x 114, a 4 x 1 grid of 32 x 128 blocks) and on a simulated shape whose rows
    and columns both leave an edge block: the ELBO, gradient, curvature and parameters agree to
    float32 rounding, also where the ELBO is skipped (`with_elbo` false gives NaN in both)."""
    data = oaks if which == "oaks" else simulate(45, 140, key=jax.random.key(5)).data
    assert (
        data.n_samples % pallas_kernels.PLN_BLOCK[0]
        and data.n_species % pallas_kernels.PLN_BLOCK[1]
    )
    problem, point = prepare(data), wobbly(data)
    by_kernel = {
        kernel: jax.jit(lambda p, v, kernel=kernel: evaluate(p, v, kernel=kernel))(problem, point)
        for kernel in KERNELS
    }
    assert np.isfinite(by_kernel["xla"].elbo)
    assert largest_relative_gap(by_kernel["pallas"], by_kernel["xla"]) < 1e-5
    skipped = jax.jit(lambda p, v: evaluate(p, v, with_elbo=jnp.asarray(False), kernel="pallas"))
    assert np.isnan(skipped(problem, point).elbo)


def test_the_pass_reads_each_block_once_and_sums_by_row_block(oaks):
    problem, point = prepare(oaks), wobbly(oaks)
    p = oaks.n_species
    fused = pallas_kernels.pln_pass(
        problem.counts,
        problem.offsets,
        problem.shifted_offsets,
        point.latent_mean,
        point.latent_sqrt_var,
        jnp.zeros_like(point.latent_mean),
        jnp.zeros(p),
    )
    n_blocks = -(-oaks.n_samples // pallas_kernels.PLN_BLOCK[0])
    assert fused.poisson_partials.shape == (n_blocks, 1, p)
    rate = jnp.exp(problem.offsets + point.latent_mean + 0.5 * point.latent_sqrt_var**2)
    np.testing.assert_allclose(fused.curvature_mean, rate, rtol=1e-6)
    np.testing.assert_allclose(fused.grad_mean, problem.counts - rate, rtol=1e-5, atol=1e-4)


def test_a_level_5_fit_with_the_kernel_gives_the_same_results(oaks):
    options = dict(optimizer=level5.NEWTON_MOMENTUM)
    xla = level5.fit(oaks, 300, **options)
    fused = level5.fit(oaks, 300, kernel="pallas", **options)
    assert int(fused.n_steps) == int(xla.n_steps) and int(fused.status) == int(xla.status)
    np.testing.assert_allclose(fused.elbo_trace, xla.elbo_trace, rtol=1e-6)
    assert largest_relative_gap(fused.variational, xla.variational) < 1e-4
    assert largest_relative_gap(fused.params, xla.params) < 1e-4


@pytest.mark.parametrize("kernel", ["triton", None, "PALLAS"])
def test_level_5_rejects_an_unknown_kernel(oaks, kernel):
    with pytest.raises(ValueError, match="kernel must be one of"):
        level5.fit(oaks, 3, kernel=kernel)
