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
    (
        np.array([1.0, 0.0, -2.0, 0.0, 3.0, -1.0], np.float32),
        np.linspace(-1, 1, 7, dtype=np.float32),
    ),
    (np.array([4.0], np.float32), np.array([3.0, -2.0], np.float32)),  # a constant: one coefficient
    (
        np.array([0.0, 0.0, 1.5], np.float32),
        np.array([0.0, 5.0], np.float32),
    ),  # leading zeros, x = 0
)


@exercise_checker("Horner's rule with fori_loop")
def check_horner(horner) -> None:
    """`horner(coeffs, x)` evaluates the polynomial `coeffs` (highest degree first) at `x`, with a
    loop (fori_loop), eagerly and under jit."""
    for coeffs, x in _HORNER_CASES:
        expected = np.polyval(coeffs.astype(np.float64), x.astype(np.float64))
        for how, actual in call_eager_and_jitted(
            horner, jnp.asarray(coeffs), jnp.asarray(x), what="horner"
        ):
            actual = require_array(
                actual, x.shape, what=f"horner{how}", expected="one value per entry of x"
            )
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
    names = primitive_names(
        traced_program(horner, *map(jnp.asarray, _HORNER_CASES[1]), what="horner")
    )
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
    """In float64: the moving average the exercise asks for. A gap (NaN) keeps the last value,
    before the first reading it is NaN, the first reading starts it; `swap` exchanges the weights."""
    out = np.full(len(xs), np.nan)
    smoothed = math.nan
    for t, x in enumerate(xs.astype(np.float64)):
        if math.isnan(x):
            pass
        elif math.isnan(smoothed):
            smoothed = x
        elif swap:
            smoothed = alpha * smoothed + (1 - alpha) * x
        else:
            smoothed = alpha * x + (1 - alpha) * smoothed
        out[t] = smoothed
    return out


def _plain_ewma(xs: np.ndarray, alpha: float) -> np.ndarray:
    """The moving average that knows nothing of gaps, started at xs[0] (NaN spreads from a gap)."""
    out = np.empty(len(xs))
    smoothed = float(xs[0])
    for t, x in enumerate(xs.astype(np.float64)):
        smoothed = alpha * x + (1 - alpha) * smoothed
        out[t] = smoothed
    return out


def _same(actual: np.ndarray, expected: np.ndarray) -> bool:
    """Equal within float32 rounding, NaN where and only where NaN is expected."""
    return bool(np.array_equal(np.isnan(actual), np.isnan(expected))) and close(
        np.nan_to_num(actual), np.nan_to_num(expected), rtol=1e-4, atol=1e-4
    )


def _ewma_hint(actual: np.ndarray, xs: np.ndarray, alpha: float, expected: np.ndarray) -> str:
    """The hint naming the property a wrong moving average breaks."""
    gap = np.isnan(xs)
    started = ~np.isnan(expected)
    if len(xs) > 1 and _same(actual[1:], expected[:-1]):
        return (
            "the outputs lag one step behind: at step t, emit the updated average s_t, not the "
            "carry you received (s_{t-1})."
        )
    if _same(actual, _ewma_reference(xs, alpha, swap=True)):
        return "alpha weighs the new observation: s_t = alpha * x_t + (1 - alpha) * s_{t-1}."
    held = gap & started
    if np.isnan(actual[held]).any() and _same(actual[~held], expected[~held]):
        return (
            "at a gap the average should hold its last value (the value at the step before); "
            "you return NaN there."
        )
    if np.isnan(actual[started]).any():
        first = int(np.flatnonzero(started & np.isnan(actual))[0])
        if gap[0] and np.isnan(actual).all():
            return (
                "the series starts with a gap and every value you return is NaN: the average "
                "cannot start from xs[0] when xs[0] is missing. It starts at the first reading, "
                "wherever that is, so the carry must be able to say 'nothing seen yet'."
            )
        return (
            f"your average is NaN at step {first}, after the first reading: a gap (NaN) must not "
            "poison the average. At a gap, keep the carry unchanged (jnp.where on jnp.isnan(x)); "
            "an arithmetic update with a NaN reading gives NaN forever after."
        )
    if not np.isnan(actual[~started]).all():
        return (
            "before the first reading there is nothing to average: the values there should be "
            "NaN, not a number (is a gap read as 0, or is the carry started at 0?)."
        )
    if _same(actual, _plain_ewma(np.nan_to_num(xs), alpha)) or _same(
        actual, _ewma_reference(np.where(gap & started, 0.0, xs), alpha)
    ):
        return (
            "a gap is not a reading of 0: replacing NaN by 0 pulls the average towards 0. At a gap, "
            "keep the last average."
        )
    if not _same(actual[held], expected[held]):
        return (
            "at a gap the average should hold its last value (the value at the step before), "
            "and it does not."
        )
    return (
        f"at the readings your values differ from the moving average of the readings with the gaps "
        f"removed: expected {np.round(expected[:6], 4).tolist()} at the start, got "
        f"{np.round(actual[:6], 4).tolist()}."
    )


