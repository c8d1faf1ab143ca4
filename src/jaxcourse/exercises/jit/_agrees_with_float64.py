"""Checker of the jit chapter's exercise on checking jit against float64."""

from __future__ import annotations

import functools
import warnings
from collections.abc import Callable
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np

from ...checks import CheckFailed, call_answer, exercise_checker, require, require_callable


@functools.cache  # one function per error, so that a learner's jax.jit(fn) reuses its cache
def _wrong_under_jit(error: float) -> Callable:
    """sum(x), plus `error` only while traced: a miscompilation on demand, eager JAX stays right.

    Under `jax.jit` the argument is a tracer; called eagerly, on float32 or float64 data, it is not.
    """

    def fn(x):
        total = jnp.sum(x)
        return total + error if isinstance(x, jax.core.Tracer) else total

    return fn


def _exp_minus_one_sum(x):
    """sum(exp(x) - 1): for x = 1e-8, float32 rounds exp(x) to 1, so eager and jit both give 0."""
    return jnp.sum(jnp.exp(x) - 1.0)


def _as_bool(answer, case: str) -> bool:
    if isinstance(answer, (bool, np.bool_)):
        return bool(answer)
    if np.shape(answer) == () and np.asarray(answer).dtype == np.bool_:
        return bool(answer)
    raise CheckFailed(
        f"on {case}, your function returned {answer!r} ({type(answer).__name__}): return True or False "
        "(whether the two values agree), not the difference or the error itself."
    )


TRUNCATED = "will be truncated to dtype float32"
"""What JAX's UserWarning says when a float64 array is used once the x64 switch is off again."""
TRUNCATION_NOTE = (
    "Note: your function made JAX warn that a float64 value 'will be truncated to dtype float32': "
    "an array computed inside `with jax.enable_x64(True):` was used after the block, where JAX "
    "rounds it to float32. Convert the reference with float(...) inside the block, as in "
    "`reference = float(fn(np.asarray(x, np.float64)))`."
)


@exercise_checker(
    hints=(
        "Compute two numbers, the jitted value on x as given and a float64 reference, and "
        "compare their difference with rtol times the reference's magnitude; return a bool.",
        "The reference: `with jax.enable_x64(True): reference = float(fn(np.asarray(x, "
        "np.float64)))`, which restores the x64 switch afterwards. The traps: comparing eager "
        "fn(x) instead of jax.jit(fn)(x), a float32 reference (it shares float32's rounding), "
        "an absolute tolerance, a fixed 1e-4 instead of rtol, and jax.config.update, which "
        "leaves the switch changed.",
    )
)
def check_agrees_with_float64(agrees_with_float64: Callable) -> str:
    """Checks `agrees_with_float64(fn, x, rtol)`: jit(fn)(x) within rtol * |float64 value| of it.
    A float64 value used after the `enable_x64` block makes JAX warn: the verdict says so (a
    warning above [PASSED] would leave the learner unsure), on a pass or with the hint."""
    seen: list[warnings.WarningMessage] = []
    try:
        with warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always")
            _check(agrees_with_float64)
    except CheckFailed as failure:
        if _truncated(seen):
            raise CheckFailed(f"{failure} {TRUNCATION_NOTE}") from None
        raise
    finally:
        for other in (w for w in seen if TRUNCATED not in str(w.message)):
            warnings.warn_explicit(other.message, other.category, other.filename, other.lineno)
    return TRUNCATION_NOTE if _truncated(seen) else ""


def _truncated(seen: list) -> bool:
    return any(TRUNCATED in str(w.message) for w in seen)


