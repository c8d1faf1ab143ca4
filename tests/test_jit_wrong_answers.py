"""More wrong answers to the jit chapter's exercises, written from the exercise texts alone as a
hurried learner would (issue 27): each must fail, with a hint that names what the answer did."""

import time

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from wrong_answers import assert_fails_with

from jaxcourse.exercises.jit import (
    check_agrees_with_float64,
    check_apply_boundary,
    check_precompile,
    check_shrink_path,
    check_time_blocked,
)

# Exercise 1 -------------------------------------------------------------


def boundary_halves_everything_after_ends(u, left, right):
    return (u.at[0].set(left).at[-1].set(right)) * 0.5


def boundary_swaps_ends(u, left, right):
    return u.at[0].set(right).at[-1].set(left).at[1:-1].multiply(0.5)


def boundary_numpy_inside(u, left, right):
    u = np.array(u)
    u[0] = left
    u[-1] = right
    u[1:-1] *= 0.5
    return u


def boundary_branch_on_left(u, left, right):
    if left == right:  # a Python branch on a traced value
        return u.at[1:-1].multiply(0.5).at[0].set(left).at[-1].set(left)
    return u.at[0].set(left).at[-1].set(right).at[1:-1].multiply(0.5)


def boundary_integer_result(u, left, right):
    return u.at[0].set(left).at[-1].set(right).at[1:-1].multiply(0.5).astype(jnp.int32)


def boundary_sets_last_to_left(u, left, right):
    return u.at[0].set(left).at[-1].set(left).at[1:-1].multiply(0.5)


# Exercise 2 -------------------------------------------------------------


def timing_with_process_time(fn, x):
    jax.block_until_ready(fn(x))
    start = time.process_time()
    jax.block_until_ready(fn(x))
    return time.process_time() - start


def timing_reversed_subtraction(fn, x):
    jax.block_until_ready(fn(x))
    start = time.perf_counter()
    jax.block_until_ready(fn(x))
    return start - time.perf_counter()


def timing_of_two_calls(fn, x):
    jax.block_until_ready(fn(x))
    start = time.perf_counter()
    jax.block_until_ready(fn(x))
    jax.block_until_ready(fn(x))
    return time.perf_counter() - start


def timing_method_not_called(fn, x):
    jax.block_until_ready(fn(x))
    start = time.perf_counter()
    fn(x).block_until_ready  # noqa: B018 (forgot the parentheses)
    return time.perf_counter() - start


def timing_returns_the_clock(fn, x):
    jax.block_until_ready(fn(x))
    jax.block_until_ready(fn(x))
    return time.perf_counter()


# Exercise 3 -------------------------------------------------------------
def soft_threshold(x, threshold):
    return jnp.sign(x) * jnp.maximum(jnp.abs(x) - threshold, 0.0)


def path_vmap_jitted_inside(x, thresholds):
    return jax.jit(jax.vmap(soft_threshold, in_axes=(None, 0)))(x, jnp.asarray(thresholds))


_static_threshold = jax.jit(soft_threshold, static_argnames="threshold")


def path_static_threshold(x, thresholds):
    return [_static_threshold(x, threshold=t) for t in thresholds]


_no_sign = jax.jit(lambda x, t: jnp.maximum(jnp.abs(x) - t, 0.0))


def path_loses_the_sign(x, thresholds):
    return [_no_sign(x, t) for t in thresholds]


_clip = jax.jit(lambda x, t: jnp.clip(x, -t, t))


_soft_jit = jax.jit(soft_threshold)
_memo = {}


def path_remembers_results(x, thresholds):
    key = x.shape
    if key not in _memo:
        _memo[key] = [_soft_jit(x, t) for t in thresholds]
    return _memo[key]


def path_reversed(x, thresholds):
    return [_soft_jit(x, t) for t in reversed(thresholds)]


# Exercise 4 -------------------------------------------------------------