def _ewma_cases() -> list[tuple[np.ndarray, float]]:
    """Series without gaps, then with gaps inside, a leading gap, a trailing run of gaps, and only
    gaps; alpha = 1 keeps the readings, alpha = 0 holds the first reading."""
    rng = np.random.default_rng(3)
    series = np.cumsum(rng.normal(size=40)).astype(np.float32)
    gappy = series.copy()
    gappy[[3, 4, 5, 11, 20, 21, 39]] = np.nan
    leading = gappy.copy()
    leading[:3] = np.nan
    trailing = series.copy()
    trailing[30:] = np.nan
    nothing = np.full(6, np.nan, np.float32)
    return [
        (series, 0.3),
        (series[:1], 0.5),
        (gappy, 0.3),
        (gappy, 0.0),
        (trailing, 0.5),
        (leading, 0.3),
        (leading, 1.0),
        (nothing, 0.5),
    ]


_EWMA_CASES = _ewma_cases()


@exercise_checker("a moving average over gaps with scan")
def check_ewma(ewma) -> None:
    """`ewma(xs, alpha)` returns one smoothed value per entry of xs: the exponentially weighted
    moving average of the readings, holding its value over gaps (NaN) and NaN before the first
    reading; checked by these properties eagerly and under jit (alpha traced), for a scan in the
    jaxpr and for a program whose size does not grow with the series."""
    short, long = (jnp.asarray(_EWMA_CASES[2][0][:n]) for n in (8, 40))
    programs = [
        primitive_names(traced_program(ewma, xs, jnp.float32(0.5), what="ewma"))
        for xs in (short, long)
    ]
    names, sizes = programs[1], [len(program) for program in programs]
    require(
        "scan" in names and sizes[0] == sizes[1],
        "the loop is unrolled at trace time: the jaxpr "
        + (
            "contains no scan"
            if "scan" not in names
            else f"grows with the series ({sizes[0]} equations for 8 values, {sizes[1]} for 40)"
        )
        + ". Write the step once and let jax.lax.scan run it over xs.",
    )
    for xs, alpha in _EWMA_CASES:
        expected = _ewma_reference(xs, alpha)
        for how, actual in call_eager_and_jitted(
            ewma, jnp.asarray(xs), jnp.float32(alpha), what="ewma"
        ):
            require(
                not (isinstance(actual, (tuple, list)) and len(actual) == 2),
                "you returned a pair, probably lax.scan's (final carry, ys): return only the stacked "
                f"outputs, one smoothed value per input (shape {xs.shape}).",
            )
            actual = require_array(
                actual,
                xs.shape,
                what=f"ewma{how}",
                expected="one smoothed value per input: the stacked outputs of lax.scan, not only the final carry",
            )
            gaps = int(np.isnan(xs).sum())
            require(
                _same(actual, expected),
                f"for {len(xs)} values with {gaps} gap(s) and alpha={alpha}{how}: "
                + _ewma_hint(actual, xs, alpha, expected),
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
        actual_slope = float(
            call_answer(slope, jnp.float32(x), what="jax.jit(jax.grad(soft_ramp))")
        )
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
    anomaly = require_array(
        result[0], (), what=f"E{how}", expected="the eccentric anomaly, a scalar"
    )
    n_iter = require_array(
        result[1], (), what=f"n_iter{how}", expected="the number of steps, a scalar"
    )
    return float(anomaly), int(n_iter)


@exercise_checker("Kepler's equation with while_loop")
def check_kepler(solve_kepler) -> None:
    """`solve_kepler(M, e)` returns `(E, n_iter)` with E - e sin E = M, stopping when a Newton step
    is below TOL or after MAX_ITER steps; the exact count is checked, eagerly and under jit."""
    jaxpr = traced_program(solve_kepler, jnp.float32(1.0), jnp.float32(0.5), what="solve_kepler")
    for mean, ecc, steps in _KEPLER_CASES:
        for how, result in call_eager_and_jitted(
            solve_kepler, jnp.float32(mean), jnp.float32(ecc), what="solve_kepler"
        ):
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
                + (
                    ": off by one. Start the counter at 0 and add 1 in each step."
                    if abs(n_iter - steps) == 1
                    else ". Stop as soon as |step| < TOL, and count every step in the carry."
                ),
            )
    require(
        "while" in primitive_names(jaxpr),
        "the answers are right, but the jaxpr contains no while loop: the number of Newton steps should depend on the data, "
        "which is what lax.while_loop(cond, body, init) is for.",
    )
    cond_jaxpr = next(eqn for eqn in equations(jaxpr) if eqn.primitive.name == "while").params[
        "cond_jaxpr"
    ]
    require(
        {float(MAX_ITER), float(MAX_ITER - 1)} & _literals(cond_jaxpr),
        f"the loop's condition never compares with MAX_ITER = {MAX_ITER}: without that cap, a case "
        "where float32 rounding keeps every step above TOL would loop forever. Stop on "
        "(jnp.abs(step) > TOL) & (n_iter < MAX_ITER).",
    )
    mean, ecc = _NOT_CONVERGING
    for how, result in call_eager_and_jitted(
        solve_kepler, jnp.float32(mean), jnp.float32(ecc), what="solve_kepler"
    ):
        _, n_iter = _kepler_pair(result, how)
        require(
            n_iter == MAX_ITER,
            f"for M={mean:g}, e={ecc}{how} float32 rounding keeps every Newton step above TOL, so the "
            f"loop must stop at the cap after exactly MAX_ITER = {MAX_ITER} steps; you report {n_iter}. "
            "Count from 0, add 1 per step, and continue while n_iter < MAX_ITER.",
        )
    _check_kepler_gradient(solve_kepler)


