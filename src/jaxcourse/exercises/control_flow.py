"""Checkers for the exercises of the chapter 'Loops and branches with lax control flow'."""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np

from ..checks import (
    call_answer,
    call_eager_and_jitted,
    close,
    exercise_checker,
    require,
    require_array,
)
from ._jaxpr import equations, primitive_names, traced_program

TOL, MAX_ITER = 1e-6, 50
"""The chapter's constants for Exercise 4 (defined in its while_loop section)."""


# Exercise 1 ---------------------------------------------------------------------------------

_HORNER_CASES = (
    (np.array([2.0, -3.0, 0.5, 1.0], np.float32), np.array([-1.5, 0.0, 0.7, 2.0], np.float32)),
    (np.array([1.0, 0.0, -2.0, 0.0, 3.0, -1.0], np.float32), np.linspace(-1, 1, 7, dtype=np.float32)),
    (np.array([4.0], np.float32), np.array([3.0, -2.0], np.float32)),  # a constant: one coefficient
    (np.array([0.0, 0.0, 1.5], np.float32), np.array([0.0, 5.0], np.float32)),  # leading zeros, x = 0
)


@exercise_checker("Horner's rule with fori_loop")
def check_horner(horner) -> None:
    """`horner(coeffs, x)` evaluates the polynomial `coeffs` (highest degree first) at `x`, with a
    loop (fori_loop), eagerly and under jit."""
    for coeffs, x in _HORNER_CASES:
        expected = np.polyval(coeffs.astype(np.float64), x.astype(np.float64))
        for how, actual in call_eager_and_jitted(horner, jnp.asarray(coeffs), jnp.asarray(x), what="horner"):
            actual = require_array(actual, x.shape, what=f"horner{how}", expected="one value per entry of x")
            if close(actual, expected, rtol=1e-5, atol=1e-5):
                continue
            reversed_ = np.polyval(coeffs[::-1].astype(np.float64), x.astype(np.float64))
            require(
                not close(actual, reversed_, rtol=1e-5, atol=1e-5),
                "the coefficients come highest degree first, as in np.polyval: "
                "start from coeffs[0], not coeffs[-1].",
            )
            require(
                False,
                f"for coeffs={coeffs.tolist()} and x={np.round(x.astype(np.float64), 4).tolist()}{how} expected "
                f"{expected.round(4).tolist()}, got {actual.round(4).tolist()}. Does the loop visit every "
                "coefficient, from i = 0 to len(coeffs) - 1, computing result * x + coeffs[i]?",
            )
    names = primitive_names(traced_program(horner, *map(jnp.asarray, _HORNER_CASES[1]), what="horner"))
    require(
        "scan" in names or "while" in names or "polynomial" not in names,
        "the values are right, but you called a library routine: jnp.polyval traces to one "
        "`polynomial` primitive, which XLA evaluates for you. The exercise asks you to write Horner's "
        "loop: jax.lax.fori_loop(0, len(coeffs), body, init).",
    )
    require(
        "scan" in names or "while" in names,
        "the values are right, but the jaxpr contains no loop: a Python for loop is unrolled at trace "
        "time, one multiply-add per coefficient. Use jax.lax.fori_loop(0, len(coeffs), body, init).",
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


def _ewma_hint(actual: np.ndarray, xs: np.ndarray, alpha: float, expected: np.ndarray) -> str:
    """The hint naming the mistake that explains a wrong moving average."""
    if len(xs) > 1 and close(actual[1:], expected[:-1], rtol=1e-4, atol=1e-4):
        return ("the outputs lag one step behind: at step t, emit the updated average s_t, not the "
                "carry you received (s_{t-1}).")
    if close(actual, _ewma_reference(xs, alpha, swap=True), rtol=1e-4, atol=1e-4):
        return "alpha weighs the new observation: s_t = alpha * x_t + (1 - alpha) * s_{t-1}."
    return (f"with alpha={alpha} the first values should be {expected[:3].round(4).tolist()}, got "
            f"{actual[:3].round(4).tolist()}. Start the carry at xs[0] (so s_0 = x_0).")


@exercise_checker("exponential moving average with scan")
def check_ewma(ewma) -> None:
    """`ewma(xs, alpha)` returns every s_t = alpha * x_t + (1 - alpha) * s_{t-1}, with s_0 = x_0,
    from a lax.scan, eagerly and under jit (alpha traced)."""
    rng = np.random.default_rng(3)
    series = np.cumsum(rng.normal(size=40)).astype(np.float32)
    # alpha = 1 keeps the series, alpha = 0 repeats x_0; a series of one value is the shortest.
    cases = [(series, 0.3), (series, 0.8), (series, 1.0), (series, 0.0), (series[:1], 0.5)]
    for xs, alpha in cases:
        expected = _ewma_reference(xs, alpha)
        for how, actual in call_eager_and_jitted(ewma, jnp.asarray(xs), jnp.float32(alpha), what="ewma"):
            require(
                not (isinstance(actual, (tuple, list)) and len(actual) == 2),
                "you returned a pair, probably lax.scan's (final carry, ys): return only ys, the "
                f"stacked outputs, one smoothed value per input (shape {xs.shape}).",
            )
            actual = require_array(
                actual, xs.shape, what=f"ewma{how}", expected="one smoothed value per input: the stacked outputs ys of lax.scan, not only the final carry"
            )
            require(
                close(actual, expected, rtol=1e-4, atol=1e-4),
                f"for {len(xs)} values and alpha={alpha}{how}: " + _ewma_hint(actual, xs, alpha, expected),
            )
    names = primitive_names(traced_program(ewma, jnp.asarray(series), jnp.float32(0.5), what="ewma"))
    require(
        "scan" in names,
        "the values are right, but the jaxpr contains no scan: the loop was unrolled at trace time "
        "(or computed without a loop). Use jax.lax.scan(step, xs[0], xs).",
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
    """`soft_ramp(x)` for a scalar x: 0, then x**2 / 2 on [0, 1), then 2 sqrt(x) - 3/2 from 1 on;
    values eagerly and under jit, gradients under jit, and a cond in the jaxpr."""
    names = primitive_names(traced_program(soft_ramp, jnp.float32(0.5), what="soft_ramp"))
    slope = jax.jit(jax.grad(soft_ramp))
    for x in _SOFT_RAMP_POINTS:
        expected_value, expected_slope = _soft_ramp_reference(x)
        for how, actual in call_eager_and_jitted(soft_ramp, jnp.float32(x), what="soft_ramp"):
            actual = require_array(actual, (), what=f"soft_ramp({x}){how}", expected="a scalar")
            require(
                close(actual, expected_value, rtol=1e-5, atol=1e-5),
                f"soft_ramp({x}){how} should be {expected_value:.4f}, got {float(actual):.4f}. "
                "Check the order of the branches against the index you compute (at x = 0 and x = 1 "
                "the next branch starts).",
            )
    for x in _SOFT_RAMP_POINTS:
        expected_value, expected_slope = _soft_ramp_reference(x)
        actual_slope = float(call_answer(slope, jnp.float32(x), what="jax.jit(jax.grad(soft_ramp))"))
        require(
            not math.isnan(actual_slope),
            f"the gradient at x={x} is NaN. jnp.where evaluates every branch, and the derivative of "
            "sqrt at a negative number (or at 0) is NaN or inf, which poisons the gradient even where "
            "that branch is not selected. With lax.switch only the chosen branch is differentiated.",
        )
        require(
            close(actual_slope, expected_slope, rtol=1e-5, atol=1e-5),
            f"the gradient at x={x} should be {expected_slope:.4f}, got {actual_slope:.4f}.",
        )
    require(
        "cond" in names,
        "values and gradients are right, but the jaxpr contains no cond: the exercise asks for "
        "lax.switch (or lax.cond), which runs only the chosen branch.",
    )


# Exercise 4 ---------------------------------------------------------------------------------


def _newton_steps(mean: float, ecc: float) -> tuple[int, float, float]:
    """In float64: the number of Newton steps until |step| <= TOL, the last step, the one before."""
    anomaly, previous, n_iter = mean, math.inf, 0
    while True:
        step = (anomaly - ecc * math.sin(anomaly) - mean) / (1 - ecc * math.cos(anomaly))
        anomaly, n_iter = anomaly - step, n_iter + 1
        if abs(step) <= TOL or n_iter == MAX_ITER:
            return n_iter, abs(step), previous
        previous = abs(step)


def _kepler_cases() -> tuple[tuple[float, float, int], ...]:
    """(M, e, exact number of steps) for cases whose count float32 rounding cannot change: the last
    step far below TOL, the one before far above."""
    cases = []
    for ecc in (0.0, 0.2, 0.5, 0.9):
        for mean in np.linspace(0.1, 2 * np.pi - 0.1, 9):
            n_iter, last, previous = _newton_steps(float(mean), ecc)
            if last < TOL / 10 and previous > 100 * TOL:
                cases.append((float(mean), ecc, n_iter))
    return tuple(cases)


_KEPLER_CASES = _kepler_cases()
_NOT_CONVERGING = (1e5, 0.5)
"""M = 1e5 in float32: rounding keeps every Newton step above TOL, so the loop must stop at MAX_ITER."""


def _literals(jaxpr) -> set:
    """The values of the scalar constants in `jaxpr` (a ClosedJaxpr), literal or closed over, and
    in the jaxprs nested in it."""
    values = {float(c) for c in getattr(jaxpr, "consts", ()) if np.ndim(c) == 0}
    for eqn in equations(jaxpr):
        for var in eqn.invars:
            value = getattr(var, "val", None)
            if value is not None and np.ndim(value) == 0:
                values.add(float(value))
    return values


def _kepler_pair(result, how: str):
    require(
        isinstance(result, (tuple, list)) and len(result) == 2,
        f"solve_kepler{how} should return a pair (E, n_iter): the eccentric anomaly and the number "
        f"of Newton steps taken; got {type(result).__name__}"
        + (f" of {len(result)} items." if isinstance(result, (tuple, list)) else "."),
    )
    anomaly = require_array(result[0], (), what=f"E{how}", expected="the eccentric anomaly, a scalar")
    n_iter = require_array(result[1], (), what=f"n_iter{how}", expected="the number of steps, a scalar")
    return float(anomaly), int(n_iter)


@exercise_checker("Kepler's equation with while_loop")
def check_kepler(solve_kepler) -> None:
    """`solve_kepler(M, e)` returns `(E, n_iter)` with E - e sin E = M, stopping when a Newton step
    is below TOL or after MAX_ITER steps; the exact count is checked, eagerly and under jit."""
    jaxpr = traced_program(solve_kepler, jnp.float32(1.0), jnp.float32(0.5), what="solve_kepler")
    for mean, ecc, steps in _KEPLER_CASES:
        for how, result in call_eager_and_jitted(solve_kepler, jnp.float32(mean), jnp.float32(ecc), what="solve_kepler"):
            anomaly, n_iter = _kepler_pair(result, how)
            residual = anomaly - ecc * math.sin(anomaly) - mean
            require(
                abs(residual) < 1e-5,
                f"for M={mean:.3f}, e={ecc}{how} your E={anomaly:.6f} leaves E - e sin E - M = "
                f"{residual:.2e}. Does the loop keep going until |step| < TOL?",
            )
            require(
                n_iter == steps,
                f"for M={mean:.3f}, e={ecc}{how} Newton's method takes exactly {steps} steps until "
                f"|step| < TOL, and you report {n_iter}"
                + (": off by one. Start the counter at 0 and add 1 in each step." if abs(n_iter - steps) == 1
                   else ". Stop as soon as |step| < TOL, and count every step in the carry."),
            )
    require(
        "while" in primitive_names(jaxpr),
        "the answers are right, but the jaxpr contains no while loop: the number of Newton steps should depend on the data, "
        "which is what lax.while_loop(cond, body, init) is for.",
    )
    cond_jaxpr = next(eqn for eqn in equations(jaxpr) if eqn.primitive.name == "while").params["cond_jaxpr"]
    require(
        {float(MAX_ITER), float(MAX_ITER - 1)} & _literals(cond_jaxpr),
        f"the loop's condition never compares with MAX_ITER = {MAX_ITER}: without that cap, a case "
        "where float32 rounding keeps every step above TOL would loop forever. Stop on "
        "(jnp.abs(step) > TOL) & (n_iter < MAX_ITER).",
    )
    mean, ecc = _NOT_CONVERGING
    for how, result in call_eager_and_jitted(solve_kepler, jnp.float32(mean), jnp.float32(ecc), what="solve_kepler"):
        _, n_iter = _kepler_pair(result, how)
        require(
            n_iter == MAX_ITER,
            f"for M={mean:g}, e={ecc}{how} float32 rounding keeps every Newton step above TOL, so the "
            f"loop must stop at the cap after exactly MAX_ITER = {MAX_ITER} steps; you report {n_iter}. "
            "Count from 0, add 1 per step, and continue while n_iter < MAX_ITER.",
        )
