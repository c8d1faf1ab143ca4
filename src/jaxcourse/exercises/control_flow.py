"""Checkers for the exercises of the chapter 'Loops and branches with lax control flow'."""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np

from ..checks import CheckFailed, exercise_checker, require

_TRACER_ERRORS = (
    jax.errors.TracerBoolConversionError,
    jax.errors.TracerIntegerConversionError,
    jax.errors.ConcretizationTypeError,
)


def _jaxpr_text(fn, *args, hint: str) -> str:
    """The jaxpr of `fn(*args)` as text (nested jaxprs included); a tracer error becomes `hint`."""
    try:
        return str(jax.make_jaxpr(fn)(*args))
    except _TRACER_ERRORS as error:
        raise CheckFailed(f"{hint} (tracing raised {type(error).__name__}).") from None


def _close(actual, expected, *, rtol: float = 1e-5, atol: float = 1e-5) -> bool:
    actual = np.asarray(actual, dtype=np.float64)
    return actual.shape == np.shape(expected) and bool(np.allclose(actual, expected, rtol=rtol, atol=atol))


# Exercise 1 ---------------------------------------------------------------------------------

_HORNER_CASES = (
    (np.array([2.0, -3.0, 0.5, 1.0], np.float32), np.array([-1.5, 0.0, 0.7, 2.0], np.float32)),
    (np.array([1.0, 0.0, -2.0, 0.0, 3.0, -1.0], np.float32), np.linspace(-1, 1, 7, dtype=np.float32)),
    (np.array([4.0], np.float32), np.array([3.0, -2.0], np.float32)),
)


@exercise_checker("Horner's rule with fori_loop")
def check_horner(horner) -> None:
    """`horner(coeffs, x)` evaluates the polynomial `coeffs` (highest degree first) at `x`."""
    for coeffs, x in _HORNER_CASES:
        expected = np.polyval(coeffs.astype(np.float64), x.astype(np.float64))
        actual = jax.jit(horner)(jnp.asarray(coeffs), jnp.asarray(x))
        require(
            np.shape(actual) == x.shape,
            f"for x of shape {x.shape} the result should have shape {x.shape}, got {np.shape(actual)}.",
        )
        if not _close(actual, expected):
            reversed_ = np.polyval(coeffs[::-1].astype(np.float64), x.astype(np.float64))
            require(
                not _close(actual, reversed_),
                "the coefficients come highest degree first, as in np.polyval: "
                "start from coeffs[0], not coeffs[-1].",
            )
            require(
                False,
                f"for coeffs={coeffs.tolist()} and x={np.round(x.astype(np.float64), 4).tolist()} expected {expected.round(4).tolist()}, "
                f"got {np.asarray(actual).round(4).tolist()}. Does the loop visit every coefficient, "
                "from i = 0 to len(coeffs) - 1, computing result * x + coeffs[i]?",
            )
    text = _jaxpr_text(
        horner, jnp.asarray(_HORNER_CASES[1][0]), jnp.asarray(_HORNER_CASES[1][1]),
        hint="the function must trace with abstract inputs",
    )
    require(
        "scan[" in text or "while[" in text,
        "the values are right, but the jaxpr contains no loop: a Python for loop was unrolled at "
        "trace time. Use jax.lax.fori_loop(0, len(coeffs), body, init).",
    )


# Exercise 2 ---------------------------------------------------------------------------------


def _ewma_reference(xs: np.ndarray, alpha: float, *, swap: bool = False) -> np.ndarray:
    out = np.empty(len(xs))
    smoothed = float(xs[0])
    for t, x in enumerate(xs.astype(np.float64)):
        if swap:
            smoothed = alpha * smoothed + (1 - alpha) * x
        else:
            smoothed = alpha * x + (1 - alpha) * smoothed
        out[t] = smoothed
    return out


@exercise_checker("exponential moving average with scan")
def check_ewma(ewma) -> None:
    """`ewma(xs, alpha)` returns every s_t = alpha * x_t + (1 - alpha) * s_{t-1}, with s_0 = x_0."""
    rng = np.random.default_rng(3)
    xs = np.cumsum(rng.normal(size=40)).astype(np.float32)
    for alpha in (0.3, 0.8):
        expected = _ewma_reference(xs, alpha)
        actual = jax.jit(ewma)(jnp.asarray(xs), jnp.float32(alpha))
        require(
            np.shape(actual) == xs.shape,
            f"expected one smoothed value per input, shape {xs.shape}, got shape {np.shape(actual)}. "
            "Return the stacked outputs ys of lax.scan, not only the final carry.",
        )
        if not _close(actual, expected, rtol=1e-4, atol=1e-4):
            actual = np.asarray(actual, dtype=np.float64)
            require(
                not np.allclose(actual[1:], expected[:-1], rtol=1e-4, atol=1e-4),
                "the outputs lag one step behind: at step t, emit the updated average s_t, "
                "not the carry you received (s_{t-1}).",
            )
            require(
                not _close(actual, _ewma_reference(xs, alpha, swap=True), rtol=1e-4, atol=1e-4),
                "alpha weighs the new observation: s_t = alpha * x_t + (1 - alpha) * s_{t-1}.",
            )
            require(
                False,
                f"with alpha={alpha} the first values should be {expected[:3].round(4).tolist()}, "
                f"got {actual[:3].round(4).tolist()}. Start the carry at xs[0] (so s_0 = x_0).",
            )
    text = _jaxpr_text(ewma, jnp.asarray(xs), jnp.float32(0.5), hint="the function must trace")
    require(
        "scan[" in text,
        "the values are right, but the jaxpr contains no scan: the loop was unrolled at trace time. "
        "Use jax.lax.scan(step, xs[0], xs).",
    )


