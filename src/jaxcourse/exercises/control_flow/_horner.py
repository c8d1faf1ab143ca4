"""Checker for the control-flow chapter's Exercise 1: Horner's rule with fori_loop."""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from ...checks import (
    call_eager_and_jitted,
    close,
    exercise_checker,
    require,
    require_array,
)
from .._jaxpr import primitive_names, traced_program

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
