"""Checkers for the exercises of the chapter 'The Poisson-lognormal model'."""

from __future__ import annotations

from collections.abc import Callable

import jax
import jax.numpy as jnp
import numpy as np

from ..checks import call_answer, close, exercise_checker, require, require_array
from ._jaxpr import equations, primitive_names, traced_program


def _spd_matrix(p: int, scale: float, seed: int) -> np.ndarray:
    """A well-conditioned SPD matrix whose determinant is about scale**p."""
    rng = np.random.default_rng(seed)
    factor = rng.standard_normal((p, p)) / np.sqrt(p)
    return scale * (np.eye(p) + 0.3 * factor @ factor.T)


LOG_DET_CASES = ((1, 2.0), (3, 1.0), (114, 3.0), (114, 0.05))
"""(size, scale) of the SPD matrices tried: a 1x1 matrix, a small one, and oaks-sized ones whose
determinant over- or underflows float32 (one shape, so one compilation, for both)."""


def _forms_determinant(answer: Callable, *args) -> bool:
    """True when the answer's program computes a determinant or a product of many numbers."""
    jaxpr = traced_program(answer, *args, what="log_det_and_trace")
    return any(
        eqn.primitive.name == "reduce_prod" or eqn.params.get("name") == "det"
        for eqn in equations(jaxpr)
    )


def _pair(
    answer: Callable, covariance: jax.Array, scatter: jax.Array, how: str
) -> tuple[float, float]:
    call = jax.jit(answer) if how == "under jit" else answer
    got = call_answer(call, covariance, scatter, what=f"log_det_and_trace ({how})")
    require(
        isinstance(got, (tuple, list)) and len(got) == 2,
        "return a pair (log det Sigma, tr(Sigma^-1 scatter)), both from one Cholesky factor of Sigma; "
        f"got {type(got).__name__}.",
    )
    log_det, trace = (
        float(
            require_array(
                value, (), what=f"log_det_and_trace ({how}), {name}", expected="one number"
            )
        )
        for value, name in zip(got, ("first entry", "second entry"))
    )
    return log_det, trace


def _require_log_det_close(got: float, matrix: np.ndarray, how: str) -> None:
    p = matrix.shape[0]
    expected = np.linalg.slogdet(matrix)[1]
    if abs(got - expected) <= 1e-3 * max(1.0, abs(expected)):
        return
    require(
        np.isfinite(got),
        f"for a {p}x{p} matrix ({how}) you returned the log-determinant {got}: det itself over- or "
        "underflows float32 (its largest value is about 3e38). Sum the logs of the Cholesky diagonal instead.",
    )
    require(
        abs(2 * got - expected) > 1e-3 * max(1.0, abs(expected)),
        f"for a {p}x{p} matrix your log-determinant is {got:.4f}, half of {expected:.4f}: "
        "det(L L') = prod(diag(L))**2, so log det = 2 * sum(log(diag(L))).",
    )
    require(
        abs(got - np.sum(np.log(np.diagonal(matrix)))) > 1e-3 * max(1.0, abs(expected)),
        f"for a {p}x{p} matrix your log-determinant is the sum of the logs of the matrix's own diagonal, "
        f"{got:.4f}, not {expected:.4f}: that is the log det only of a diagonal matrix. Take the "
        "diagonal of its Cholesky factor L.",
    )
    require(
        False,
        f"for a {p}x{p} matrix ({how}) your log-determinant is {got:.4f}, expected {expected:.4f}. "
        "Remember det(L L') = prod(diag(L))**2.",
    )


