"""Checker of the jit chapter's exercise on a timing that blocks."""

from __future__ import annotations

import numbers
import time
from collections.abc import Callable

import jax
import jax.numpy as jnp
import numpy as np

from ...checks import (
    call_answer,
    draw_simulated_costs,
    exercise_checker,
    require,
    require_callable,
)


class _PendingResult:
    """A result that becomes ready at `ready_at`, like a JAX array still being computed."""

    def __init__(self, ready_at: float):
        self._ready_at = ready_at
        self.blocked = False  # whether anyone waited for this result

    def block_until_ready(self) -> _PendingResult:
        self.blocked = True
        delay = self._ready_at - time.perf_counter()
        if delay > 0:
            time.sleep(delay)
        return self

    def __array__(self, dtype=None, copy=None):
        self.block_until_ready()
        return np.zeros(3, dtype=dtype)


class _SimulatedJit:
    """Behaves like a jitted function with asynchronous dispatch, with known times.

    The first call 'compiles' (blocks for `compile_s`); every call returns at once and its
    result becomes ready `run_s` after the previous result, as on a queue of device work.
    """

    def __init__(self, compile_s: float, run_s: float):
        self.compile_s, self.run_s = compile_s, run_s
        self.calls = 0
        self.results: list[_PendingResult] = []
        self.blocked_before_next: list[bool] = []  # per call: waited for before the next call
        self._queue_free_at = 0.0

    def __call__(self, x):
        self.calls += 1
        if self.results:
            self.blocked_before_next.append(self.results[-1].blocked)
        if self.calls == 1:
            time.sleep(self.compile_s)
        ready_at = max(time.perf_counter(), self._queue_free_at) + self.run_s
        self._queue_free_at = ready_at
        self.results.append(_PendingResult(ready_at))
        return self.results[-1]


def _seconds(value, what: str) -> float:
    """The learner's timing as a float number of seconds; anything else fails with a hint."""
    require(
        isinstance(value, numbers.Real) and not isinstance(value, bool),
        f"{what} should be the time as a float number of seconds, got {type(value).__name__}.",
    )
    return float(value)


def _unit_hint(seconds: float, run_s: float) -> str | None:
    """A hint when `seconds` is a plausible timing of `run_s` seconds in another unit."""
    for unit, factor in (("milliseconds", 1e3), ("microseconds", 1e6), ("nanoseconds", 1e9)):
        if 0.9 * run_s * factor <= seconds <= 1.7 * run_s * factor:
            return (
                f"your timing ({seconds:.4g}) looks like {unit}: the checker's call takes {run_s:.3f} s. "
                f"Return seconds, as time.perf_counter() differences are (do not multiply by {factor:g})."
            )
    return None


def _simulated_costs() -> list[tuple[float, float]]:
    """Two (compile_s, run_s) pairs, drawn afresh for each check: a short call and a call at
    least twice as long, so that no fixed number is a right timing of both."""
    short = draw_simulated_costs(compile_s=(0.15, 0.25), run_s=(0.04, 0.06))
    long = draw_simulated_costs(compile_s=(0.15, 0.25), run_s=(0.12, 0.16))
    return [(costs["compile_s"], costs["run_s"]) for costs in (short, long)]


