"""`jaxcourse.config`: sizes by device, and the BLAS/LAPACK thread limit."""

import jax
import jax.numpy as jnp
import pytest

from jaxcourse.config import blas_threads, by_device, limit_blas_threads


def test_by_device_picks_cpu_value_on_cpu():
    """The tests run on CPU, so `by_device` returns the `cpu` value."""
    assert jax.default_backend() == "cpu"
    assert by_device(cpu="small", accelerator="large") == "small"


def test_limit_reaches_the_lapack_jax_calls():
    """Inside the limit every BLAS/LAPACK library has one thread, SciPy's LAPACK (the one JAX
    calls for a Cholesky factorisation) included, even before JAX's first factorisation loaded
    it; afterwards the earlier limits are back."""
    before = blas_threads()
    with limit_blas_threads(2):  # a value other than the pinned test worker's default of 1
        two = blas_threads()
        with limit_blas_threads(1):
            one = blas_threads()
            jnp.linalg.cholesky(jnp.eye(3)).block_until_ready()
            after_factorisation = blas_threads()
    assert set(two.values()) == {2}
    assert set(one.values()) == {1}
    # JAX's factorisation loaded no library that the limit missed.
    assert after_factorisation == one
    after = blas_threads()
    assert {name: after[name] for name in before} == before


@pytest.mark.parametrize(
    "limit, error", [(0, ValueError), (-2, ValueError), (1.5, TypeError), (True, TypeError)]
)
def test_limit_rejects_bad_values(limit, error):
    """A limit below one or not an int is refused with a clear message."""
    with pytest.raises(error, match="limit must"):
        limit_blas_threads(limit)