def _require_trace_close(got: float, matrix: np.ndarray, scatter: np.ndarray, how: str) -> None:
    expected = float(np.trace(np.linalg.solve(matrix, scatter)))
    if abs(got - expected) <= 1e-3 * max(1.0, abs(expected)):
        return
    require(
        abs(got - np.trace(matrix @ scatter)) > 1e-3 * max(1.0, abs(expected)),
        f"your trace term ({how}) is tr(Sigma scatter); the ELBO needs tr(Sigma^-1 scatter): solve "
        "with the factor, jax.scipy.linalg.cho_solve((L, True), scatter).",
    )
    tolerance = 1e-3 * max(1.0, abs(expected))
    chol = np.linalg.cholesky(matrix)
    require(
        abs(got - np.trace(scatter)) > tolerance,
        f"your trace term ({how}) is tr(scatter), {got:.4f}: Sigma^-1 is missing. The ELBO needs "
        "tr(Sigma^-1 scatter), with Sigma^-1 scatter = cho_solve((L, True), scatter).",
    )
    require(
        abs(got - np.trace(np.linalg.solve(chol, scatter))) > tolerance,
        f"your trace term ({how}) is tr(L^-1 scatter), one triangular solve: Sigma^-1 = L'^-1 L^-1 "
        "needs two (cho_solve((L, True), scatter) does both).",
    )
    upper_read = np.linalg.solve(np.triu(chol).T @ np.triu(chol), scatter)
    require(
        abs(got - np.trace(upper_read)) > tolerance,
        f"your trace term ({how}) solves with the factor's upper triangle: jnp.linalg.cholesky "
        "returns the LOWER factor L, so pass cho_solve((L, True), scatter), not (L, False).",
    )
    require(
        False,
        f"for a {matrix.shape[0]}x{matrix.shape[0]} matrix ({how}) the trace term is {got:.4f}, expected "
        f"{expected:.4f}: tr(Sigma^-1 scatter), with Sigma^-1 scatter = cho_solve((L, True), scatter).",
    )


def _require_one_cholesky(answer: Callable, covariance: jax.Array, scatter: jax.Array) -> None:
    names = primitive_names(traced_program(answer, covariance, scatter, what="log_det_and_trace"))
    require(
        "lu" not in names,
        "your program runs an LU decomposition (what jnp.linalg.slogdet, "
        "solve and inv do): for a symmetric positive-definite Sigma, one Cholesky factor L gives both "
        "terms, log det = 2 sum(log diag L) and the solve with cho_solve((L, True), scatter).",
    )
    require(
        names.count("cholesky") >= 1,
        "no Cholesky factor was computed: use L = jnp.linalg.cholesky(covariance).",
    )
    require(
        names.count("cholesky") == 1,
        f"your program factors Sigma {names.count('cholesky')} times: factor "
        "it once and use L for both terms, as elbo_from_statistics does.",
    )


@exercise_checker(
    hints=(
        "Factor the covariance once with jnp.linalg.cholesky: L has the log-determinant on "
        "its diagonal and, with jax.scipy.linalg.cho_solve, gives Sigma^-1 A without a "
        "second factorisation.",
        "log det Sigma = 2 * sum(log(diag(L))), never log(det(Sigma)), which overflows or "
        "underflows in float32; the trace is jnp.trace(cho_solve((L, True), scatter)), not "
        "a solve, inv or slogdet (each an LU decomposition). Return the pair (log_det, "
        "trace), in that order.",
    )
)
def check_log_det_and_trace(log_det_and_trace: Callable) -> None:
    """`log_det_and_trace(covariance, scatter)` must return (log det Sigma, tr(Sigma^-1 scatter))
    for SPD float32 matrices from 1x1 up to 114x114, eagerly and under jit, from one Cholesky
    factor: no determinant formed, no LU decomposition, one `cholesky` in the program."""
    require(
        callable(log_det_and_trace),
        "pass the function itself: check_log_det_and_trace(log_det_and_trace).",
    )
    for index, (p, scale) in enumerate(LOG_DET_CASES):
        if (
            index == 2
        ):  # the small cases passed: read the method (tracing only) before the large ones
            args = tuple(
                jnp.asarray(_spd_matrix(114, 1.0, seed), dtype=jnp.float32) for seed in (0, 1)
            )
            require(
                not _forms_determinant(log_det_and_trace, *args),
                "your program computes a determinant or a product of the diagonal, which over- or "
                "underflows float32 for large matrices. Sum logs instead of multiplying.",
            )
            _require_one_cholesky(log_det_and_trace, *args)
        matrix = _spd_matrix(p, scale, seed=p)
        scatter = p * _spd_matrix(p, 1.0, seed=p + 1)
        args = (jnp.asarray(matrix, dtype=jnp.float32), jnp.asarray(scatter, dtype=jnp.float32))
        for how in ("eagerly", "under jit"):
            log_det, trace = _pair(log_det_and_trace, *args, how)
            expected = np.linalg.slogdet(matrix)[1], np.trace(np.linalg.solve(matrix, scatter))
            require(
                not np.allclose((trace, log_det), expected, rtol=1e-3)
                or np.allclose(expected[0], expected[1], rtol=1e-3),
                f"for a {p}x{p} matrix ({how}) you returned (trace, log-determinant): the pair is "
                "(log det Sigma, tr(Sigma^-1 scatter)), in that order.",
            )
            _require_log_det_close(log_det, matrix, how)
            _require_trace_close(trace, matrix, scatter, how)


