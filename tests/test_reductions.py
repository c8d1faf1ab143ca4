"""`jaxcourse.reductions`: sums written as (batched) matrix-vector products equal the plain sums."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxcourse.reductions import column_sums, total


@pytest.mark.parametrize("shape", [(), (7,), (13, 5), (3, 4, 6)])
def test_total_equals_sum(shape):
    """`total` is `jnp.sum` for every rank, in float64 to rounding, eager and under jit."""
    values = np.random.default_rng(0).normal(size=shape)
    with jax.enable_x64(True):
        x = jnp.asarray(values)
        np.testing.assert_allclose(total(x), values.sum(), rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(jax.jit(total)(x), total(x), rtol=1e-12, atol=1e-12)


def test_total_keeps_float32():
    """A float32 input gives a float32 sum (the ones vector takes the input's dtype)."""
    x = jnp.ones((11, 3), jnp.float32)
    assert total(x).dtype == jnp.float32
    assert float(total(x)) == 33.0


def test_column_sums_equal_sum_over_rows():
    """`column_sums` is `jnp.sum(x, axis=0)`, eager and under jit."""
    values = np.random.default_rng(1).normal(size=(50, 7))
    with jax.enable_x64(True):
        x = jnp.asarray(values)
        np.testing.assert_allclose(column_sums(x), values.sum(axis=0), rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(jax.jit(column_sums)(x), column_sums(x), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("n_rows, block_rows", [(300, 128), (256, 128), (100, 128), (301, 7), (9, 1)])
def test_column_sums_any_number_of_rows(n_rows, block_rows):
    """Whole blocks, a remainder, no whole block at all: every row is summed exactly once."""
    values = np.random.default_rng(n_rows).normal(size=(n_rows, 6))
    with jax.enable_x64(True):
        x = jnp.asarray(values)
        got = jax.jit(lambda x: column_sums(x, block_rows=block_rows))(x)
        np.testing.assert_allclose(got, values.sum(axis=0), rtol=1e-12, atol=1e-12)


def test_column_sums_keep_float32_and_are_accurate():
    """float32 in, float32 out, and at the benchmark's size as close to the float64 sums as
    `jnp.sum` is (both add in blocks, not one long running sum)."""
    values = np.random.default_rng(2).uniform(0.1, 1.0, size=(11_600, 114)).astype(np.float32)
    exact = values.astype(np.float64).sum(axis=0)
    ours = column_sums(jnp.asarray(values))
    assert ours.dtype == jnp.float32
    np.testing.assert_allclose(np.asarray(ours), exact, rtol=2e-6)


@pytest.mark.parametrize("block_rows", [0, -3, 2.5, True])
def test_column_sums_rejects_bad_block_rows(block_rows):
    with pytest.raises(ValueError, match="block_rows must be a positive int"):
        column_sums(jnp.zeros((4, 2)), block_rows=block_rows)


@pytest.mark.parametrize("shape", [(5,), (2, 3, 4)])
def test_column_sums_rejects_other_ranks(shape):
    """Only a 2-D array has columns; anything else is a clear ValueError naming the shape."""
    with pytest.raises(ValueError, match=r"2-D array, got shape"):
        column_sums(jnp.zeros(shape))
