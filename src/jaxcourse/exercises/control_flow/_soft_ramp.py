"""Checker for the control-flow chapter's exercise on a differentiable piecewise function."""

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

_PIECES = (
    ("x < 0", "0", lambda x: 0.0),
    ("0 <= x < 1", "x**2 / 2", lambda x: x**2 / 2),
    ("x >= 1", "2 sqrt(x) - 3/2", lambda x: 2 * math.sqrt(x) - 1.5 if x >= 0 else math.nan),
)

_BOOL_INDEX = (
    TypeError,
    "Index type must be an integer",
    "lax.switch got a boolean index: in JAX, adding two comparisons such as (x >= 0) + (x >= 1) "
    "gives a bool (True + True is True), not 2. Cast each comparison with .astype(jnp.int32) "
    "before adding.",
)


def _soft_ramp_reference(x: float) -> tuple[float, float]:
    """Value and derivative of the exercise's piecewise function."""
    if x < 0:
        return 0.0, 0.0
    if x < 1:
        return x**2 / 2, x
    return 2 * math.sqrt(x) - 1.5, 1 / math.sqrt(x)


_SOFT_RAMP_POINTS = (-2.0, -0.5, 0.0, 0.3, 0.9, 1.0, 2.5, 9.0)


def _value_hint(x: float, actual: float) -> str:
    """Names the piece whose formula the wrong value matches, or the piece whose formula is off."""
    piece = 0 if x < 0 else 1 if x < 1 else 2
    name, formula, _ = _PIECES[piece]
    for other, (other_name, other_formula, value) in enumerate(_PIECES):
        if other != piece and close(actual, value(x), rtol=1e-5, atol=1e-5):
            return (
                f"that is the formula of the piece {other_name} ({other_formula}), at an x where "
                f"the piece {name} applies. Check the order of the branches against the index you "
                "compute (at x = 0 and x = 1 the next branch starts)."
            )
    return (
        f"x is in the piece {name}, and your value matches none of the three formulas: check the "
        f"formula of the piece {name}, {formula}."
    )


@exercise_checker(
    hints=(
        "Write the three pieces as three functions of x, in the order of the pieces, and compute "
        "from x an integer index that is 0, 1 or 2; jax.lax.switch(index, [f0, f1, f2], x) runs "
        "the chosen one only.",
        "The index counts the thresholds x has passed: 0 below 0, 1 on [0, 1), 2 from 1 on. "
        "Comparisons such as x >= 0 are bools, and in JAX adding two bools gives a bool, not 2: "
        "cast them to jnp.int32 first (and no Python int() or if on x, which fails under jit). "
        "Keep the constant of the last piece, - 3/2, and the 1/2 of the middle one: they make "
        "the pieces meet at x = 1.",
    )
)
def check_soft_ramp(soft_ramp) -> None:
    """`soft_ramp(x)` for a scalar x: 0, then x**2 / 2 on [0, 1), then 2 sqrt(x) - 3/2 from 1 on;
    values eagerly and under jit, gradients under jit, and a cond in the jaxpr."""
    names = primitive_names(
        traced_program(soft_ramp, jnp.float32(0.5), what="soft_ramp", hints=(_BOOL_INDEX,))
    )
    slope = jax.jit(jax.grad(soft_ramp))
    for x in _SOFT_RAMP_POINTS:
        expected_value, expected_slope = _soft_ramp_reference(x)
        for how, actual in call_eager_and_jitted(
            soft_ramp, jnp.float32(x), what="soft_ramp", hints=(_BOOL_INDEX,)
        ):
            actual = require_array(actual, (), what=f"soft_ramp({x}){how}", expected="a scalar")
            require(
                close(actual, expected_value, rtol=1e-5, atol=1e-5),
                f"soft_ramp({x}){how} should be {expected_value:.4f}, got {float(actual):.4f}: "
                + _value_hint(x, float(actual)),
            )
    for x in _SOFT_RAMP_POINTS:
        expected_value, expected_slope = _soft_ramp_reference(x)
        actual_slope = float(
            call_answer(slope, jnp.float32(x), what="jax.jit(jax.grad(soft_ramp))")
        )
        require(
            not math.isnan(actual_slope),
            f"the gradient at x={x} is NaN. "
            + (
                "Your function has a cond, so something outside the branches is the cause: a "
                "value such as jnp.sqrt(x) computed before lax.switch and used inside a branch is "
                "computed, and differentiated, for every x, and the derivative of sqrt at a "
                "negative number is NaN. Compute it inside the branch, from the branch's argument."
                if "cond" in names
                else "jnp.where evaluates every branch, and the derivative of sqrt at a negative "
                "number (or at 0) is NaN or inf, which poisons the gradient even where that branch "
                "is not selected. With lax.switch only the chosen branch is differentiated."
            ),
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
