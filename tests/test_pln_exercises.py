"""The PLN model chapter's exercise checkers accept the reference solutions and reject typical mistakes."""

import jax
import jax.numpy as jnp
import pytest

from jaxcourse import pln
from jaxcourse.exercises import pln as exercises


def stable_log_det(matrix):
    return 2.0 * jnp.sum(jnp.log(jnp.diagonal(jnp.linalg.cholesky(matrix))))


def naive_log_det(matrix):
    return jnp.log(jnp.linalg.det(matrix))


def test_log_det_solution_passes():
    assert exercises.check_log_det(stable_log_det)


def test_log_det_slogdet_passes():
    assert exercises.check_log_det(lambda m: jnp.linalg.slogdet(m)[1])


def test_log_det_of_det_fails_with_overflow_hint():
    verdict = exercises.check_log_det(naive_log_det)
    assert not verdict
    assert "Cholesky" in verdict.message


def test_log_det_forgetting_the_factor_two_fails():
    verdict = exercises.check_log_det(lambda m: jnp.sum(jnp.log(jnp.diagonal(jnp.linalg.cholesky(m)))))
    assert not verdict and "prod(diag(L))**2" in verdict.message


def test_stub_reports_not_yet():
    def stub(matrix):
        raise NotImplementedError

    verdict = exercises.check_log_det(stub)
    assert not verdict and "no answer yet" in verdict.message


def test_log_det_product_of_the_cholesky_diagonal_fails_on_the_method():
    """log(prod(diag(L))**2) forms the determinant: it overflows at 114 x 114."""
    verdict = exercises.check_log_det(lambda m: jnp.log(jnp.prod(jnp.diagonal(jnp.linalg.cholesky(m))) ** 2))
    assert not verdict and "Cholesky" in verdict.message


def test_log_det_of_the_matrix_diagonal_fails_with_its_own_hint():
    """The diagonal of the matrix is not the diagonal of its Cholesky factor."""
    verdict = exercises.check_log_det(lambda m: jnp.sum(jnp.log(jnp.diagonal(m))))
    assert not verdict and "matrix's own diagonal" in verdict.message


def test_log_det_returning_slogdet_pair_fails_with_the_expected_structure():
    verdict = exercises.check_log_det(jnp.linalg.slogdet)
    assert not verdict and "(sign, log|det|)" in verdict.message


def test_log_det_python_if_fails_under_jit():
    """Branching in Python on the matrix works eagerly only."""

    def branchy(matrix):
        if float(matrix[0, 0]) > 0:
            return stable_log_det(matrix)
        return jnp.nan

    verdict = exercises.check_log_det(branchy)
    assert not verdict and "traced value" in verdict.message


# Exercise 2: why the closed form ----------------------------------------------------------------


def scaled_elbo(data, variational, factor):
    best = pln.closed_form_params(data, variational)
    return pln.elbo(data, variational, pln.ModelParams(best.coef, factor * best.covariance))


def test_scaled_covariance_reference_passes():
    verdict = exercises.check_scaled_covariance_elbo(scaled_elbo)
    assert verdict, verdict.message


def test_scaled_covariance_scaling_coefficients_too_fails():
    def both(data, variational, factor):
        best = pln.closed_form_params(data, variational)
        return pln.elbo(data, variational, pln.ModelParams(factor * best.coef, factor * best.covariance))

    verdict = exercises.check_scaled_covariance_elbo(both)
    assert not verdict and "coefficients B too" in verdict.message


def test_scaled_covariance_inverse_factor_fails():
    verdict = exercises.check_scaled_covariance_elbo(lambda d, v, factor: scaled_elbo(d, v, 1.0 / factor))
    assert not verdict and "1 / factor" in verdict.message


def test_scaled_covariance_negative_elbo_fails():
    verdict = exercises.check_scaled_covariance_elbo(lambda d, v, factor: -scaled_elbo(d, v, factor))
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
