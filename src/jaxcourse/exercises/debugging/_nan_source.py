"""Checker for the debugging chapter's exercise that finds which operation made a NaN
(jax.debug_nans)."""

from __future__ import annotations

import contextlib
import io
from collections.abc import Callable

import jax
import jax.numpy as jnp

from ...checks import (
    CheckFailed,
    call_answer,
    describe,
    exercise_checker,
    require,
    require_accepts,
)

_JAX_RERUN_NOTE = "Calling the de-optimized version"

_NAN_CASES = [
    # (description, function, input, the primitive that makes the first NaN or None)
    (
        "sum(log(x - 1)) at x = 0.5",
        lambda x: jnp.sum(jnp.log(x - 1.0) * 2.0),
        [2.0, 0.5, 3.0],
        "log",
    ),
    (
        "jit(mean(sqrt(x) + 1)) at x = -1",
        jax.jit(lambda x: jnp.mean(jnp.sqrt(x) + 1.0)),
        [4.0, -1.0],
        "sqrt",
    ),
    ("sum(1 / x) at x = 0, inf but no NaN", lambda x: jnp.sum(1.0 / x), [0.0, 1.0], None),
    ("sum(exp(x)), no NaN", lambda x: jnp.sum(jnp.exp(x)), [0.0, 1.0], None),
    (
        "log(x) * 0, where the NaN survives the product",
        lambda x: jnp.sum(jnp.log(x) * 0.0),
        [-2.0, 1.0],
        "log",
    ),
    ("0 / 0", lambda x: jnp.sum((x - x) / (x - x)), [1.0, 2.0], "div"),
    (
        "sum(1 / x) - sum(1 / x) at x = 0: inf first, then inf - inf",
        lambda x: jnp.sum(1.0 / x) - jnp.sum(1.0 / x),
        [0.0, 1.0],
        "sub",
    ),
]


def _ask_nan_source(nan_source: Callable, fn, x, case: str):
    """The learner's answer for one case; debug_nans is restored whatever happens."""
    was_on = jax.config.jax_debug_nans
    printed = io.StringIO()
    try:
        with contextlib.redirect_stdout(printed):
            answer = call_answer(nan_source, fn, jnp.asarray(x, jnp.float32), what="nan_source")
        left_on = jax.config.jax_debug_nans
    finally:
        jax.config.update("jax_debug_nans", was_on)
        # JAX prints a line each time it re-runs a jitted function to find a NaN; keep the rest.
        print(
            "".join(
                line for line in printed.getvalue().splitlines(True) if _JAX_RERUN_NOTE not in line
            ),
            end="",
        )
    require(
        not left_on or was_on,
        f"after nan_source returned (on {case}), jax_debug_nans was still on: every later operation "
        "would be checked, and slowed down. Use the context manager `with jax.debug_nans(True):`, or "
        "switch the flag off again in a `finally:`.",
    )
    require(
        answer is None or isinstance(answer, str),
        f"on {case}, nan_source should return the primitive's name as a string (e.g. 'log'), or None "
        f"when no NaN appears; got {describe(answer)}. Catch the FloatingPointError that "
        "`with jax.debug_nans(True):` raises and read its message.",
    )
    return answer


def _require_flag_kept_on(nan_source: Callable) -> None:
    """A learner who had switched jax_debug_nans on for a whole test run finds it still on."""
    was_on = jax.config.jax_debug_nans
    printed = io.StringIO()
    try:
        jax.config.update("jax_debug_nans", True)
        with contextlib.redirect_stdout(printed):
            try:
                call_answer(
                    nan_source, jnp.sum, jnp.asarray([1.0, 2.0], jnp.float32), what="nan_source"
                )
            except CheckFailed:
                pass  # the cases below say what went wrong
        still_on = jax.config.jax_debug_nans
    finally:
        jax.config.update("jax_debug_nans", was_on)
    require(
        still_on,
        "jax_debug_nans was on when nan_source was called (as in a test run that switches it on "
        "for the whole process), and your function switched jax_debug_nans off although it was "
        "on: leave the flag as you found it. The context manager `with jax.debug_nans(True):` "
        "restores the old value; a `finally:` that sets False does not.",
    )


@exercise_checker(
    hints=(
        "Let JAX find the NaN: run fn(x) inside `with jax.debug_nans(True):`, which raises a FloatingPointError at the first operation that makes one. The context manager also puts the flag back as it was.",
        "Catch the FloatingPointError; its message reads 'invalid value (nan) encountered in log': return only that last word (a regular expression such as r'encountered in (\\w+)'), and None when nothing was raised. Not jax.debug_infs, and not jax.config.update, which leaves the flag set to a fixed value.",
    )
)
def check_nan_source(nan_source: Callable) -> None:
    """Checks `nan_source(fn, x)`: the name of the primitive that made the first NaN, or None."""
    require_accepts(nan_source, jnp.sum, jnp.zeros(2), what="nan_source")
    _require_flag_kept_on(nan_source)
    for case, fn, x, expected in _NAN_CASES:
        answer = _ask_nan_source(nan_source, fn, x, case)
        if expected is None:
            require(
                answer is None,
                f"on {case}, nothing is NaN, so the answer is None; you returned {answer!r}"
                + (
                    f": you returned {answer!r} for an infinity. Only a NaN counts here: "
                    "jax.debug_nans reacts to NaN alone, while jax.debug_infs, and checkify's "
                    "float_checks (a division by zero), also report infinities: use "
                    "checkify.nan_checks if you use checkify."
                    if "1 / x" in case
                    else "."
                ),
            )
            continue
        require(
            answer is not None,
            f"on {case}, fn(x) makes a NaN in {expected!r}, but you returned None: run fn(x) inside "
            "`with jax.debug_nans(True):` and catch the FloatingPointError.",
        )
        require(
            answer.strip() != "" and len(answer.split()) == 1,
            f"on {case}, return only the primitive's name ({expected!r}), not the whole message {answer!r}.",
        )
        require(
            answer.strip().rstrip(".") == expected,
            f"on {case}, the first NaN comes from {expected!r}, not {answer!r}. "
            "Let JAX find it: run fn(x) inside `with jax.debug_nans(True):` and catch the error.",
        )
