"""The PLN model chapter's exercise checkers accept the reference solutions and reject typical mistakes."""

import jax.numpy as jnp
import pytest
from jax.scipy.linalg import cho_solve, solve_triangular

from jaxcourse import pln
from jaxcourse.exercises import pln as exercises


def _log_det(chol):
    return 2.0 * jnp.sum(jnp.log(jnp.diagonal(chol)))


def log_det_and_trace(covariance, scatter):
    chol = jnp.linalg.cholesky(covariance)
    return _log_det(chol), jnp.trace(cho_solve((chol, True), scatter))


@pytest.mark.slow
def test_log_det_and_trace_solution_passes():
    assert exercises.check_log_det_and_trace(log_det_and_trace)


@pytest.mark.slow
def test_log_det_and_trace_with_two_triangular_solves_passes():
    """Any use of the one factor passes: here L^-1 S L^-T by two triangular solves."""

    def answer(covariance, scatter):
        chol = jnp.linalg.cholesky(covariance)
        half = solve_triangular(chol, scatter, lower=True)
        return _log_det(chol), jnp.trace(solve_triangular(chol, half.T, lower=True))

    assert exercises.check_log_det_and_trace(answer)


def test_stub_reports_not_yet():
    def stub(covariance, scatter):
        raise NotImplementedError

    verdict = exercises.check_log_det_and_trace(stub)
    assert not verdict and "no answer yet" in verdict.message


@pytest.mark.slow_after_first
@pytest.mark.parametrize(
    ("wrong", "hint"),
    [
        # the review's answer: slogdet, printed in the chapter, gives the right log det by LU
        (
            lambda c, s: (jnp.linalg.slogdet(c)[1], jnp.trace(jnp.linalg.solve(c, s))),
            "LU decomposition",
        ),
        (
            lambda c, s: (
                jnp.linalg.slogdet(c)[1],
                jnp.trace(cho_solve((jnp.linalg.cholesky(c), True), s)),
            ),
            "LU decomposition",
        ),
        (
            lambda c, s: (_log_det(jnp.linalg.cholesky(c)), jnp.trace(jnp.linalg.inv(c) @ s)),
            "LU decomposition",
        ),
        (
            lambda c, s: (
                _log_det(jnp.linalg.cholesky(c)),
                jnp.trace(cho_solve((jnp.linalg.cholesky(c), True), s)),
            ),
            "factors Sigma 2 times",
        ),
        (
            lambda c, s: (jnp.log(jnp.linalg.det(c)), jnp.trace(jnp.linalg.solve(c, s))),
            "over- or underflows",
        ),
        (
            lambda c, s: (
                jnp.log(jnp.prod(jnp.diagonal(jnp.linalg.cholesky(c))) ** 2),
                jnp.trace(cho_solve((jnp.linalg.cholesky(c), True), s)),
            ),
            "product of the diagonal",
        ),
        (
            lambda c, s: (
                _log_det(jnp.linalg.cholesky(c)) / 2,
                jnp.trace(cho_solve((jnp.linalg.cholesky(c), True), s)),
            ),
            "prod(diag(L))**2",
        ),
        (
            lambda c, s: (
                jnp.sum(jnp.log(jnp.diagonal(c))),
                jnp.trace(cho_solve((jnp.linalg.cholesky(c), True), s)),
            ),
            "matrix's own diagonal",
        ),
        (lambda c, s: (_log_det(jnp.linalg.cholesky(c)), jnp.trace(c @ s)), "tr(Sigma scatter)"),
        (lambda c, s: _log_det(jnp.linalg.cholesky(c)), "return a pair"),
    ],
    ids=[
        "slogdet-and-solve",
        "slogdet-and-cho-solve",
        "inverse",
        "two-factors",
        "det",
        "product-of-diagonal",
        "half",
        "matrix-diagonal",
        "no-inverse",
        "one-number",
    ],
)
def test_log_det_and_trace_wrong_answers_fail(wrong, hint):
    verdict = exercises.check_log_det_and_trace(wrong)
    assert not verdict and hint in verdict.message


def test_log_det_and_trace_python_if_fails_under_jit():
    """Branching in Python on the matrix works eagerly only."""

    def branchy(covariance, scatter):
        if float(covariance[0, 0]) > 0:
            return log_det_and_trace(covariance, scatter)
        return jnp.nan, jnp.nan

    verdict = exercises.check_log_det_and_trace(branchy)
    assert not verdict and "traced value" in verdict.message


# Exercise 2: why the closed form ----------------------------------------------------------------


def scaled_elbo(data, variational, factor):
    best = pln.closed_form_params(data, variational)
    return pln.elbo(data, variational, pln.ModelParams(best.coef, factor * best.covariance))


@pytest.mark.slow
def test_scaled_covariance_reference_passes():
    verdict = exercises.check_scaled_covariance_elbo(scaled_elbo)
    assert verdict, verdict.message


def test_scaled_covariance_scaling_coefficients_too_fails():
    def both(data, variational, factor):
        best = pln.closed_form_params(data, variational)
        return pln.elbo(
            data, variational, pln.ModelParams(factor * best.coef, factor * best.covariance)
        )

    verdict = exercises.check_scaled_covariance_elbo(both)
    assert not verdict and "coefficients B too" in verdict.message


def test_scaled_covariance_inverse_factor_fails():
    verdict = exercises.check_scaled_covariance_elbo(
        lambda d, v, factor: scaled_elbo(d, v, 1.0 / factor)
    )
    assert not verdict and "1 / factor" in verdict.message


def test_scaled_covariance_negative_elbo_fails():
    verdict = exercises.check_scaled_covariance_elbo(
        lambda d, v, factor: -scaled_elbo(d, v, factor)
    )
    assert not verdict and "minus the ELBO" in verdict.message


def test_scaled_covariance_fixed_variational_point_fails():
    """Closed-form parameters computed once, at the first point seen, are wrong at the next."""
    cache = {}

    def frozen(data, variational, factor):
        best = cache.setdefault(data.counts.shape, pln.closed_form_params(data, variational))
        return pln.elbo(data, variational, pln.ModelParams(best.coef, factor * best.covariance))

    verdict = exercises.check_scaled_covariance_elbo(frozen)
    assert not verdict and "at the point you are given" in verdict.message


def test_scaled_covariance_python_if_on_the_factor_fails_under_jit():
    def branchy(data, variational, factor):
        return scaled_elbo(data, variational, 1.0 if factor == 1 else factor)

    verdict = exercises.check_scaled_covariance_elbo(branchy)
    assert not verdict and "traced value" in verdict.message