def precompile_returns_none_when_missing(fn, shapes, dtype):
    compiled = {
        (tuple(s), jnp.dtype(dtype)): jax.jit(fn).lower(jax.ShapeDtypeStruct(s, dtype)).compile()
        for s in shapes
    }

    def serve(x):
        executable = compiled.get((tuple(x.shape), x.dtype))
        return None if executable is None else executable(x)

    return serve


def precompile_vague_error(fn, shapes, dtype):
    compiled = {
        (tuple(s), jnp.dtype(dtype)): jax.jit(fn).lower(jax.ShapeDtypeStruct(s, dtype)).compile()
        for s in shapes
    }

    def serve(x):
        key = (tuple(x.shape), x.dtype)
        if key not in compiled:
            raise ValueError("input not supported")
        return compiled[key](x)

    return serve


def precompile_ignores_dtype(fn, shapes, dtype):
    compiled = {
        (tuple(s), jnp.dtype(jnp.float32)): jax.jit(fn)
        .lower(jax.ShapeDtypeStruct(s, jnp.float32))
        .compile()
        for s in shapes
    }

    def serve(x):
        key = (tuple(x.shape), x.dtype)
        if key not in compiled:
            raise ValueError(f"no executable for shape {key[0]} and dtype {key[1]}")
        return compiled[key](x)

    return serve


_EXECUTABLES = {}


def precompile_shared_cache(fn, shapes, dtype):
    for s in shapes:
        key = (tuple(s), jnp.dtype(dtype))
        if key not in _EXECUTABLES:  # kept from one call to the next, whatever fn is
            _EXECUTABLES[key] = jax.jit(fn).lower(jax.ShapeDtypeStruct(s, dtype)).compile()

    def serve(x):
        key = (tuple(x.shape), x.dtype)
        if key not in _EXECUTABLES:
            raise ValueError(f"no executable for shape {key[0]} and dtype {key[1]}")
        return _EXECUTABLES[key](x)

    return serve


def precompile_with_arrays(fn, shapes, dtype):
    compiled = {
        (tuple(s), jnp.dtype(dtype)): jax.jit(fn).lower(jnp.zeros(s, dtype)).compile()
        for s in shapes
    }

    def serve(x):
        key = (tuple(x.shape), x.dtype)
        if key not in compiled:
            raise ValueError(f"no executable for shape {key[0]} and dtype {key[1]}")
        return compiled[key](x)

    return serve


# Exercise 5 -------------------------------------------------------------


def agrees_returns_difference(fn, x, rtol=1e-4):
    jitted = float(jax.jit(fn)(x))
    with jax.enable_x64(True):
        reference = float(fn(np.asarray(x, np.float64)))
    return abs(jitted - reference)


def agrees_without_x64(fn, x, rtol=1e-4):
    jitted = float(jax.jit(fn)(x))
    reference = float(fn(jnp.asarray(x, jnp.float64)))  # silently float32 without x64
    return abs(jitted - reference) <= rtol * abs(reference)


def agrees_leaves_x64_on(fn, x, rtol=1e-4):
    jitted = float(jax.jit(fn)(x))
    jax.config.update("jax_enable_x64", True)
    reference = float(fn(np.asarray(x, np.float64)))
    return abs(jitted - reference) <= rtol * abs(reference)


def agrees_sets_x64_off_at_the_end(fn, x, rtol=1e-4):
    jitted = float(jax.jit(fn)(x))
    jax.config.update("jax_enable_x64", True)
    reference = float(fn(np.asarray(x, np.float64)))
    jax.config.update("jax_enable_x64", False)  # a fixed value, not the one it found
    return abs(jitted - reference) <= rtol * abs(reference)


def agrees_x64_on_float32_data(fn, x, rtol=1e-4):
    jitted = float(jax.jit(fn)(x))
    with jax.enable_x64(True):
        reference = float(fn(x))  # x is still float32
    return abs(jitted - reference) <= rtol * abs(reference)


