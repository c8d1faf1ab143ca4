"""Checkers for the exercises of the chapter 'Debugging and the sharp bits'."""

from __future__ import annotations

import contextlib
import io
import operator
from collections.abc import Callable

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import checkify

from ..checks import (
    CheckFailed,
    call_answer,
    call_eager_and_jitted,
    close,
    describe,
    exercise_checker,
    require,
    require_accepts,
    require_array,
)
from ..debugging import compare_with_float64
from ..jit_parity import log_reduction, sample

HINTS = {
    "check_nan_source": (
        "Let JAX find the NaN: run fn(x) inside `with jax.debug_nans(True):`, which raises a "
        "FloatingPointError at the first operation that makes one. The context manager also puts "
        "the flag back as it was.",
        "Catch the FloatingPointError; its message reads 'invalid value (nan) encountered in "
        "log': return only that last word (a regular expression such as "
        r"r'encountered in (\w+)'), and None when nothing was raised. Not jax.debug_infs, "
        "and not jax.config.update, which leaves the flag set to a fixed value.",
    ),
    "check_normalise_weights": (
        "checkify.check(condition, message) records an error inside a function that "
        "checkify.checkify transforms, even under jit, where Python's if, assert and raise "
        "cannot see values.",
        "Two checks, then the division: checkify.check(jnp.all(w >= 0), ...) (a zero weight is "
        "allowed, so >= and not >), checkify.check(jnp.sum(w) > 0, ...) (all zeros must be "
        "reported), then return w / jnp.sum(w). Do not clip the weights: report them.",
    ),
    "check_shift_counts": (
        "Try the naive counts + shift on uint8 counts [200, 255] and shift 300: a Python int is "
        "weakly typed and takes the array's dtype. Which dtype must the sum be computed in?",
        "Cast before adding, not after: counts.astype(jnp.int32) + shift. Casting the result "
        "converts values that have already wrapped around; float32, int16 or uint32 are not the "
        "int32 asked for (uint32 also wraps a negative shift).",
    ),
    "check_first_wrong_size": (
        "For each n in sizes, in order: x = jit_parity.sample((n,)), then "
        "debugging.compare_with_float64(fn, x, rtol=rtol), whose jit_agrees says whether "
        "jax.jit(fn)(x) is within rtol of the float64 value.",
        "Return n at the first size where jit_agrees is False (the size itself, not its position "
        "in the list, and not the last size that agreed), None after the loop. Pass rtol on; "
        "an eager or float32 reference, or an absolute tolerance, gives other answers.",
    ),
}


# Exercise 1 ------------------------------------------------------------------------------------

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


@exercise_checker("Exercise 1 (which operation made the NaN?)")
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


# Exercise 2 ------------------------------------------------------------------------------------


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


@exercise_checker("Exercise 2 (weights checked inside jit)")
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


# Exercise 3 ------------------------------------------------------------------------------------


