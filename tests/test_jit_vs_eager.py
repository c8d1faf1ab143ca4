"""Compiled code must compute what eager code computes.

jax 0.10.2 miscompiled fused reductions on CPU (jax-ml/jax#39103): these tests fail if an
upgrade brings such a bug back.
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxcourse.pln import Variational, closed_form_params, elbo, init_variational, load_oaks, negative_elbo


def log_reduction(x):
    """The expression of jax-ml/jax#39103."""
    return jnp.sum(jnp.log(2 * x) + x * jnp.log(x))


@pytest.mark.parametrize("n", [1, 7, 128, 1000])
def test_fused_log_reduction_matches_eager(n):
    x = jnp.linspace(0.1, 3.0, n, dtype=jnp.float32)
    with jax.disable_jit():
        eager = log_reduction(x)
    np.testing.assert_allclose(jax.jit(log_reduction)(x), eager, rtol=1e-5)


@pytest.fixture(scope="module")
def oaks():
    return load_oaks()


def points(data):
    """Several variational points: the start, and perturbations of it."""
    start = init_variational(data)
    keys = jax.random.split(jax.random.key(1), 3)
    yield start
    for scale, key in zip((0.05, 0.2, 0.5), keys):
        key_m, key_s = jax.random.split(key)
        yield Variational(
            start.latent_mean + scale * jax.random.normal(key_m, start.latent_mean.shape),
            start.latent_sqrt_var * jnp.exp(scale * jax.random.normal(key_s, start.latent_sqrt_var.shape)),
        )


def test_elbo_and_gradient_under_jit_equal_eager(oaks):
    """ELBO and its gradient agree between jax.jit and jax.disable_jit at several points."""
    value_and_grad = jax.value_and_grad(negative_elbo)
    compiled = jax.jit(value_and_grad)
    for variational in points(oaks):
        params = closed_form_params(oaks, variational)
        with jax.disable_jit():
            eager_value, eager_grad = value_and_grad(variational, params, oaks)
        jit_value, jit_grad = compiled(variational, params, oaks)
        np.testing.assert_allclose(jit_value, eager_value, rtol=2e-6)
        for jit_leaf, eager_leaf in zip(jax.tree.leaves(jit_grad), jax.tree.leaves(eager_grad)):
            scale = float(jnp.max(jnp.abs(eager_leaf)))
            np.testing.assert_allclose(jit_leaf, eager_leaf, rtol=1e-4, atol=1e-5 * scale)


def test_elbo_is_finite_at_the_start(oaks):
    variational = init_variational(oaks)
    assert jnp.isfinite(elbo(oaks, variational, closed_form_params(oaks, variational)))
