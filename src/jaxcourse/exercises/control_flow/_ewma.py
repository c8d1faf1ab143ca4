"""Checker for the control-flow chapter's exercise on a moving average over gaps with scan."""

from __future__ import annotations

import math

import jax
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


def _ewma_reference(
    xs: np.ndarray, alpha: float, *, swap: bool = False, start: float = math.nan
) -> np.ndarray:
    """In float64: the moving average the exercise asks for. A gap (NaN) keeps the last value,
    before the first reading it is NaN, the first reading starts it; `swap` exchanges the weights,
    a `start` other than NaN is averaged with the first reading instead."""
    out = np.full(len(xs), np.nan)
    smoothed = start
    for t, x in enumerate(xs.astype(np.float64)):
        if math.isnan(x):
            pass
        elif math.isnan(smoothed):
            smoothed = x
        elif swap:
            smoothed = alpha * smoothed + (1 - alpha) * x
        else:
            smoothed = alpha * x + (1 - alpha) * smoothed
        out[t] = smoothed
    return out


def _plain_ewma(xs: np.ndarray, alpha: float) -> np.ndarray:
    """The moving average that knows nothing of gaps, started at xs[0] (NaN spreads from a gap)."""
    out = np.empty(len(xs))
    smoothed = float(xs[0])
    for t, x in enumerate(xs.astype(np.float64)):
        smoothed = alpha * x + (1 - alpha) * smoothed
        out[t] = smoothed
    return out


def _previous_reading_mix(xs: np.ndarray, alpha: float) -> np.ndarray:
    """alpha x_t + (1 - alpha) x_{t-1}: each reading mixed with the previous reading (no gaps)."""
    xs = xs.astype(np.float64)
    return alpha * xs + (1 - alpha) * np.concatenate([xs[:1], xs[:-1]])


def _same(actual: np.ndarray, expected: np.ndarray) -> bool:
    """Equal within float32 rounding, NaN where and only where NaN is expected."""
    return bool(np.array_equal(np.isnan(actual), np.isnan(expected))) and close(
        np.nan_to_num(actual), np.nan_to_num(expected), rtol=1e-4, atol=1e-4
    )


def _ewma_hint(actual: np.ndarray, xs: np.ndarray, alpha: float, expected: np.ndarray) -> str:
    """The hint naming the property a wrong moving average breaks."""
    gap = np.isnan(xs)
    started = ~np.isnan(expected)
    if len(xs) > 1 and _same(actual[1:], expected[:-1]):
        return (
            "the outputs lag one step behind: at step t, emit the updated average s_t, not the "
            "carry you received (s_{t-1})."
        )
    if _same(actual, _ewma_reference(xs, alpha, swap=True)):
        return "alpha weighs the new observation: s_t = alpha * x_t + (1 - alpha) * s_{t-1}."
    if not gap.any() and _same(actual, _ewma_reference(xs, alpha, start=0.0)):
        return (
            "your average starts from 0: s_0 = alpha * x_0, and every later value is pulled "
            "towards 0. The carry is started at 0, but s_0 must be x_0, the first reading: start "
            "the carry as NaN (meaning 'nothing seen yet') and let the first reading replace it."
        )
    if not gap.any() and _same(actual, _previous_reading_mix(xs, alpha)):
        return (
            "your value at step t mixes x_t with the previous reading x_{t-1}; the recurrence "
            "mixes it with the previous average s_{t-1}. Carry the average, not the reading."
        )
    held = gap & started
    if np.isnan(actual[held]).any() and _same(actual[~held], expected[~held]):
        return (
            "at a gap the average should hold its last value (the value at the step before); "
            "you return NaN there."
        )
    if np.isnan(actual[started]).any():
        first = int(np.flatnonzero(started & np.isnan(actual))[0])
        if gap[0] and np.isnan(actual).all():
            return (
                "the series starts with a gap and every value you return is NaN: the average "
                "cannot start from xs[0] when xs[0] is missing. It starts at the first reading, "
                "wherever that is, so the carry must be able to say 'nothing seen yet'."
            )
        return (
            f"your average is NaN at step {first}, after the first reading: a gap (NaN) must not "
            "poison the average. At a gap, keep the carry unchanged (jnp.where on jnp.isnan(x)); "
            "an arithmetic update with a NaN reading gives NaN forever after."
        )
    if not np.isnan(actual[~started]).all():
        return (
            "before the first reading there is nothing to average: the values there should be "
            "NaN, not a number (is a gap read as 0, or is the carry started at 0?)."
        )
    if _same(actual, _plain_ewma(np.nan_to_num(xs), alpha)) or _same(
        actual, _ewma_reference(np.where(gap & started, 0.0, xs), alpha)
    ):
        return (
            "a gap is not a reading of 0: replacing NaN by 0 pulls the average towards 0. At a gap, "
            "keep the last average."
        )
    if not _same(actual[held], expected[held]):
        return (
            "at a gap the average should hold its last value (the value at the step before), "
            "and it does not."
        )
    return (
        f"at the readings your values differ from the moving average of the readings with the gaps "
        f"removed: expected {np.round(expected[:6], 4).tolist()} at the start, got "
        f"{np.round(actual[:6], 4).tolist()}."
    )