@exercise_checker("Exercise 3 (counts that overflow)")
def check_shift_counts(shift_counts: Callable) -> None:
    """Checks `shift_counts(counts, shift)`: counts + shift as int32, for small-integer counts."""
    cases = [
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


# Exercise 4 ------------------------------------------------------------------------------------


def _wrong_under_jit_from(min_size: int, relative_error: float) -> Callable:
    """sum(x), times (1 + relative_error) only when traced with at least `min_size` entries:
    a miscompilation on demand; eager calls, in float32 or float64, stay right."""

    def fn(x):
        total = jnp.sum(x)
        if isinstance(x, jax.core.Tracer) and x.size >= min_size:
            return total * (1.0 + relative_error)
        return total

    return fn


def _expm1_sum(x):
    """sum(exp(x * 1e-8) - 1): float32 rounds every term to 0, eagerly and under jit alike."""
    return jnp.sum(jnp.exp(x * 1e-8) - 1.0)


def _expected_first_wrong(fn, sizes, rtol) -> int | None:
    for n in sizes:
        if not compare_with_float64(fn, sample((n,)), rtol=rtol).jit_agrees:
            return n
    return None


def _ask_first_wrong_size(first_wrong_size: Callable, fn, sizes: list, *rtol: float) -> int | None:
    """The learner's answer for `fn`, checked to be one size (an int) or None."""
    answer = call_answer(first_wrong_size, fn, sizes, *rtol, what="first_wrong_size")
    require(
        not isinstance(answer, (list, tuple, np.ndarray, jax.Array)) or np.ndim(answer) == 0,
        f"return one size (the smallest whose jitted value disagrees), not a collection: got {describe(answer)}.",
    )
    if answer is None:
        return None
    try:
        return operator.index(answer)
    except TypeError:
        raise CheckFailed(
            f"first_wrong_size should return one size, an int taken from `sizes` (or None when jit is "
            f"right at every size); got {describe(answer)}."
        ) from None


@exercise_checker("Exercise 4 (the size where jit goes wrong)")
def check_first_wrong_size(first_wrong_size: Callable) -> None:
    """Checks `first_wrong_size(fn, sizes, rtol)`: the smallest size whose jitted value is off."""
    sizes = [100, 1_000, 4_096, 8_192]
    require_accepts(first_wrong_size, jnp.sum, sizes, 1e-4, what="first_wrong_size")
    wrong_from_3000 = _wrong_under_jit_from(3_000, 1e-2)
    answer = _ask_first_wrong_size(first_wrong_size, wrong_from_3000, sizes)
    require(
        answer != sizes.index(4_096),
        f"you returned {answer!r}, the position in `sizes`; return the size itself, {4_096}.",
    )
    require(
        answer is not None,
        "jax.jit(fn) is 1 % off from 4,096 entries on (the checker's fn is miscompiled on purpose; its eager "
        "value is right), but your function found nothing: compare jax.jit(fn)(x), not eager fn(x), "
        "with the float64 value.",
    )
    if answer == 1_000:  # the size before the first wrong one, or a tolerance that is too tight?
        wrong_everywhere = _wrong_under_jit_from(0, 1e-2)
        require(
            _ask_first_wrong_size(first_wrong_size, wrong_everywhere, sizes) is not None,
            "you returned 1000, the size just before the first wrong one (4096), and None for a "
            "function jit gets wrong from the first size on: return the first size at which "
            "jax.jit(fn) disagrees, not the last one at which it agreed.",
        )
    require(
        answer not in sizes[:2],
        f"you flagged {answer!r} entries, where jax.jit(fn) agrees with float64 up to float32 rounding, a "
        "tiny fraction of the sum: use a relative tolerance, |jit - float64| <= rtol * |float64|.",
    )
    require(
        answer == 4_096,
        f"jax.jit(fn) is 1 % off at 4,096 and 8,192 entries only; the smallest wrong size is 4096, you said {answer!r}.",
    )
    require(
        _ask_first_wrong_size(first_wrong_size, _wrong_under_jit_from(0, 0.0), sizes) is None,
        "for a function jit computes right at every size, return None.",
    )
    require(
        _ask_first_wrong_size(first_wrong_size, _wrong_under_jit_from(0, 1e-6), sizes) is None,
        "a jitted sum that differs from float64 by 1e-6 of its value agrees at rtol=1e-4, but your "
        "function flagged it: use a relative tolerance, |jit - float64| <= rtol * |float64|.",
    )
    require(
        _ask_first_wrong_size(first_wrong_size, wrong_from_3000, sizes, 0.1) is None,
        "with rtol=0.1 a 1 % error agrees, but your function flagged it: use the rtol argument.",
    )
    require(
        _ask_first_wrong_size(first_wrong_size, _expm1_sum, sizes) == 100,
        "on sum(exp(1e-8 x) - 1), float32 rounds every term to 0 under jit and eagerly, while the float64 "
        "value is not 0, so the first size, 100, is already wrong. A float32 reference shares float32's "
        "rounding: compute the reference in float64 (debugging.compare_with_float64 does).",
    )
    expected = _expected_first_wrong(log_reduction, sizes, 1e-4)
    require(
        _ask_first_wrong_size(first_wrong_size, log_reduction, sizes) == expected,
        f"on jit_parity.log_reduction, this build's first wrong size is {expected}: your answer differs.",
    )