@exercise_checker(
    hints=(
        "JAX returns from a call before the result is computed (asynchronous dispatch): a "
        "timing must wait for the result before reading the clock, and must leave the first "
        "call, which compiles, out of the timed region.",
        "Call fn(x) once and wait for it with jax.block_until_ready(...); then read "
        "time.perf_counter(), call fn(x) once more inside jax.block_until_ready(...), read the "
        "clock again and return the difference in seconds. The traps: not blocking the warm-up,"
        " timing two calls, milliseconds, and time.process_time(), which does not count "
        "waiting.",
    )
)
def check_time_blocked(time_blocked: Callable) -> None:
    """Checks `time_blocked(fn, x)`: seconds of one call after a warm-up, waiting for the result.

    It times two simulated functions whose costs are drawn afresh for each check, one call about
    three times as long as the other, so a constant cannot pass."""
    require_callable(time_blocked, "time_blocked")
    runs = []
    for compile_s, run_s in _simulated_costs():
        simulated = _SimulatedJit(compile_s, run_s)
        seconds = _seconds(
            call_answer(time_blocked, simulated, np.zeros(3), what="time_blocked"), "time_blocked"
        )
        runs.append((simulated, seconds))
    (short, short_s), (long, long_s) = runs
    require(
        short_s != long_s,
        f"your timing is {short_s:.4g} s both for a call of {short.run_s * 1e3:.0f} ms and for one "
        f"of {long.run_s * 1e3:.0f} ms: it is a fixed number, not a measurement. Read "
        "time.perf_counter() before and after the timed call and return the difference.",
    )
    for simulated, seconds in runs:
        _require_one_blocked_call(simulated, seconds)
    real = call_answer(
        time_blocked, jax.jit(lambda v: jnp.sin(v) @ v), jnp.ones((64, 64)), what="time_blocked"
    )
    require(
        isinstance(real, numbers.Real) and 0 < float(real) < 10,
        f"on a real jitted function your timing returned {real!r}; expected a small positive number of seconds.",
    )


def _require_one_blocked_call(simulated: _SimulatedJit, seconds: float) -> None:
    """Fails with the hint naming the mistake unless `seconds` times one blocked call of
    `simulated` after a blocked warm-up."""
    compile_s, run_s = simulated.compile_s, simulated.run_s
    require(
        simulated.calls >= 2,
        "call fn once before starting the clock (a warm-up), then time a second call.",
    )
    require(
        seconds >= 0,
        f"your timing is negative ({seconds:.4g} s): subtract the start time from the end time, "
        "end - start.",
    )
    now = time.perf_counter()
    require(
        seconds < 3600 and not (seconds > 1 and abs(seconds - now) < 10),
        f"your timing ({seconds:.4g} s) is a clock reading, not a duration: return the difference "
        "of two time.perf_counter() readings, taken before and after the call.",
    )
    unit_hint = _unit_hint(seconds, run_s)
    require(unit_hint is None, unit_hint or "")
    timed_call_blocked = any(result.blocked for result in simulated.results[1:])
    require(
        seconds >= 0.9 * run_s or not timed_call_blocked,
        f"you waited for the result, but your timing ({seconds * 1e3:.1f} ms) is shorter than the "
        f"{run_s * 1e3:.0f} ms the call takes: your clock does not count the time spent waiting "
        "(time.process_time() counts only the CPU's work). Use time.perf_counter().",
    )
    require(
        seconds >= 0.9 * run_s,
        f"your timing ({seconds * 1e3:.1f} ms) stopped before the result was ready: the checker's "
        f"function takes {run_s * 1e3:.0f} ms per call but returns at once, as JAX does, and your "
        "code did not wait for the timed call's result. Call .block_until_ready() on the result "
        "(or wrap the call in jax.block_until_ready(...)) before reading the clock.",
    )
    require(
        seconds < 0.9 * (compile_s + run_s),
        f"your timing ({seconds * 1e3:.0f} ms) includes the first call's compilation: warm up before "
        "starting the clock.",
    )
    warm_up_blocked = bool(simulated.blocked_before_next) and simulated.blocked_before_next[0]
    require(
        seconds < 1.7 * run_s or not warm_up_blocked,
        f"your timing ({seconds * 1e3:.0f} ms) covers {simulated.calls - 1} calls after the warm-up, "
        f"each {run_s * 1e3:.0f} ms: time exactly one call.",
    )
    require(
        seconds < 1.7 * run_s,
        f"your timing ({seconds * 1e3:.0f} ms) includes the warm-up call's work, still running when "
        "the clock started: your code did not wait for it, so block on the warm-up's result too, "
        "jax.block_until_ready(fn(x)), before starting the clock.",
    )
