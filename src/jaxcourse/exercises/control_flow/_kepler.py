"""Checker for the control-flow chapter's exercise on Kepler's equation with while_loop, and its
derivative by the implicit function theorem."""

from __future__ import annotations

import math
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from ...checks import (
    call_answer,
    call_eager_and_jitted,
    close,
    exercise_checker,
    require,
    require_array,
)
from .._jaxpr import equations, primitive_names, traced_program

TOL, MAX_ITER = 1e-6, 50
"""Constants of the exercise on Kepler's equation, from the chapter's while_loop section."""


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


def _steps_of_variant(mean: float, ecc: float, *, start: float, on_residual: bool) -> int:
    """In float64: how many steps a solver started at `start` takes, stopping on the Newton step
    or, with `on_residual`, on |E - e sin E - M| <= TOL tested before each step."""
    anomaly, n_iter = start, 0
    while n_iter < MAX_ITER:
        residual = anomaly - ecc * math.sin(anomaly) - mean
        if on_residual and abs(residual) <= TOL:
            return n_iter
        step = residual / (1 - ecc * math.cos(anomaly))
        anomaly, n_iter = anomaly - step, n_iter + 1
        if not on_residual and abs(step) <= TOL:
            return n_iter
    return n_iter


def _count_hint(solve_kepler) -> str:
    """What the learner's step counts, over every case, match: another start or another stopping
    rule (in at least three cases out of four), or an offset of one; '' when they match none."""
    counts = [
        _kepler_pair(
            call_answer(solve_kepler, jnp.float32(mean), jnp.float32(ecc), what="solve_kepler"),
            "",
        )[1]
        for mean, ecc, _ in _KEPLER_CASES
    ]
    variants: dict[str, dict[str, Any]] = {
        ": your counts are those of Newton's method started at E = 0. The exercise starts it at "
        "E = M (the mean anomaly), which is closer to the root.": dict(
            start=0.0, on_residual=False
        ),
        ": your counts are those of a loop that stops when the residual |E - e sin E - M| is below "
        "TOL. The exercise stops on the Newton step: continue while |step| > TOL, where step is "
        "f(E) / f'(E).": dict(start=None, on_residual=True),
    }
    for hint, options in variants.items():
        expected = [
            _steps_of_variant(
                mean,
                ecc,
                start=mean if options["start"] is None else options["start"],
                on_residual=options["on_residual"],
            )
            for mean, ecc, _ in _KEPLER_CASES
        ]
        # float32 rounding may change a count or two of another design: most cases must match
        if sum(a == b for a, b in zip(counts, expected)) >= 0.75 * len(counts):
            return hint
    offsets = {count - steps for count, (_, _, steps) in zip(counts, _KEPLER_CASES)}
    if offsets in ({1}, {-1}):
        return ": off by one in every case. Start the counter at 0 and add 1 in each step."
    return ""


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


@exercise_checker(
    hints=(
        "Two parts. First the solver: copy the chapter's sqrt_newton and change the Newton step "
        "to f(E) / f'(E) with f(E) = E - e sin E - M, started at E = M, the carry holding "
        "(E, last step, n_iter). Then the derivative: jax.grad cannot go through a while_loop, "
        "so wrap the solver in jax.lax.custom_root (the autodiff chapter's implicit "
        "differentiation section).",
        "Stop on (jnp.abs(step) > TOL) & (n_iter < MAX_ITER), with the counter starting at 0 and "
        "one added per step; the update is E - step, not E + step. Give custom_root the function "
        "f, the guess M, a solver(f, guess) returning (E, n_iter) with has_aux=True, and "
        "tangent_solve = lambda g, y: y / g(1.0), which divides by f'(E). No finite difference, "
        "no fixed-length loop differentiated step by step, and no stop_gradient on the result.",
    )
)
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
                f"{residual:.2e}. "
                + (
                    f"Your loop ran all MAX_ITER = {MAX_ITER} steps and did not converge: E moves "
                    "away from the root. Newton's update is E - f(E) / f'(E), with "
                    "f(E) = E - e sin E - M and f'(E) = 1 - e cos E (E + step walks away)."
                    if n_iter >= MAX_ITER
                    else "Does the loop keep going until |step| < TOL?"
                ),
            )
            if n_iter != steps:
                require(
                    False,
                    f"for M={mean:.3f}, e={ecc}{how} Newton's method takes exactly {steps} steps "
                    f"until |step| < TOL, and you report {n_iter}"
                    + (
                        _count_hint(solve_kepler)
                        or ". Stop as soon as |step| < TOL, and count every step in the carry."
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
        bool({float(MAX_ITER), float(MAX_ITER - 1)} & _literals(cond_jaxpr)),
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
        f"{_loops(primal)}: your gradient runs Newton iterations of its own. Either it "
        "differentiates through the Newton iterations (a fixed-length loop, or forward mode "
        "through the while_loop), or it solves again (a finite difference solves at M + h and "
        "M - h). The derivative of a root needs no iterations: use the implicit function theorem "
        "at the root (jax.lax.custom_root).",
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
                float(actual) != 0.0,
                f"at M={mean}, e={ecc}{how} your dE/dM is exactly 0, and a finite difference of "
                f"the root gives {expected:.5f}: the derivative is cut, by lax.stop_gradient on E "
                "or by a value computed outside JAX. Differentiate the root implicitly "
                "(jax.lax.custom_root) instead of cutting it.",
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
