"""Checker for the debugging chapter's exercise on the size where jit goes wrong (parity with
float64)."""

from __future__ import annotations

import operator
from collections.abc import Callable

import jax
import jax.numpy as jnp
import numpy as np

from ...checks import (
    CheckFailed,
    call_answer,
    describe,
    exercise_checker,
    require,
    require_accepts,
)
from ...debugging import compare_with_float64
from ...jit_parity import log_reduction, sample


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


@exercise_checker(
    hints=(
        "For each n in sizes, in order: x = jit_parity.sample((n,)), then debugging.compare_with_float64(fn, x, rtol=rtol), whose jit_agrees says whether jax.jit(fn)(x) is within rtol of the float64 value.",
        "Return n at the first size where jit_agrees is False (the size itself, not its position in the list, and not the last size that agreed), None after the loop. Pass rtol on; an eager or float32 reference, or an absolute tolerance, gives other answers.",
    )
)
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