def _root64(mean: float, ecc: float) -> float:
    """E with E - e sin E = M, by Newton's method in float64 to full precision."""
    anomaly = mean
    for _ in range(100):
        step = (anomaly - ecc * math.sin(anomaly) - mean) / (1 - ecc * math.cos(anomaly))
        anomaly -= step
        if abs(step) < 1e-15:
            break
    return anomaly


_KEPLER_GRADIENT_CASES = (
    (0.0, 0.9),
    (0.0, 0.0),
    (0.5, 0.2),
    (1.0, 0.5),
    (2.5, 0.9),
    (4.0, 0.7),
    (5.9, 0.5),
)
"""(M, e): M = 0 with e = 0.9 is the steepest point (dE/dM = 10), e = 0 the flattest (dE/dM = 1)."""

_THROUGH_THE_LOOP = (
    "jax.grad cannot go through lax.while_loop: reverse mode would have to replay an unknown number "
    "of iterations. It does not need to: E is a root of g(E, M) = E - e sin E - M, and the implicit "
    "function theorem gives dE/dM from g at the root alone. Wrap your solver in jax.lax.custom_root "
    "(the autodiff chapter's section on implicit differentiation shows how), or build that "
    "derivative yourself."
)


def _loops(jaxpr) -> int:
    """How many loops (while and scan equations, nested ones included) `jaxpr` runs."""
    return sum(name in ("while", "scan") for name in primitive_names(jaxpr))


def _check_kepler_gradient(solve_kepler) -> None:
    """jax.grad of E in M, eagerly and under jit, against a float64 finite difference, with no loop
    in the gradient's program beyond the solver's own."""
    anomaly_of = lambda mean, ecc: solve_kepler(mean, ecc)[0]  # noqa: E731
    slope = jax.grad(anomaly_of)
    hints = ((ValueError, "Reverse-mode differentiation does not work", _THROUGH_THE_LOOP),)
    primal = traced_program(anomaly_of, jnp.float32(1.0), jnp.float32(0.5), what="solve_kepler")
    backward = traced_program(
        slope, jnp.float32(1.0), jnp.float32(0.5), what="jax.grad of E in M", hints=hints
    )
    require(
        _loops(backward) <= _loops(primal),
        f"jax.grad of E runs {_loops(backward)} loops where E alone needs "
        f"{_loops(primal)}: your gradient differentiates through the Newton iterations (a fixed-length loop, or "
        "forward mode through the while_loop). The derivative of a root needs no iterations: "
        "use the implicit function theorem at the root (jax.lax.custom_root).",
    )
    runs = [
        ("", slope, _KEPLER_GRADIENT_CASES[:3]),
        (" under jax.jit", jax.jit(slope), _KEPLER_GRADIENT_CASES),
    ]
    for how, gradient, cases in runs:
        for mean, ecc in cases:
            actual = require_array(
                call_answer(
                    gradient,
                    jnp.float32(mean),
                    jnp.float32(ecc),
                    what=f"jax.grad of E in M{how}",
                    hints=hints,
                ),
                (),
                what=f"dE/dM{how}",
                expected="a scalar",
            )
            step = 1e-5
            expected = (_root64(mean + step, ecc) - _root64(mean - step, ecc)) / (2 * step)
            if close(actual, expected, rtol=1e-4, atol=1e-4):
                continue
            partial_e = 1 - ecc * math.cos(_root64(mean, ecc))
            require(
                not close(actual, partial_e, rtol=1e-4, atol=1e-4),
                f"at M={mean}, e={ecc}{how} your dE/dM is {float(actual):.5f}, which is dg/dE = 1 - e cos E, "
                "not its inverse: the tangent solve must solve dg/dE * dE = dM for dE (divide, as "
                "tangent_solve(g, y) = y / g(1.0) does).",
            )
            require(
                not close(actual, -expected, rtol=1e-4, atol=1e-4),
                f"at M={mean}, e={ecc}{how} your dE/dM has the wrong sign ({float(actual):.5f}, a finite "
                f"difference gives {expected:.5f}): E grows with M.",
            )
            require(
                False,
                f"at M={mean}, e={ecc}{how} your dE/dM is {float(actual):.5f}, and a finite difference of "
                f"the root gives {expected:.5f}. Differentiate E - e sin E = M with respect to M at the "
                "root: (1 - e cos E) dE/dM = 1.",
            )
