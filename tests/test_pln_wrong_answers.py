"""Wrong answers to the PLN model chapter's exercises, written from the exercise texts alone as a
hurried learner would (issue 27, point 4): each must fail, with a hint that names what the answer
did."""

import jax.numpy as jnp
import pytest
from jax.scipy.linalg import cho_solve, solve_triangular

from jaxcourse import pln
from jaxcourse.exercises.pln import check_log_det_and_trace, check_scaled_covariance_elbo

# Exercise 1: log_det_and_trace(covariance, scatter) -> (log det Sigma, tr(Sigma^-1 A)) ------------


def _chol(covariance):
    return jnp.linalg.cholesky(covariance)


def log_of_det(covariance, scatter):
    """The determinant itself, then its log: overflows or underflows in float32."""
    chol = _chol(covariance)
    return jnp.log(jnp.linalg.det(covariance)), jnp.trace(cho_solve((chol, True), scatter))


def log_det_without_the_two(covariance, scatter):
    """sum(log(diag(L))) is half the log-determinant."""
    chol = _chol(covariance)
    return jnp.sum(jnp.log(jnp.diagonal(chol))), jnp.trace(cho_solve((chol, True), scatter))


def pair_swapped(covariance, scatter):
    chol = _chol(covariance)
    log_det = 2.0 * jnp.sum(jnp.log(jnp.diagonal(chol)))
    return jnp.trace(cho_solve((chol, True), scatter)), log_det


def trace_through_inv(covariance, scatter):
    """One Cholesky for the determinant, then inv for the trace: a second factorisation."""
    chol = _chol(covariance)
    log_det = 2.0 * jnp.sum(jnp.log(jnp.diagonal(chol)))
    return log_det, jnp.trace(jnp.linalg.inv(covariance) @ scatter)


def one_triangular_solve(covariance, scatter):
    """tr(L^-1 A): half of the two triangular solves Sigma^-1 needs."""
    chol = _chol(covariance)
    log_det = 2.0 * jnp.sum(jnp.log(jnp.diagonal(chol)))
    return log_det, jnp.trace(solve_triangular(chol, scatter, lower=True))


def trace_of_the_scatter(covariance, scatter):
    """tr(A): the inverse covariance forgotten."""
    chol = _chol(covariance)
    return 2.0 * jnp.sum(jnp.log(jnp.diagonal(chol))), jnp.trace(scatter)


def upper_flag(covariance, scatter):
    """cho_solve told the lower factor is upper."""
    chol = _chol(covariance)
    log_det = 2.0 * jnp.sum(jnp.log(jnp.diagonal(chol)))
    return log_det, jnp.trace(cho_solve((chol, False), scatter))


def two_factorisations(covariance, scatter):
    """The right numbers, but the covariance factored twice."""
    log_det = 2.0 * jnp.sum(jnp.log(jnp.diagonal(_chol(covariance))))
    return log_det, jnp.trace(cho_solve((_chol(covariance), True), scatter))


@pytest.mark.slow_after_first
@pytest.mark.parametrize(
    ("wrong", "hint"),
    [
        (log_of_det, "computes a determinant"),
        (log_det_without_the_two, "half of"),
        (pair_swapped, "you returned (trace, log-determinant)"),
        (trace_through_inv, "runs an LU decomposition"),
        (one_triangular_solve, "one triangular solve"),
        (trace_of_the_scatter, "is tr(scatter)"),
        (upper_flag, "not (L, False)"),
        (two_factorisations, "factors Sigma 2 times"),
    ],
)
def test_log_det_and_trace_wrong_answers_fail(wrong, hint):
    verdict = check_log_det_and_trace(wrong)
    assert not verdict, f"{wrong.__name__} passed"
    assert hint in verdict.message, verdict.message


# Exercise 2: elbo_at_scaled_covariance(data, variational, factor) ---------------------------------


def _elbo(data, variational, coef, covariance):
    return pln.elbo(data, variational, pln.ModelParams(coef, covariance))


def factor_squared(data, variational, factor):
    best = pln.closed_form_params(data, variational)
    return _elbo(data, variational, best.coef, factor**2 * best.covariance)


def identity_covariance(data, variational, factor):
    """factor * I: the closed-form covariance forgotten."""
    best = pln.closed_form_params(data, variational)
    return _elbo(data, variational, best.coef, factor * jnp.eye(best.covariance.shape[0]))


def factor_added(data, variational, factor):
    """Sigma + factor: a shift, not a scale."""
    best = pln.closed_form_params(data, variational)
    return _elbo(data, variational, best.coef, best.covariance + factor)


def python_float_factor(data, variational, factor):
    """float(factor): fine eagerly, an error under jit."""
    best = pln.closed_form_params(data, variational)
    return _elbo(data, variational, best.coef, float(factor) * best.covariance)


def zero_coefficients(data, variational, factor):
    """The coefficients left at zero instead of the closed-form ones."""
    best = pln.closed_form_params(data, variational)
    return _elbo(data, variational, jnp.zeros_like(best.coef), factor * best.covariance)


def variances_scaled(data, variational, factor):
    """The variational variances scaled instead of the model's covariance."""
    best = pln.closed_form_params(data, variational)
    scaled = pln.Variational(
        variational.latent_mean, variational.latent_sqrt_var * jnp.sqrt(factor)
    )
    return _elbo(data, scaled, best.coef, best.covariance)


@pytest.mark.slow
@pytest.mark.parametrize(
    ("wrong", "hint"),
    [
        (factor_squared, "factor ** 2"),
        (identity_covariance, "factor * I"),
        (factor_added, "added the factor"),
        (python_float_factor, "traced value"),
        (zero_coefficients, "coefficients at zero"),
        (variances_scaled, "scaled the variational variances"),
    ],
)
def test_scaled_covariance_elbo_wrong_answers_fail(wrong, hint):
    verdict = check_scaled_covariance_elbo(wrong)
    assert not verdict, f"{wrong.__name__} passed"
    assert hint in verdict.message, verdict.message