def _ewma_cases() -> list[tuple[np.ndarray, float]]:
    """Series without gaps, then with gaps inside, a leading gap, a trailing run of gaps, and only
    gaps; alpha = 1 keeps the readings, alpha = 0 holds the first reading."""
    rng = np.random.default_rng(3)
    series = np.cumsum(rng.normal(size=40)).astype(np.float32)
    gappy = series.copy()
    gappy[[3, 4, 5, 11, 20, 21, 39]] = np.nan
    leading = gappy.copy()
    leading[:3] = np.nan
    trailing = series.copy()
    trailing[30:] = np.nan
    nothing = np.full(6, np.nan, np.float32)
    return [
        (series, 0.3),
        (series[:1], 0.5),
        (gappy, 0.3),
        (gappy, 0.0),
        (trailing, 0.5),
        (leading, 0.3),
        (leading, 1.0),
        (nothing, 0.5),
    ]


_EWMA_CASES = _ewma_cases()

_GAPS_REMOVED = (
    jax.errors.NonConcreteBooleanIndexError,
    "",
    "a boolean mask such as xs[~jnp.isnan(xs)] removes the gaps, but the length of its result "
    "depends on the values, which jit cannot compile, and the exercise wants one value per entry "
    "of xs anyway, NaN before the first reading. Keep every entry, and at a gap hold the average "
    "with jnp.where.",
)


@exercise_checker(
    hints=(
        "Write one step, step(carry, x) -> (new carry, output), and let "
        "jax.lax.scan(step, init, xs) run it over xs; return the stacked outputs (the second "
        "thing scan returns), one per entry of xs. Decide first what the carry must hold before "
        "the first reading.",
        "Start the carry as NaN, meaning 'nothing seen yet' (not 0, and not xs[0], which may be a "
        "gap). In the step, jnp.where(jnp.isnan(carry), x, alpha * x + (1 - alpha) * carry) "
        "starts or updates the average, and a second jnp.where on jnp.isnan(x) keeps the carry at "
        "a gap. Output the updated carry, not the one you received, and never use a Python if on "
        "alpha or x.",
    )
)
def check_ewma(ewma) -> None:
    """`ewma(xs, alpha)` returns one smoothed value per entry of xs: the exponentially weighted
    moving average of the readings, holding its value over gaps (NaN) and NaN before the first
    reading; checked by these properties eagerly and under jit (alpha traced), for a scan in the
    jaxpr and for a program whose size does not grow with the series."""
    short, long = (jnp.asarray(_EWMA_CASES[2][0][:n]) for n in (8, 40))
    programs = [
        primitive_names(
            traced_program(ewma, xs, jnp.float32(0.5), what="ewma", hints=(_GAPS_REMOVED,))
        )
        for xs in (short, long)
    ]
    names, sizes = programs[1], [len(program) for program in programs]
    require(
        "scan" in names and sizes[0] == sizes[1],
        "the loop is unrolled at trace time: the jaxpr "
        + (
            "contains no scan"
            if "scan" not in names
            else f"grows with the series ({sizes[0]} equations for 8 values, {sizes[1]} for 40)"
        )
        + ". Write the step once and let jax.lax.scan run it over xs.",
    )
    for xs, alpha in _EWMA_CASES:
        expected = _ewma_reference(xs, alpha)
        for how, actual in call_eager_and_jitted(
            ewma, jnp.asarray(xs), jnp.float32(alpha), what="ewma", hints=(_GAPS_REMOVED,)
        ):
            require(
                not (isinstance(actual, (tuple, list)) and len(actual) == 2),
                "you returned a pair, probably lax.scan's (final carry, ys): return only the stacked "
                f"outputs, one smoothed value per input (shape {xs.shape}).",
            )
            actual = require_array(
                actual,
                xs.shape,
                what=f"ewma{how}",
                expected="one smoothed value per input: the stacked outputs of lax.scan, not only the final carry",
            )
            gaps = int(np.isnan(xs).sum())
            require(
                _same(actual, expected),
                f"for {len(xs)} values with {gaps} gap(s) and alpha={alpha}{how}: "
                + _ewma_hint(actual, xs, alpha, expected),
            )
