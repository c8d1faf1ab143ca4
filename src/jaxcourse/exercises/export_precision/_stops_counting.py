"""Checker of the export and precision chapter's exercise on where counting stops:
`stops_counting(dtype)` returns the smallest whole number N for which N + 1 == N when computed in
`dtype`."""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from ...checks import call_answer, exercise_checker, require

DTYPES = (jnp.float32, jnp.float16, jnp.bfloat16)


def _adds_one(value: int, dtype) -> bool:
    """True when value + 1 != value, both in `dtype` (NumPy, through ml_dtypes)."""
    x = np.asarray(value).astype(dtype)
    return bool(x + np.asarray(1).astype(dtype) != x)


def _expected(dtype) -> int:
    """The smallest whole N with N + 1 == N in `dtype`, found by its property."""
    n = 1
    while _adds_one(n, dtype):
        n *= 2
    return n


@exercise_checker(
    hints=(
        "Start from x = jnp.asarray(1, dtype) and keep doubling while x + 1 != x; compute in "
        "dtype, so that the rounding is dtype's.",
        "Between 2^k and 2^(k+1) a float with m mantissa bits has steps of 2^(k-m): adding 1 "
        "stops changing x once the step is 2, and round-to-even sends N + 1 back to N. Return "
        "int(x), and do not hard-code one dtype's answer.",
    )
)
def check_stops_counting(stops_counting) -> None:
    """Asks for float32, float16 and bfloat16 and checks each answer by the property."""
    answers: dict[str, float] = {}
    for dtype in DTYPES:
        name = jnp.dtype(dtype).name
        got = call_answer(stops_counting, dtype, what="stops_counting")
        try:
            array = np.asarray(got)
        except (TypeError, ValueError):
            array = np.asarray(None)
        require(
            array.ndim == 0
            and (
                jnp.issubdtype(array.dtype, jnp.integer)
                or jnp.issubdtype(array.dtype, jnp.floating)
            ),
            f"stops_counting({name}) should be one whole number, got {type(got).__name__}.",
        )
        value = float(array.astype(np.float64))
        earlier = set(answers.values())
        answers[name] = value
        want = _expected(dtype)
        info = jnp.finfo(dtype)
        if value == want:
            continue
        require(
            value != want + 1,
            f"for {name} you gave {value:.0f} = N + 1, the first whole number {name} cannot "
            f"hold; the question is where counting stops: the N at which N + 1 == N.",
        )
        require(
            value != want / 2,
            f"for {name} you gave {value:.0f} = 1/eps: there the gap between {name} numbers is "
            "exactly 1, so adding 1 still counts. It stops one doubling later.",
        )
        require(
            value != float(info.max),
            f"for {name} you gave its largest value: that is where it overflows, not where "
            "adding 1 stops changing a number.",
        )
        require(
            value not in earlier,
            f"you gave {value:.0f} for {name} too: each dtype stops at its own number; compute "
            "it in dtype instead of typing one dtype's answer.",
        )
        require(
            not (value.is_integer() and value > want),
            f"for {name} you gave {value:.0f}, but counting stops at a smaller whole number "
            "already: find the smallest N with N + 1 == N (keep doubling from 1).",
        )
        require(
            False,
            f"for {name} you gave {value:g}: below the answer, where adding 1 still changes a "
            f"whole number in {name}. Compute x + 1 == x in dtype itself.",
        )