# The ELBO at a scaled covariance (why the closed form) -------------------------------------------

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
    require(
        not close(got, -expected, rtol=1e-4, atol=1e-3),
        f"{at} you returned minus the ELBO: return pln.elbo itself.",
    )
    require(
        not close(got, _scaled_elbo(data, variational, 1.0 / factor), rtol=1e-4, atol=1e-3),
        f"{at} you scaled the covariance by 1 / factor: multiply Sigma itself by the factor.",
    )
    require(
        not close(
            got, _scaled_elbo(data, variational, factor, coef_factor=factor), rtol=1e-4, atol=1e-3
        ),
        f"{at} you scaled the coefficients B too: keep B at its closed form, scale only Sigma.",
    )
    from ..pln import ModelParams, Variational, closed_form_params, elbo

    best = closed_form_params(data, variational)
    p = best.covariance.shape[0]
    slips = (
        (factor**2 * best.covariance, best.coef, variational, "multiplied Sigma by factor ** 2"),
        (factor * jnp.eye(p), best.coef, variational, "used factor * I: Sigma-hat is missing"),
        (best.covariance + factor, best.coef, variational, "added the factor to Sigma"),
        (
            factor * best.covariance,
            jnp.zeros_like(best.coef),
            variational,
            "left the coefficients at zero: B is closed_form_params' coef",
        ),
        (
            best.covariance,
            best.coef,
            Variational(variational.latent_mean, variational.latent_sqrt_var * np.sqrt(factor)),
            "scaled the variational variances S**2: scale the model's covariance Sigma instead",
        ),
    )
    for covariance, coef, point, what in slips:
        require(
            not close(got, elbo(data, point, ModelParams(coef, covariance)), rtol=1e-4, atol=1e-3),
            f"{at} you {what}. The exercise asks for the ELBO at (B-hat, factor * Sigma-hat).",
        )
    require(
        False,
        f"{at} expected ELBO {float(expected):.4f}, got {got}: the ELBO at (B-hat, "
        "factor * Sigma-hat). Are both from closed_form_params(data, variational) at the point you "
        "are given (not at one seen before), and is the covariance factor * Sigma-hat?",
    )


@exercise_checker(
    hints=(
        "pln.closed_form_params(data, variational) gives B-hat and Sigma-hat at the point "
        "you are given; evaluate pln.elbo there with a ModelParams whose covariance you "
        "scaled.",
        "Scale the covariance, not the coefficients, and multiply it by factor (not by "
        "factor squared, not the variational variances); keep everything in JAX so that a "
        "traced factor works under jit, and return the ELBO itself (a scalar), not minus "
        "it.",
    )
)
def check_scaled_covariance_elbo(elbo_at_scaled_covariance: Callable) -> None:
    """`elbo_at_scaled_covariance(data, variational, factor)` must return the ELBO at
    `ModelParams(B, factor * Sigma)`, with (B, Sigma) the closed form at `variational`, on
    two data sets and two variational points, eagerly and under jit (factor traced)."""
    require(callable(elbo_at_scaled_covariance), "pass the function itself.")
    jitted = jax.jit(elbo_at_scaled_covariance)  # call_answer reports a failure in it
    for data, variational in _problems():
        for factor in FACTORS:
            got = call_answer(
                elbo_at_scaled_covariance, data, variational, factor, what="your function"
            )
            got = require_array(got, (), what="your function", expected="the ELBO, one number")
            _require_scaled_elbo(got, data, variational, factor, "eagerly")
            got = call_answer(jitted, data, variational, factor, what="your function under jax.jit")
            got = require_array(
                got, (), what="your function under jax.jit", expected="the ELBO, one number"
            )
            _require_scaled_elbo(got, data, variational, factor, "under jit")
