"""Checker for the debugging chapter's exercise on counts that overflow (weak types)."""

from __future__ import annotations

from collections.abc import Callable

import jax.numpy as jnp
import numpy as np

from ...checks import (
    call_eager_and_jitted,
    close,
    exercise_checker,
    require,
    require_array,
)


@exercise_checker(
    hints=(
        "Try the naive counts + shift on uint8 counts [200, 255] and shift 300: a Python int is weakly typed and takes the array's dtype. Which dtype must the sum be computed in?",
        "Cast before adding, not after: counts.astype(jnp.int32) + shift. Casting the result converts values that have already wrapped around; float32, int16 or uint32 are not the int32 asked for (uint32 also wraps a negative shift).",
    )
)
def check_shift_counts(shift_counts: Callable) -> None:
    """Checks `shift_counts(counts, shift)`: counts + shift as int32, for small-integer counts."""
    cases: list[tuple[np.ndarray, int]] = [
        (np.array([0, 200, 255], np.uint8), 300),
        (np.array([0, 200, 255], np.uint8), -10),
        (np.array([7, 9], np.uint8), 0),
        (np.array([-30_000, 30_000], np.int16), 5_000),
    ]
    for counts, shift in cases:
        expected = counts.astype(np.int64) + shift
        results = call_eager_and_jitted(
            shift_counts, jnp.asarray(counts), shift, what="shift_counts"
        )
        for how, result in results:
            case = f"{counts.dtype} counts {counts.tolist()} and shift {shift} ({how.strip() or 'eagerly'})"
            result = require_array(
                result,
                counts.shape,
                what=f"shift_counts on {case}",
                expected="counts + shift, one per count",
            )
            dtype = result.dtype
            require(
                dtype != counts.dtype,
                f"on {case}, the result has dtype {dtype}, the counts' own type: the Python int "
                "is weakly typed and took the counts' dtype, so the sums were computed in "
                f"{counts.dtype} and wrapped around where they did not fit. Cast the counts to "
                "int32 before adding, and return int32: counts.astype(jnp.int32) + shift.",
            )
            require(
                dtype == np.int32,
                f"on {case}, the result has dtype {dtype}; counts are integers and the sums need "
                "more room than the input's type: return int32.",
            )
            if not close(result, expected, rtol=0, atol=0):
                wrapped = (counts + np.array(shift).astype(counts.dtype)).astype(np.int32)
                require(
                    not close(result, wrapped, rtol=0, atol=0),
                    f"on {case} you got {result.tolist()} instead of {expected.tolist()}: the "
                    f"sum was computed in {counts.dtype} and wrapped around, then converted. A Python "
                    "int is weakly typed and takes the array's dtype; cast the counts to int32 before "
                    "adding: counts.astype(jnp.int32) + shift.",
                )
                require(False, f"on {case}, expected {expected.tolist()}, got {result.tolist()}.")
