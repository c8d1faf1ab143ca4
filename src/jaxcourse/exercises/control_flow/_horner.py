"""Checker for the control-flow chapter's exercise on Horner's rule with fori_loop."""

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

_CARRY_CHANGED = (
    TypeError,
    "carry input and carry output must have equal types",
    "the loop's carry changed shape or dtype between iterations (a scalar start such as 0.0 "
    "becomes a vector after result * x). Start it with the shape and dtype of x: "
    "jnp.zeros_like(x).",
)


def _polyval(coeffs: np.ndarray, x: np.ndarray) -> np.ndarray:
    return np.polyval(coeffs.astype(np.float64), x.astype(np.float64))


def _value_hint(actual: np.ndarray, coeffs: np.ndarray, x: np.ndarray) -> str:
    """What a wrong Horner loop computed instead of the polynomial, where it can be named."""
    x64 = x.astype(np.float64)
    expected = _polyval(coeffs, x)
    same = lambda values: close(actual, values, rtol=1e-5, atol=1e-5)  # noqa: E731
    if same(_polyval(coeffs[::-1], x)):
        return (
            "your values are those of the polynomial with its coefficients read lowest degree "
            "first (coeffs[0] as the constant term). They come highest degree first, as in "
            "np.polyval: coeffs[0] multiplies the highest power, and Horner's loop starts with it."
        )
    if same(expected + coeffs[0] * x64 ** len(coeffs)):
        return (
            "you started from coeffs[0] and added coeffs[0] again in the first iteration, so the "
            "leading coefficient counts twice. Start the carry at jnp.zeros_like(x) (or at "
            "coeffs[0] and loop from 1)."
        )
    if len(coeffs) > 1 and same(_polyval(coeffs[:-1], x)):
        return (
            "the loop does not visit every coefficient: your values are those of coeffs[:-1], the "
            "last coefficient (the constant term) is never added. fori_loop(0, coeffs.shape[0], "
            "...) runs i from 0 to coeffs.shape[0] - 1."
        )
    if len(coeffs) > 1 and same(_polyval(coeffs[1:], x)):
        return (
            "the loop does not visit every coefficient: your values are those of coeffs[1:], "
            "coeffs[0] is skipped. fori_loop(0, coeffs.shape[0], ...) runs i from 0."
        )
    if same(-expected):
        return (
            "your values are the negatives of the polynomial's: a sign slip in the step, which is "
            "result * x + coeffs[i]."
        )
    return (
        f"for coeffs={coeffs.tolist()} and x={np.round(x64, 4).tolist()} expected "
        f"{expected.round(4).tolist()}, got {actual.round(4).tolist()}. Does the loop visit every "
        "coefficient, from i = 0 to len(coeffs) - 1, computing result * x + coeffs[i]?"
    )


@exercise_checker(
    hints=(
        "The loop carries one thing, the partial result, with the shape of x. Each iteration i "
        "does what one turn of horner_python's for loop does with c = coeffs[i]; "
        "jax.lax.fori_loop(0, coeffs.shape[0], body, init) calls body(i, result).",
        "Start the carry at jnp.zeros_like(x) (a scalar 0.0 changes the carry's shape when x is a "
        "vector) and let body return result * x + coeffs[i]. Run i over every coefficient, from 0 "
        "to coeffs.shape[0] excluded: coeffs[0] is the coefficient of the highest power.",
    )
)
def check_horner(horner) -> None:
    """`horner(coeffs, x)` evaluates the polynomial `coeffs` (highest degree first) at `x`, with a
    loop (fori_loop), eagerly and under jit."""
    for coeffs, x in _HORNER_CASES:
        expected = _polyval(coeffs, x)
        for how, actual in call_eager_and_jitted(
            horner, jnp.asarray(coeffs), jnp.asarray(x), what="horner", hints=(_CARRY_CHANGED,)
        ):
            actual = require_array(
                actual, x.shape, what=f"horner{how}", expected="one value per entry of x"
            )
            require(
                close(actual, expected, rtol=1e-5, atol=1e-5),
                f"horner{how}: " + _value_hint(actual, coeffs, x),
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
