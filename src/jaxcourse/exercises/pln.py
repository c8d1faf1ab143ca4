"""Checkers for the exercises of the chapter 'The Poisson-lognormal model'."""

from __future__ import annotations

from typing import Callable

import jax
import jax.numpy as jnp
import numpy as np

from ..checks import call_answer, close, exercise_checker, require, require_array
from ._jaxpr import equations, traced_program


def _spd_matrix(p: int, scale: float, seed: int) -> np.ndarray:
    """A well-conditioned SPD matrix whose determinant is about scale**p."""
    rng = np.random.default_rng(seed)
    factor = rng.standard_normal((p, p)) / np.sqrt(p)
    return scale * (np.eye(p) + 0.3 * factor @ factor.T)


LOG_DET_CASES = ((1, 2.0), (3, 1.0), (20, 0.5), (114, 3.0), (114, 0.05))
"""(size, scale) of the SPD matrices tried: a 1x1 matrix, small ones, and oaks-sized ones whose
determinant over- or underflows float32."""


def _forms_determinant(log_det: Callable, matrix: jax.Array) -> bool:
    """True when the program of `log_det` computes a determinant or a product of many numbers."""
    jaxpr = traced_program(log_det, matrix, what="log_det")
    return any(
        eqn.primitive.name == "reduce_prod" or eqn.params.get("name") == "det" for eqn in equations(jaxpr)
    )


def _log_det_value(log_det: Callable, matrix: jax.Array, how: str) -> float:
    answer = jax.jit(log_det) if how == "under jit" else log_det
    got = call_answer(answer, matrix, what=f"log_det ({how})")
    require(
        not (isinstance(got, tuple) and len(got) == 2),
        "return one number, not a pair: jnp.linalg.slogdet returns (sign, log|det|), of which you "
        "want the second.",
    )
    return float(require_array(got, (), what=f"log_det ({how})", expected="the log-determinant, one number"))


def _require_log_det_close(got: float, matrix: np.ndarray, how: str) -> None:
    p = matrix.shape[0]
    expected = np.linalg.slogdet(matrix)[1]
    if abs(got - expected) <= 1e-3 * max(1.0, abs(expected)):
        return
    require(
        np.isfinite(got),
        f"for a {p}x{p} matrix ({how}) you returned {got}: det itself over- or underflows float32 "
        "(its largest value is about 3e38). Sum the logs of the Cholesky diagonal instead.",
    )
    require(
        abs(2 * got - expected) > 1e-3 * max(1.0, abs(expected)),
        f"for a {p}x{p} matrix you returned {got:.4f}, half of {expected:.4f}: "
        "det(L L') = prod(diag(L))**2, so log det = 2 * sum(log(diag(L))).",
    )
    require(
        abs(got - np.sum(np.log(np.diagonal(matrix)))) > 1e-3 * max(1.0, abs(expected)),
        f"for a {p}x{p} matrix you returned the sum of the logs of the matrix's own diagonal, "
        f"{got:.4f}, not {expected:.4f}: that is the log det only of a diagonal matrix. Take the "
        "diagonal of its Cholesky factor L.",
    )
    require(
        False,
        f"for a {p}x{p} matrix ({how}) you returned {got:.4f}, expected {expected:.4f}. "
        "Remember det(L L') = prod(diag(L))**2.",
    )


@exercise_checker("stable log-determinant")
def check_log_det(log_det: Callable) -> None:
    """`log_det(matrix)` must return log det of an SPD float32 matrix, from 1x1 up to 114x114,
    eagerly and under jit, without ever forming the determinant."""
    require(callable(log_det), "pass the function itself: check_log_det(log_det).")
    for p, scale in LOG_DET_CASES:
        matrix = _spd_matrix(p, scale, seed=p)
        for how in ("eagerly", "under jit"):
            got = _log_det_value(log_det, jnp.asarray(matrix, dtype=jnp.float32), how)
            _require_log_det_close(got, matrix, how)
    require(
        not _forms_determinant(log_det, jnp.asarray(_spd_matrix(114, 1.0, 0), dtype=jnp.float32)),
        "the numbers are right at these sizes, but your program computes a determinant or a "
        "product of the diagonal, which over- or underflows float32 for other matrices. Sum logs "
        "instead of multiplying.",
    )


# Exercise 2 ------------------------------------------------------------------------------------

FACTORS = (0.5, 0.9, 1.0, 1.1, 2.0)
"""Scalings of the closed-form covariance the checker tries, 1 (the closed form itself) included."""


def _problems() -> list:
    """Two small simulated data sets, each with two variational points: the start and a moved one."""
    from ..pln import Variational, init_variational, simulate

    problems = []
    for n, p, n_covariates, seed in ((25, 4, 2, 3), (40, 6, 3, 8)):
        data = simulate(n, p, key=jax.random.key(seed), n_covariates=n_covariates).data
        start = init_variational(data)
        moved = Variational(start.latent_mean + 0.3, start.latent_sqrt_var * 1.5)
        problems += [(data, start), (data, moved)]
    return problems


def _scaled_elbo(data, variational, factor: float, coef_factor: float = 1.0):
    from ..pln import ModelParams, closed_form_params, elbo

    best = closed_form_params(data, variational)
    return elbo(data, variational, ModelParams(coef_factor * best.coef, factor * best.covariance))


def _require_scaled_elbo(got, data, variational, factor: float, how: str) -> None:
    expected = _scaled_elbo(data, variational, factor)
    if close(got, expected, rtol=1e-4, atol=1e-3):
        return
    at = f"at factor {factor} ({how})"
    require(not close(got, -expected, rtol=1e-4, atol=1e-3), f"{at} you returned minus the ELBO: return pln.elbo itself.")
    require(
        not close(got, _scaled_elbo(data, variational, 1.0 / factor), rtol=1e-4, atol=1e-3),
        f"{at} you scaled the covariance by 1 / factor: multiply Sigma itself by the factor.",
    )
    require(
        not close(got, _scaled_elbo(data, variational, factor, coef_factor=factor), rtol=1e-4, atol=1e-3),
        f"{at} you scaled the coefficients B too: keep B at its closed form, scale only Sigma.",
    )
    require(
        False,
        f"{at} expected ELBO {float(expected):.4f}, got {got}. Compute closed_form_params(data, "
        "variational) at the point you are given (not at a fixed start), then "
        "pln.elbo(data, variational, ModelParams(coef, factor * covariance)).",
    )


@exercise_checker("why the closed form")
def check_scaled_covariance_elbo(elbo_at_scaled_covariance: Callable) -> None:
    """`elbo_at_scaled_covariance(data, variational, factor)` must return the ELBO at
    `ModelParams(B, factor * Sigma)`, with (B, Sigma) the closed form at `variational`, on
    two data sets and two variational points, eagerly and under jit (factor traced)."""
    require(callable(elbo_at_scaled_covariance), "pass the function itself.")
    jitted = jax.jit(elbo_at_scaled_covariance)  # call_answer reports a failure in it
    for data, variational in _problems():
        for factor in FACTORS:
            got = call_answer(elbo_at_scaled_covariance, data, variational, factor, what="your function")
            got = require_array(got, (), what="your function", expected="the ELBO, one number")
            _require_scaled_elbo(got, data, variational, factor, "eagerly")
            got = call_answer(jitted, data, variational, factor, what="your function under jax.jit")
            got = require_array(got, (), what="your function under jax.jit", expected="the ELBO, one number")
            _require_scaled_elbo(got, data, variational, factor, "under jit")