def _check(agrees_with_float64: Callable) -> None:
    require_callable(agrees_with_float64, "agrees_with_float64")
    from ...jit_parity import float64_sum, is_close, log_reduction, sample

    spread = jnp.asarray(sample((1_000,), seed=5))
    spread_sum = float(np.sum(np.asarray(spread, np.float64)))
    tiny = jnp.full(1_000, 1e-8, jnp.float32)
    # The checker's own answer for the real float32 cancellation: whatever this build computes
    # under jit, it is compared with the float64 value, never with eager float32.
    exp_expected = is_close(float(jax.jit(_exp_minus_one_sum)(tiny)), 1_000 * np.expm1(1e-8))

    def ask(case: str, fn, x, **rtol) -> bool:
        found = bool(jax.config.jax_enable_x64)
        try:
            answer = call_answer(
                partial(agrees_with_float64, **rtol), fn, x, what="agrees_with_float64"
            )
            left = bool(jax.config.jax_enable_x64)
        finally:
            jax.config.update("jax_enable_x64", found)  # the checker's own state, whatever happened
        require(
            left == found,
            f"your function left jax_enable_x64 {'on' if left else 'off'}, but it was "
            f"{'on' if found else 'off'} when called: a global switch changes every later "
            "computation. Use `with jax.enable_x64(True):`, which restores the value it found, "
            "instead of jax.config.update.",
        )
        return _as_bool(answer, case)

    right = ask("a function jit computes correctly", log_reduction, spread)
    wrong = ask("a function jit gets 0.1 % wrong", _wrong_under_jit(1e-3 * spread_sum), spread)
    require(
        not (not right and wrong),
        "your answers are reversed: False for a function jit computes correctly, True for one it gets "
        "wrong. Return True when the values agree, i.e. |jit - reference| <= rtol * |reference|.",
    )
    require(
        not wrong,
        "your function says True for a function whose jitted value is 0.1 % too large (its eager value "
        "is right): compare jax.jit(fn)(x), not fn(x) called eagerly, with the float64 reference.",
    )
    large_ok = ask(
        "a sum of 1e6 that jit gets wrong by 1", _wrong_under_jit(1.0), jnp.full(1_000, 1_000.0)
    )
    small_ok = ask(
        "a sum of 1e-3 that jit gets wrong by 5e-5", _wrong_under_jit(5e-5), jnp.full(1_000, 1e-6)
    )
    require(
        large_ok and not small_ok,
        f"the tolerance must be relative to the reference: an error of 1 on a sum of 1e6 is 1e-6 of it "
        f"and agrees at rtol=1e-4 (you said {large_ok}), an error of 5e-5 on a sum of 1e-3 is 5 % of it "
        f"and does not (you said {small_ok}). Use |jit - reference| <= rtol * |reference|, not an "
        "absolute bound.",
    )
    require(
        right,
        f"your function says False for jit_parity.log_reduction on 1,000 entries, which jit computes "
        f"correctly: jit gives {float(jax.jit(log_reduction)(spread)):.3f}, float64 {float64_sum(spread):.3f}.",
    )
    require(
        ask("sum(exp(x) - 1) at x = 1e-8", _exp_minus_one_sum, tiny) == exp_expected,
        "on sum(exp(x) - 1) with x = 1e-8, float32 rounds exp(x) to 1: eager and jit both give 0, while "
        f"the float64 value is {1_000 * np.expm1(1e-8):.1e}, so your answer should be {exp_expected}. A "
        "float32 reference shares float32's rounding and cannot see this: compute it on "
        "np.asarray(x, np.float64) inside `with jax.enable_x64(True):` (without it, JAX silently rounds "
        "back to float32), and jit fn on x as given.",
    )
    require(
        ask("a 0.1 % error at rtol=1e-2", _wrong_under_jit(1e-3 * spread_sum), spread, rtol=1e-2),
        "with rtol=1e-2 a 0.1 % error agrees, but your function said False: use the rtol argument rather "
        "than a fixed 1e-4.",
    )
    initial = bool(jax.config.jax_enable_x64)
    jax.config.update("jax_enable_x64", True)
    try:
        wrong_with_x64_on = ask(
            "a 0.1 % error, called with jax_enable_x64 on",
            _wrong_under_jit(1e-3 * spread_sum),
            spread,
        )
    finally:
        jax.config.update("jax_enable_x64", initial)
    require(
        not wrong_with_x64_on,
        "called with jax_enable_x64 already on, your function said True for a function whose jitted "
        "value is 0.1 % too large: compare jax.jit(fn)(x) with the float64 reference whatever the "
        "switch was.",
    )
