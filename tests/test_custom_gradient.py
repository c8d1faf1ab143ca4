"""`pln.custom_gradient`: the profiled ELBO whose custom_vjp rule is the closed-form gradient
(shown and timed in the PLN model chapter, section sec-pln-model-custom-vjp)."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxcourse.pln import (
    as_float64,
    custom_gradient,
    init_variational,
    load_oaks,
    profiled,
    profiled_elbo,
    simulate,
)

# More than a few seconds: left out of the fast tier (scripts/test.sh --fast).
pytestmark = pytest.mark.slow

FLOAT32_GRADIENT_RTOL = 1e-6
"""Norm-wise: each float32 gradient (autodiff's and the rule's) lies within about 1e-7 of the
float64 gradient on oaks (test_both_float32_gradients_are_float32_rounding_of_float64), so two
of them can differ by about twice that; 1e-6 leaves a margin of a few float32 epsilons."""


@pytest.fixture(scope="module")
def oaks():
    return load_oaks()


@pytest.fixture(scope="module")
def oaks_gradients(oaks):
    """Gradients at the default start in float32 (autodiff, custom rule) and float64 (autodiff)."""
    start = init_variational(oaks)
    autodiff = jax.jit(jax.grad(lambda v, data: profiled_elbo(data, v)))(start, oaks)
    custom = jax.jit(jax.grad(custom_gradient.profiled_elbo_custom_vjp, argnums=1))(
        profiled.prepare(oaks), start
    )
    with jax.enable_x64(True):
        data64 = as_float64(oaks)
        reference = jax.grad(lambda v: profiled_elbo(data64, v))(as_float64(start))
        reference = jax.tree.map(np.asarray, reference)
    return autodiff, custom, reference


def test_value_equals_profiled_elbo(oaks):
    """The function's value is `profiled_elbo`'s, eagerly and under jit."""
    start = init_variational(oaks)
    problem = profiled.prepare(oaks)
    expected = float(profiled_elbo(oaks, start))
    for fn in (
        custom_gradient.profiled_elbo_custom_vjp,
        jax.jit(custom_gradient.profiled_elbo_custom_vjp),
    ):
        assert float(fn(problem, start)) == pytest.approx(expected, rel=1e-6)


def test_gradient_equals_autodiff_on_oaks(oaks_gradients):
    """The custom rule's float32 gradient equals jax.grad(profiled_elbo) to float32 rounding."""
    autodiff, custom, _ = oaks_gradients
    assert custom_gradient.relative_error(custom, autodiff) <= FLOAT32_GRADIENT_RTOL


def test_both_float32_gradients_are_float32_rounding_of_float64(oaks_gradients):
    """Both float32 gradients lie within a few float32 epsilons (norm-wise) of the float64 one:
    the justification of FLOAT32_GRADIENT_RTOL."""
    autodiff, custom, reference = oaks_gradients
    eps = float(np.finfo(np.float32).eps)
    assert custom_gradient.relative_error(autodiff, reference) <= 4 * eps
    assert custom_gradient.relative_error(custom, reference) <= 4 * eps


def test_gradient_equals_autodiff_in_float64(key):
    """In float64 the rule and autodiff agree to 1e-10 on simulated data."""
    with jax.enable_x64(True):
        data = as_float64(simulate(20, 4, key=key).data)
        start = init_variational(data)
        start = start._replace(
            latent_sqrt_var=start.latent_sqrt_var + 0.1 * jnp.cos(start.latent_mean)
        )
        ours = jax.grad(custom_gradient.profiled_elbo_custom_vjp, argnums=1)(
            profiled.prepare(data), start
        )
        theirs = jax.grad(lambda v: profiled_elbo(data, v))(start)
        assert custom_gradient.relative_error(ours, theirs) <= 1e-10


def test_cotangent_scales_the_gradient(oaks):
    """The backward rule multiplies by the cotangent: the VJP with 2.5 is 2.5 times the gradient."""
    start = init_variational(oaks)
    problem = profiled.prepare(oaks)
    _, vjp = jax.vjp(lambda v: custom_gradient.profiled_elbo_custom_vjp(problem, v), start)
    (scaled,) = vjp(jnp.float32(2.5))
    gradient = jax.grad(custom_gradient.profiled_elbo_custom_vjp, argnums=1)(problem, start)
    assert custom_gradient.relative_error(scaled, jax.tree.map(lambda g: 2.5 * g, gradient)) <= 1e-7


def test_data_get_a_zero_gradient(oaks):
    """The rule gives the data no gradient: zeros of the data's structure, not an error."""
    problem = profiled.prepare(oaks)
    grad = jax.grad(custom_gradient.profiled_elbo_custom_vjp)(problem, init_variational(oaks))
    assert jax.tree.structure(grad) == jax.tree.structure(problem)
    assert all(float(jnp.max(jnp.abs(leaf))) == 0.0 for leaf in jax.tree.leaves(grad))


def test_forward_mode_is_refused(oaks):
    """A custom_vjp function has no forward-mode rule."""
    problem, start = profiled.prepare(oaks), init_variational(oaks)
    with pytest.raises(TypeError, match="can't apply forward-mode autodiff"):
        jax.jvp(lambda v: custom_gradient.profiled_elbo_custom_vjp(problem, v), (start,), (start,))


def test_raw_data_is_rejected_with_a_pointer_to_prepare(oaks):
    with pytest.raises(TypeError, match=r"profiled.prepare\(data\)"):
        custom_gradient.profiled_elbo_custom_vjp(oaks, init_variational(oaks))


def test_bad_variational_is_rejected(oaks):
    problem, start = profiled.prepare(oaks), init_variational(oaks)
    with pytest.raises(TypeError, match="must be a Variational"):
        custom_gradient.profiled_elbo_custom_vjp(problem, tuple(start))
    with pytest.raises(ValueError, match="latent_sqrt_var must have the shape of the counts"):
        custom_gradient.profiled_elbo_custom_vjp(
            problem, start._replace(latent_sqrt_var=start.latent_sqrt_var[:3])
        )


def test_relative_error_rejects_different_trees():
    with pytest.raises(ValueError, match="the two trees differ"):
        custom_gradient.relative_error((1.0, 2.0), [1.0, 2.0])
