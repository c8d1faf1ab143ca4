"""Checkers for the exercises of the chapter 'Just-in-time compilation with jax.jit'."""

from __future__ import annotations

import itertools
import numbers
import time
from collections.abc import Callable
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np

from ..checks import (
    CheckFailed,
    call_answer,
    close,
    exercise_checker,
    require,
    require_array,
    require_callable,
)
from ..tracecount import count_compilations

# Exercise 1 ------------------------------------------------------------------------------------


def _apply_boundary_reference(u: np.ndarray, left: float, right: float) -> np.ndarray:
    u = u.copy()
    u[0] = left
    u[-1] = right
    u[1:-1] *= 0.5
    return u


_IMMUTABLE_HINTS = (
    (
        TypeError,
        "immutable",
        "JAX arrays are immutable: replace `u[i] = v` by `u = u.at[i].set(v)` and "
        "`u[a:b] *= c` by `u = u.at[a:b].multiply(c)`",
    ),
)


def _apply_boundary_cases() -> list[tuple[np.ndarray, float, float]]:
    rng = np.random.default_rng(0)
    return [
        (np.arange(1.0, 7.0, dtype=np.float32), -1.0, 2.0),
        (rng.normal(size=9).astype(np.float32), 0.5, 0.25),
        (rng.normal(size=3).astype(np.float32), 3.0, -3.0),
        (np.zeros(4, np.float32), 0.0, 0.0),  # zeros: nothing changes
        (np.array([5.0, 7.0], np.float32), 1.0, 1.0),  # no interior; equal ends
    ]


@exercise_checker("Exercise 1 (in-place updates with .at[])")
def check_apply_boundary(apply_boundary: Callable) -> None:
    """Checks `apply_boundary(u, left, right)`, eagerly and under jit, against the NumPy version."""
    require_callable(apply_boundary, "apply_boundary")
    for u, left, right in _apply_boundary_cases():
        expected = _apply_boundary_reference(u, left, right)
        for how, fn in (("", apply_boundary), (" under jax.jit", jax.jit(apply_boundary))):
            actual = call_answer(
                fn, jnp.asarray(u), left, right, what=f"apply_boundary{how}", hints=_IMMUTABLE_HINTS
            )
            require(
                actual is not None,
                "apply_boundary must return the new array (.at[] returns a copy; it does not modify u).",
            )
            actual = require_array(
                actual, u.shape, what=f"apply_boundary{how}", expected="the updated copy of u"
            )
            require(
                close(actual[[0, -1]], expected[[0, -1]]),
                f"the end values should be left={left} and right={right}, got {actual[0]:.3f} and {actual[-1]:.3f}.",
            )
            if close(actual[1:-1], expected[1:-1]):
                continue
            require(
                not close(actual[1:-1], u[1:-1]),
                "the interior u[1:-1] is unchanged: it should be halved, with u = u.at[1:-1].multiply(0.5). "
                "Remember that .at[] returns a new array, which you must keep.",
            )
            require(
                False,
                f"the interior values are wrong for u = {np.round(u, 3).tolist()}: expected "
                f"{np.round(expected[1:-1], 3).tolist()}, got {np.round(actual[1:-1], 3).tolist()}.",
            )


# Exercise 2 ------------------------------------------------------------------------------------


class _PendingResult:
    """A result that becomes ready at `ready_at`, like a JAX array still being computed."""

    def __init__(self, ready_at: float):
        self._ready_at = ready_at

    def block_until_ready(self) -> _PendingResult:
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
        self._queue_free_at = 0.0

    def __call__(self, x):
        self.calls += 1
        if self.calls == 1:
            time.sleep(self.compile_s)
        ready_at = max(time.perf_counter(), self._queue_free_at) + self.run_s
        self._queue_free_at = ready_at
        return _PendingResult(ready_at)


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
                f"your timing ({seconds:.4g}) looks like {unit}: the checker's call takes {run_s} s. "
                f"Return seconds, as time.perf_counter() differences are (do not multiply by {factor:g})."
            )
    return None


@exercise_checker("Exercise 2 (a timing that blocks)")
def check_time_blocked(time_blocked: Callable) -> None:
    """Checks `time_blocked(fn, x)`: seconds of one call after a warm-up, waiting for the result."""
    require_callable(time_blocked, "time_blocked")
    compile_s, run_s = 0.25, 0.1
    simulated = _SimulatedJit(compile_s, run_s)
    seconds = _seconds(
        call_answer(time_blocked, simulated, np.zeros(3), what="time_blocked"), "time_blocked"
    )
    require(
        simulated.calls >= 2,
        "call fn once before starting the clock (a warm-up), then time a second call.",
    )
    unit_hint = _unit_hint(seconds, run_s)
    require(unit_hint is None, unit_hint or "")
    require(
        seconds >= 0.9 * run_s,
        f"your timing ({seconds * 1e3:.1f} ms) stopped before the result was ready: the checker's function "
        f"takes {run_s * 1e3:.0f} ms per call but returns at once, as JAX does. Call "
        ".block_until_ready() on the result (or jax.block_until_ready) before reading the clock.",
    )
    require(
        seconds < 0.9 * (compile_s + run_s),
        f"your timing ({seconds * 1e3:.0f} ms) includes the first call's compilation: warm up before "
        "starting the clock.",
    )
    require(
        seconds < 1.7 * run_s,
        f"your timing ({seconds * 1e3:.0f} ms) includes the warm-up call's work, still running when the "
        "clock started: block on the warm-up's result too.",
    )
    real = call_answer(
        time_blocked, jax.jit(lambda v: jnp.sin(v) @ v), jnp.ones((64, 64)), what="time_blocked"
    )
    require(
        isinstance(real, numbers.Real) and 0 < float(real) < 10,
        f"on a real jitted function your timing returned {real!r}; expected a small positive number of seconds.",
    )


