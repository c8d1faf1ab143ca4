"""Checker for the control-flow chapter's Exercise 3: a differentiable piecewise function."""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp

from ...checks import (
    call_answer,
    call_eager_and_jitted,
    close,
    exercise_checker,
    require,
    require_array,
)
from .._jaxpr import primitive_names, traced_program


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