# The tests --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("answer", "fragment"),
    [
        (boundary_halves_everything_after_ends, "the end values are half of left"),
        (boundary_swaps_ends, "the end values are swapped"),
        (boundary_numpy_inside, "your code turns u into a NumPy array"),
        (boundary_branch_on_left, "TracerBoolConversionError"),
        (boundary_integer_result, "returned an array of dtype int32"),
        (boundary_sets_last_to_left, "should be left=-1.0 and right=2.0, got -1.000 and -1.000"),
    ],
)
def test_apply_boundary_wrong_answers(answer, fragment):
    assert_fails_with(check_apply_boundary(answer), fragment)


@pytest.mark.parametrize(
    ("answer", "fragment"),
    [
        (timing_with_process_time, "your clock does not count the time spent waiting"),
        (timing_reversed_subtraction, "your timing is negative"),
        (timing_of_two_calls, "covers 2 calls after the warm-up"),
        (timing_method_not_called, "did not wait for the timed call's result"),
        (timing_returns_the_clock, "is a clock reading, not a duration"),
    ],
)
def test_time_blocked_wrong_answers(answer, fragment):
    assert_fails_with(check_time_blocked(answer), fragment)


def timing_fixed_number(fn, x):
    """Calls fn twice, as the checker counts, and returns a plausible constant."""
    fn(x)
    fn(x)
    return 0.12


def test_time_blocked_a_fixed_number_fails():
    """The simulated costs are drawn afresh for each check, so no constant is a right timing."""
    assert_fails_with(
        check_time_blocked(timing_fixed_number), "it is a fixed number, not a measurement"
    )


def test_time_blocked_checks_see_fresh_costs():
    """Two checks of the reference draw different simulated costs."""
    from jaxcourse import checks

    before = len(checks.SIMULATED_COSTS)
    assert check_time_blocked(timing_reference), "the reference failed"
    assert check_time_blocked(timing_reference), "the reference failed"
    first, second = (
        checks.SIMULATED_COSTS[before : before + 2],
        checks.SIMULATED_COSTS[before + 2 :],
    )
    assert len(first) == len(second) == 2 and first != second


def timing_reference(fn, x):
    jax.block_until_ready(fn(x))
    start = time.perf_counter()
    jax.block_until_ready(fn(x))
    return time.perf_counter() - start


@pytest.mark.parametrize(
    ("answer", "fragment"),
    [
        (path_vmap_jitted_inside, "it jits inside shrink_path"),
        (path_static_threshold, "as it is for a static argument"),
        (path_loses_the_sign, "loses the sign of x"),
        (path_remembers_results, "returned the results of the previous call"),
        (path_reversed, "your results come in reverse order"),
    ],
)
def test_shrink_path_wrong_answers(answer, fragment):
    assert_fails_with(check_shrink_path(answer), fragment)


@pytest.mark.slow_after_first
@pytest.mark.parametrize(
    ("answer", "fragment"),
    [
        (precompile_returns_none_when_missing, "returned None: an input that was not compiled for"),
        (precompile_vague_error, "say what was asked for, (5,)"),
        (precompile_ignores_dtype, "compile for the dtype argument"),
        (precompile_shared_cache, "kept from one call of precompile to the next"),
        (precompile_with_arrays, "without creating an array"),
    ],
)
def test_precompile_wrong_answers(answer, fragment):
    assert_fails_with(check_precompile(answer), fragment)


@pytest.mark.parametrize(
    ("answer", "fragment"),
    [
        (agrees_returns_difference, "return True or False"),
        (agrees_without_x64, "without it, JAX silently rounds back to float32"),
        (agrees_leaves_x64_on, "your function left jax_enable_x64 on, but it was off"),
        (agrees_sets_x64_off_at_the_end, "your function left jax_enable_x64 off, but it was on"),
        (agrees_x64_on_float32_data, "compute it on np.asarray(x, np.float64)"),
    ],
)
def test_agrees_with_float64_wrong_answers(answer, fragment):
    try:
        assert_fails_with(check_agrees_with_float64(answer), fragment)
    finally:
        jax.config.update("jax_enable_x64", False)
