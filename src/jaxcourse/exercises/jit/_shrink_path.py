"""Exercise 3 of the jit chapter: stop recompiling."""

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


@exercise_checker("Exercise 3 (stop recompiling)")
def check_shrink_path(shrink_path: Callable) -> None:
    """Checks `shrink_path(x, thresholds)`: correct values, and no compilation for new thresholds."""
    require_callable(shrink_path, "shrink_path")
    # A size used by no earlier check, so that compilations on the first call are really counted.
    size = next(_fresh_sizes)
    x = np.random.default_rng(size).normal(size=size).astype(np.float32)
    with count_compilations() as first:
        result = call_answer(shrink_path, jnp.asarray(x), [0.1, 0.5, 1.0], what="shrink_path")
    for thresholds in ([0.1, 0.5, 1.0], [0.2, 0.7, 1.5]):
        with count_compilations() as again:
            result = call_answer(shrink_path, jnp.asarray(x), thresholds, what="shrink_path")
        expected = np.stack([_soft_threshold_reference(x, t) for t in thresholds])
        stacked = require_array(
            _stack(result, len(thresholds)),
            expected.shape,
            what="shrink_path",
            expected=f"one array of shape {x.shape} per threshold, in a list or stacked",
        )
        require(
            close(stacked, expected, rtol=1e-5, atol=1e-6),
            f"wrong values for thresholds {thresholds}.",
        )
    require(
        again.compiles == 0,
        f"called again with 3 new thresholds, your function compiled {again.compiles} new programs. A "
        "threshold baked in with partial, a lambda or static_argnames is a new program for every value: "
        "jit soft_threshold once, outside the loop, and pass the threshold as an ordinary (traced) argument.",
    )
    require(
        first.compiles <= 3,
        f"the first call compiled {first.compiles} small programs, which is what eager (un-jitted) code "
        "does, one per operation: call a jitted soft_threshold.",
    )
