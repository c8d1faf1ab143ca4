"""`jaxcourse.reductions`: the course's sums equal the plain sums, eagerly and under jit.

Which form they use is pinned by tests/test_hlo.py; these tests check what they compute.
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxcourse.reductions import SUM_FORMS, column_sums, column_sums_in_blocks, total


@pytest.mark.parametrize("shape", [(), (7,), (13, 5), (3, 4, 6)])
def test_total_equals_sum(shape):
    """`total` is the sum of every entry for every rank, in float64 to rounding, eager and under jit."""
    values = np.random.default_rng(0).normal(size=shape)
    with jax.enable_x64(True):
        x = jnp.asarray(values)
        np.testing.assert_allclose(total(x), values.sum(), rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(jax.jit(total)(x), total(x), rtol=1e-12, atol=1e-12)


def test_total_keeps_float32():
    """A float32 input gives a float32 sum."""
    x = jnp.ones((11, 3), jnp.float32)
    assert total(x).dtype == jnp.float32
    assert float(total(x)) == 33.0


@pytest.mark.parametrize("n_rows", [1, 128, 300])
def test_column_sums_equal_sum_over_rows(n_rows):
    """`column_sums` adds over the rows, one sum per column, eager and under jit, for any number of rows."""
    values = np.random.default_rng(n_rows).normal(size=(n_rows, 7))
    with jax.enable_x64(True):
        x = jnp.asarray(values)
        np.testing.assert_allclose(column_sums(x), values.sum(axis=0), rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(jax.jit(column_sums)(x), column_sums(x), rtol=1e-12, atol=1e-12)


def test_column_sums_keep_float32_and_are_accurate():
    """float32 in, float32 out, and at the benchmark's size close to the float64 sums
    (XLA adds in blocks, not one long running sum)."""
    values = np.random.default_rng(2).uniform(0.1, 1.0, size=(11_600, 114)).astype(np.float32)
    exact = values.astype(np.float64).sum(axis=0)
    ours = jax.jit(column_sums)(jnp.asarray(values))
    assert ours.dtype == jnp.float32
    np.testing.assert_allclose(np.asarray(ours), exact, rtol=2e-6)


@pytest.mark.parametrize("shape", [(5,), (2, 3, 4)])
def test_column_sums_rejects_other_ranks(shape):
    """Only a 2-D array has columns; anything else is a clear ValueError naming the shape."""
    with pytest.raises(ValueError, match=r"2-D array, got shape"):
        column_sums(jnp.zeros(shape))


@pytest.mark.parametrize("n_rows", [1, 128, 300])
def test_column_sums_in_blocks_equal_sum_over_rows(n_rows):
    """jax 0.10's blocked column sums, kept for the chapter's comparison, are still column sums,
    with fewer rows than a block, exactly one block, and a remainder."""
    values = np.random.default_rng(n_rows).normal(size=(n_rows, 7))
    with jax.enable_x64(True):
        np.testing.assert_allclose(
            column_sums_in_blocks(jnp.asarray(values)), values.sum(axis=0), rtol=1e-12
        )


def test_sum_forms_compute_what_their_names_say():
    """Each form the chapter compares equals, in float64, the sum its name writes: of all entries
    for the first two, over the rows for the others."""
    a, b = np.random.default_rng(1).normal(size=(2, 300, 7))
    with jax.enable_x64(True):
        for name, form in SUM_FORMS.items():
            totals = {"jnp.sum(a * b)", "jnp.sum((a * b) @ ones)"}
            expected = (a * b).sum() if name in totals else (a * b).sum(axis=0)
            np.testing.assert_allclose(
                form(jnp.asarray(a), jnp.asarray(b)), expected, rtol=1e-12, err_msg=name
            )
