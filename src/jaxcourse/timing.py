"""Honest timing of JAX callables: warm-up, `block_until_ready`, compile time kept apart."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from typing import Any, NamedTuple

import jax


class Timing(NamedTuple):
    """Wall-clock measurements of one callable, in seconds.

    Attributes:
        name: a label for tables and plots.
        compile_s: ahead-of-time `lower(...).compile()` time for a jitted callable, else None.
        first_call_s: the first call (tracing and compiling included, unless done ahead).
        times_s: steady-state times of the repeated calls, after the warm-up.
    """

    name: str
    compile_s: float | None
    first_call_s: float
    times_s: tuple[float, ...]

    @property
    def median_s(self) -> float:
        return statistics.median(self.times_s)

    @property
    def min_s(self) -> float:
        return min(self.times_s)

    @property
    def spread_s(self) -> float:
        """Interquartile range of the repeats (0 for fewer than two repeats)."""
        if len(self.times_s) < 2:
            return 0.0
        quartiles = statistics.quantiles(self.times_s, n=4, method="inclusive")
        return quartiles[2] - quartiles[0]

    def as_row(self) -> dict[str, Any]:
        """A flat dict for a table (seconds)."""
        return {
            "name": self.name,
            "compile_s": self.compile_s,
            "first_call_s": self.first_call_s,
            "median_s": self.median_s,
            "min_s": self.min_s,
            "spread_s": self.spread_s,
            "repeats": len(self.times_s),
        }


def _timed(call: Callable[[], Any]) -> tuple[float, Any]:
    start = time.perf_counter()
    result = jax.block_until_ready(call())
    return time.perf_counter() - start, result


def time_call(
    fn: Callable, *args, repeat: int = 5, warmup: int = 1, name: str | None = None, **kwargs
) -> Timing:
    """Times `fn(*args, **kwargs)` honestly and returns a `Timing`; prints nothing.

    For a jitted `fn` (one with `.lower`), compile time is measured ahead of time with
    `fn.lower(*args, **kwargs).compile()`. Every call is followed by
    `jax.block_until_ready`, since JAX dispatches asynchronously and would otherwise
    return before the work is done. `warmup` calls run before the `repeat` timed ones.

    Time a function before calling it with the same shapes elsewhere: JAX caches compiled
    programs in memory, and a cached program reports a compile time near zero.
    """
    if repeat < 1 or warmup < 0:
        raise ValueError(f"repeat must be >= 1 and warmup >= 0, got {repeat} and {warmup}.")
    compile_s = None
    if hasattr(fn, "lower"):
        start = time.perf_counter()
        fn.lower(*args, **kwargs).compile()
        compile_s = time.perf_counter() - start
    first_call_s, _ = _timed(lambda: fn(*args, **kwargs))
    for _ in range(max(warmup - 1, 0)):
        _timed(lambda: fn(*args, **kwargs))
    times = tuple(_timed(lambda: fn(*args, **kwargs))[0] for _ in range(repeat))
    return Timing(name or str(getattr(fn, "__name__", "call")), compile_s, first_call_s, times)


def timings_table(timings: list[Timing], *, unit: str = "ms"):
    """A pandas DataFrame of `Timing`s in `unit` ('s' or 'ms'), one row per callable."""
    import pandas as pd

    scale = {"s": 1.0, "ms": 1e3}[unit]
    rows = []
    for timing in timings:
        row = timing.as_row()
        rows.append(
            {
                "": row["name"],
                f"compile ({unit})": None if row["compile_s"] is None else row["compile_s"] * scale,
                f"first call ({unit})": row["first_call_s"] * scale,
                f"median ({unit})": row["median_s"] * scale,
                f"spread, IQR ({unit})": row["spread_s"] * scale,
                "repeats": row["repeats"],
            }
        )
    return pd.DataFrame(rows).set_index("")