# Exercise 3 ------------------------------------------------------------------------------------


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


# Exercise 4 ------------------------------------------------------------------------------------


SERVED_SHAPES = ((4,), (8,), (2, 3))
"""The shapes the checker asks `precompile` to serve."""


def _served_function(traces: list, runs: list) -> Callable:
    """The checker's `fn`: records its traces (Python) and its runs (a callback in the program)."""

    def fn(x):
        traces.append(tuple(x.shape))
        jax.debug.callback(lambda: runs.append(None))  # runs whenever the compiled program runs
        return jnp.cumsum(jnp.cos(x) * 2.0, axis=-1)

    return fn


def _require_value_error(serve: Callable, x: jax.Array, name: str, fix: str) -> None:
    """Calling `serve` on an array it was not compiled for must raise a ValueError naming `name`."""
    jax.block_until_ready(x)
    try:
        with count_compilations() as count:
            serve(x)
    except ValueError as error:
        require(
            name in str(error),
            f"serve({jax.typeof(x)}) raised ValueError({str(error)!r}): say what was asked for, {name}, "
            "so that the caller knows which input is not served.",
        )
        return
    except Exception as error:  # the learner's code, or JAX refusing the wrong executable
        require(
            False,
            f"serve({jax.typeof(x)}) raised {type(error).__name__}: {str(error)[:100]}. {fix}",
        )
    require(
        False,
        f"serve({jax.typeof(x)}) ran, compiling {count.compiles} program(s) at call time: a served "
        f"function must only run what was compiled ahead. {fix}",
    )


@exercise_checker("Exercise 4 (serve a fixed set of shapes, compiled ahead of time)")
def check_precompile(precompile: Callable) -> None:
    """Checks `precompile(fn, shapes, dtype)` -> `serve`: every shape traced and compiled once,
    before any data exists and without running `fn`; `serve(x)` runs the matching executable
    without compiling, and raises ValueError for a shape or dtype it was not compiled for."""
    require_callable(precompile, "precompile")
    traces, runs = [], []
    fn = _served_function(traces, runs)
    serve = call_answer(precompile, fn, SERVED_SHAPES, jnp.float32, what="precompile")
    require(
        callable(serve),
        f"precompile should return a function serve(x), got {type(serve).__name__}.",
    )
    require(
        sorted(traces) == sorted(SERVED_SHAPES),
        f"precompile should trace fn once for each of {list(SERVED_SHAPES)} before it returns; it traced it "
        f"for {traces}. Lower each shape ahead of time: jax.jit(fn).lower(jax.ShapeDtypeStruct(shape, "
        "dtype)).compile().",
    )
    require(
        not runs,
        f"precompile ran fn {len(runs)} time(s) on data: warming up a jitted function compiles by running "
        "it. Compiling ahead of time needs no data: lower from jax.ShapeDtypeStruct and .compile().",
    )
    rng = np.random.default_rng(5)
    for shape in SERVED_SHAPES:
        x = rng.normal(size=shape).astype(np.float32)
        x_device = jnp.asarray(
            x
        )  # outside the count: putting data on the device is not serve's doing
        with count_compilations() as count:
            values = call_answer(serve, x_device, what=f"serve (shape {shape})")
        require(
            count.traces == 0 and count.compiles == 0,
            f"serve traced or compiled at call time for shape {shape}: call the executable compiled "
            "ahead for it, not jax.jit(fn).",
        )
        require(
            close(values, np.cumsum(np.cos(x) * 2.0, axis=-1), rtol=1e-5, atol=1e-5),
            f"serve gives wrong values for shape {shape}: run the executable compiled for that shape.",
        )
    _require_value_error(
        serve,
        jnp.ones(5, jnp.float32),
        "(5,)",
        "Look the executable up by the input's shape and dtype, and raise ValueError naming the shape "
        "when there is none.",
    )
    _require_value_error(
        serve,
        jnp.ones(4, jnp.int32),
        "int32",
        "An executable is compiled for one shape AND one dtype: key your executables on both, "
        "(x.shape, x.dtype), and raise ValueError naming the dtype too.",
    )


# Exercise 5 ------------------------------------------------------------------------------------


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


@exercise_checker("Exercise 5 (check jit against float64)")
def check_agrees_with_float64(agrees_with_float64: Callable) -> None:
    """Checks `agrees_with_float64(fn, x, rtol)`: jit(fn)(x) within rtol * |float64 value| of it."""
    require_callable(agrees_with_float64, "agrees_with_float64")
    from ..jit_parity import float64_sum, is_close, log_reduction, sample

    spread = jnp.asarray(sample((1_000,), seed=5))
    spread_sum = float(np.sum(np.asarray(spread, np.float64)))
    tiny = jnp.full(1_000, 1e-8, jnp.float32)
    # The checker's own answer for the real float32 cancellation: whatever this build computes
    # under jit, it is compared with the float64 value, never with eager float32.
    exp_expected = is_close(float(jax.jit(_exp_minus_one_sum)(tiny)), 1_000 * np.expm1(1e-8))

    def ask(case: str, fn, x, **rtol) -> bool:
        answer = call_answer(
            partial(agrees_with_float64, **rtol), fn, x, what="agrees_with_float64"
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
