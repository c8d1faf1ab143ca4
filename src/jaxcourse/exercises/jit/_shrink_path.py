"""Checker of the jit chapter's exercise on stopping recompilation."""

from __future__ import annotations

import itertools
from collections.abc import Callable

import jax.numpy as jnp
import numpy as np

from ...checks import call_answer, close, exercise_checker, require, require_array, require_callable
from ...tracecount import count_compilations


def _soft_threshold_reference(x: np.ndarray, threshold: float) -> np.ndarray:
    return np.sign(x) * np.maximum(np.abs(x) - threshold, 0.0)


_fresh_sizes = itertools.count(1009)


def _stack(result, n_thresholds: int):
    """The results for each threshold as one array: a list or tuple of arrays is stacked."""
    if isinstance(result, (list, tuple)) and len(result) == n_thresholds:
        if all(hasattr(item, "shape") and hasattr(item, "dtype") for item in result):
            shapes = {tuple(item.shape) for item in result}
            return jnp.stack(result) if len(shapes) == 1 else result
    return result


@exercise_checker(
    hints=(
        "The jit cache belongs to a function object, and its key holds the arguments' shapes "
        "and dtypes, not their values: what makes the original compile once per threshold, and "
        "what stays the same from one threshold to the next?",
        "Create `jax.jit(soft_threshold)` once, outside shrink_path, and call it with the "
        "threshold as an ordinary argument (a Python float is traced, so its value is not in "
        "the key). The traps: partial or lambda per threshold, static_argnames='threshold', and"
        " jax.jit(...) written inside shrink_path, which makes a new function with an empty "
        "cache at every call.",
    )
)
def check_shrink_path(shrink_path: Callable) -> None:
    """Checks `shrink_path(x, thresholds)`: correct values, and no compilation for new thresholds."""
    require_callable(shrink_path, "shrink_path")
    # A size used by no earlier check, so that compilations on the first call are really counted.
    size = next(_fresh_sizes)
    x = np.random.default_rng(size).normal(size=size).astype(np.float32)
    with count_compilations() as first:
        result = call_answer(shrink_path, jnp.asarray(x), [0.1, 0.5, 1.0], what="shrink_path")
    previous = np.stack([_soft_threshold_reference(x, t) for t in [0.1, 0.5, 1.0]])
    compiles = {}
    for label, thresholds in (("same", [0.1, 0.5, 1.0]), ("new", [0.2, 0.7, 1.5])):
        with count_compilations() as again:
            result = call_answer(shrink_path, jnp.asarray(x), thresholds, what="shrink_path")
        compiles[label] = again.compiles
        expected = np.stack([_soft_threshold_reference(x, t) for t in thresholds])
        stacked = require_array(
            _stack(result, len(thresholds)),
            expected.shape,
            what="shrink_path",
            expected=f"one array of shape {x.shape} per threshold, in a list or stacked",
        )
        _require_values(stacked, expected, x, thresholds, previous)
    n_new = compiles["new"]
    require(
        n_new == 0 or compiles["same"] > 0,
        f"called again with 3 new thresholds, your function compiled {n_new} new programs, but none "
        "for thresholds it had seen: the threshold's value is part of the cache key, as it is for a "
        "static argument (static_argnames). Pass it as an ordinary (traced) argument.",
    )
    require(
        n_new == 0 or n_new >= 3,
        f"your function compiles on every call, even with the same thresholds ({compiles['same']} "
        "program(s) each time): it jits inside shrink_path, so each call makes a new function object "
        "with an empty cache. Create the jitted function once, outside shrink_path, and call it.",
    )
    require(
        n_new == 0,
        f"called again with 3 new thresholds, your function compiled {n_new} new programs, one per "
        "threshold even for thresholds it had seen: each partial(...) or lambda made in the loop is a "
        "new function that bakes its threshold into the program as a constant. Jit soft_threshold "
        "once, outside shrink_path, and pass the threshold as an ordinary (traced) argument.",
    )
    require(
        first.compiles <= 3,
        f"the first call compiled {first.compiles} small programs, which is what eager (un-jitted) code "
        "does, one per operation: call a jitted soft_threshold.",
    )


def _require_values(stacked, expected, x, thresholds, previous) -> None:
    """Fails with a hint that says what the wrong values are, when they are wrong."""
    if close(stacked, expected, rtol=1e-5, atol=1e-6):
        return
    require(
        not close(stacked, np.abs(expected), rtol=1e-5, atol=1e-6),
        "your values are never negative: max(|x| - threshold, 0) loses the sign of x. Multiply "
        "by jnp.sign(x), so that negative entries shrink towards zero from below.",
    )
    require(
        not close(stacked, expected[::-1], rtol=1e-5, atol=1e-6),
        f"your results come in reverse order: the first should be for threshold {thresholds[0]}.",
    )
    require(
        previous is None
        or thresholds == [0.1, 0.5, 1.0]
        or not close(stacked, previous, rtol=1e-5, atol=1e-6),
        f"for thresholds {thresholds} your function returned the results of the previous call "
        "(thresholds [0.1, 0.5, 1.0]): something is kept from one call to the next. Compute the "
        "results from the arguments at every call.",
    )
    worst = np.unravel_index(np.argmax(np.abs(np.asarray(stacked) - expected)), expected.shape)
    t, i = thresholds[worst[0]], worst[1]
    require(
        False,
        f"wrong values for thresholds {thresholds}: for x = {x[i]:.4f} and threshold {t}, soft "
        f"thresholding gives {expected[worst]:.4f} (the entry shrunk towards zero by {t}, or 0 when "
        f"|x| < {t}), your function gave {np.asarray(stacked)[worst]:.4f}.",
    )
