"""Checker for the debugging chapter's exercise on weights checked inside jit (checkify)."""

from __future__ import annotations

from collections.abc import Callable

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import checkify

from ...checks import (
    call_answer,
    close,
    exercise_checker,
    require,
    require_accepts,
    require_array,
)

_PYTHON_CHECK_HINTS = tuple(
    (
        error_class,
        "",
        "your function asks Python for the truth value of a traced array (an `if`, `assert` or `raise` "
        "on w): inside jit there are no values yet. Use checkify.check(condition, message), which "
        "becomes part of the compiled program.",
    )
    for error_class in (jax.errors.TracerBoolConversionError, jax.errors.ConcretizationTypeError)
)


@exercise_checker(
    hints=(
        "checkify.check(condition, message) records an error inside a function that checkify.checkify transforms, even under jit, where Python's if, assert and raise cannot see values.",
        "Two checks, then the division: checkify.check(jnp.all(w >= 0), ...) (a zero weight is allowed, so >= and not >), checkify.check(jnp.sum(w) > 0, ...) (all zeros must be reported), then return w / jnp.sum(w). Do not clip the weights: report them.",
    )
)
def check_normalise_weights(normalise_weights: Callable) -> None:
    """Checks `normalise_weights(w)`: w / sum(w), with checkify.check guarding w >= 0 and sum(w) > 0."""
    require_accepts(normalise_weights, jnp.ones(3), what="normalise_weights")
    checked = jax.jit(checkify.checkify(normalise_weights))
    cases = {
        "[1, 2, 5]": ([1.0, 2.0, 5.0], True),
        "[0, 1, 3] (a zero weight is allowed)": ([0.0, 1.0, 3.0], True),
        "[2, -1, 3] (a negative weight)": ([2.0, -1.0, 3.0], False),
        "[0, 0, 0] (no weight at all)": ([0.0, 0.0, 0.0], False),
    }
    for case, (weights, valid) in cases.items():
        w = jnp.asarray(weights, jnp.float32)
        error, result = call_answer(
            checked,
            w,
            what="normalise_weights under jax.jit(checkify.checkify(...))",
            hints=_PYTHON_CHECK_HINTS,
        )
        message = error.get()
        if valid:
            result = require_array(
                result,
                w.shape,
                what="normalise_weights(w)",
                expected="w / sum(w), one weight per entry of w",
            )
            require(
                message is None,
                f"on {case} your function reported {message!r}, but these weights are valid: weights "
                "must be >= 0 (zero is allowed) and their sum > 0.",
            )
            expected = np.asarray(weights) / np.sum(weights)
            require(
                close(result, expected),
                f"on {case}, expected w / sum(w) = {expected.round(4).tolist()}, got {result.round(4).tolist()}.",
            )
        else:
            require(
                message is not None,
                f"on {case} no error was reported. Guard both conditions with checkify.check: "
                "jnp.all(w >= 0) and jnp.sum(w) > 0 (a NaN result is not a report).",
            )