# Exercise 3 ---------------------------------------------------------------------------------


def _soft_ramp_reference(x: float) -> tuple[float, float]:
    """Value and derivative of the exercise's piecewise function."""
    if x < 0:
        return 0.0, 0.0
    if x < 1:
        return x**2 / 2, x
    return 2 * math.sqrt(x) - 1.5, 1 / math.sqrt(x)


_SOFT_RAMP_POINTS = (-2.0, -0.5, 0.0, 0.3, 0.9, 1.0, 2.5, 9.0)


@exercise_checker("a differentiable piecewise function with switch")
def check_soft_ramp(soft_ramp) -> None:
    """`soft_ramp(x)` for a scalar x: 0, then x**2 / 2 on [0, 1), then 2 sqrt(x) - 3/2 from 1 on."""
    hint = "a Python if/elif on a traced value cannot work under jit or grad: choose the branch with lax.switch"
    _jaxpr_text(soft_ramp, jnp.float32(0.5), hint=hint)
    value = jax.jit(soft_ramp)
    slope = jax.jit(jax.grad(soft_ramp))
    for x in _SOFT_RAMP_POINTS:
        expected_value, expected_slope = _soft_ramp_reference(x)
        actual_value = value(jnp.float32(x))
        require(
            np.shape(actual_value) == (),
            f"soft_ramp of a scalar should be a scalar, got shape {np.shape(actual_value)}.",
        )
        require(
            _close(actual_value, expected_value),
            f"soft_ramp({x}) should be {expected_value:.4f}, got {float(actual_value):.4f}. "
            "Check the order of the branches against the index you compute.",
        )
    for x in _SOFT_RAMP_POINTS:
        expected_value, expected_slope = _soft_ramp_reference(x)
        actual_slope = float(slope(jnp.float32(x)))
        require(
            not math.isnan(actual_slope),
            f"the gradient at x={x} is NaN. jnp.where evaluates every branch, and the derivative of "
            "sqrt at a negative number (or at 0) is NaN or inf, which poisons the gradient even where "
            "that branch is not selected. With lax.switch only the chosen branch is differentiated.",
        )
        require(
            _close(actual_slope, expected_slope),
            f"the gradient at x={x} should be {expected_slope:.4f}, got {actual_slope:.4f}.",
        )
    text = _jaxpr_text(soft_ramp, jnp.float32(0.5), hint=hint)
    require(
        "cond[" in text,
        "values and gradients are right, but the jaxpr contains no cond: the exercise asks for "
        "lax.switch (or lax.cond), which runs only the chosen branch.",
    )


# Exercise 4 ---------------------------------------------------------------------------------

_KEPLER_CASES = tuple(
    (float(mean), float(ecc))
    for ecc in (0.0, 0.2, 0.5, 0.9)
    for mean in np.linspace(0.1, 2 * np.pi - 0.1, 9)
)


@exercise_checker("Kepler's equation with while_loop")
def check_kepler(solve_kepler) -> None:
    """`solve_kepler(M, e)` returns `(E, n_iter)` with E - e sin E = M, stopping at a tolerance."""
    hint = "a Python while on a traced value cannot work under jit: use lax.while_loop(cond, body, init)"
    text = _jaxpr_text(solve_kepler, jnp.float32(1.0), jnp.float32(0.5), hint=hint)
    solve = jax.jit(solve_kepler)
    for mean, ecc in _KEPLER_CASES:
        result = solve(jnp.float32(mean), jnp.float32(ecc))
        require(
            isinstance(result, (tuple, list)) and len(result) == 2,
            "return a pair (E, n_iter): the eccentric anomaly and the number of Newton steps taken.",
        )
        anomaly, n_iter = result
        require(np.shape(anomaly) == (), f"E should be a scalar, got shape {np.shape(anomaly)}.")
        residual = float(anomaly - ecc * jnp.sin(anomaly) - mean)
        require(
            abs(residual) < 1e-5,
            f"for M={mean:.3f}, e={ecc} your E={float(anomaly):.6f} leaves E - e sin E - M = "
            f"{residual:.2e}. Does the loop keep going until |step| < tol?",
        )
        n_iter = int(n_iter)
        require(
            1 <= n_iter <= 20,
            f"for M={mean:.3f}, e={ecc} the loop reports {n_iter} steps; Newton's method needs fewer "
            "than 10 here. Stop as soon as |step| < tol (and count the steps in the carry).",
        )
    require(
        "while[" in text,
        "the answers are right, but the jaxpr contains no while loop: the number of Newton steps "
        "should depend on the data, which is what lax.while_loop is for.",
    )
