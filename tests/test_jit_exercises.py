"""The jit chapter's checkers accept the reference solutions and reject typical wrong answers."""

import time
import warnings
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from wrong_answers import assert_fails_with

from jaxcourse.exercises import jit as exercises
from jaxcourse.exercises.jit import _agrees_with_float64


def stub(*args):
    raise NotImplementedError


# Exercise 1: in-place updates with .at[] ---------------------------------------------------------


def apply_boundary(u, left, right):
    return u.at[0].set(left).at[-1].set(right).at[1:-1].multiply(0.5)


def test_apply_boundary_reference_passes():
    """.at[].set for the ends and .at[].multiply for the interior match the NumPy version."""
    verdict = exercises.check_apply_boundary(apply_boundary)
    assert verdict, verdict.message


def test_apply_boundary_stub_is_not_yet():
    assert_fails_with(exercises.check_apply_boundary(stub), "no answer yet")


def test_apply_boundary_numpy_style_assignment_fails_with_at_hint():
    """The NumPy original raises JAX's immutability TypeError; the hint names .at[]."""

    def numpy_style(u, left, right):
        u = u.copy()
        u[0] = left
        u[-1] = right
        u[1:-1] *= 0.5
        return u

    assert_fails_with(exercises.check_apply_boundary(numpy_style), "u.at[i].set(v)")


def test_apply_boundary_discarding_at_result_fails():
    """Calling .at[].multiply without keeping its result leaves the interior unchanged."""

    def discards(u, left, right):
        u = u.at[0].set(left).at[-1].set(right)
        u.at[1:-1].multiply(0.5)  # the new array is thrown away
        return u

    assert_fails_with(exercises.check_apply_boundary(discards), "interior u[1:-1] is unchanged")


def test_apply_boundary_wrong_ends_fail():
    assert_fails_with(
        exercises.check_apply_boundary(lambda u, left, right: u.at[1:-1].multiply(0.5)),
        "end values",
    )


def test_apply_boundary_returning_a_pair_gets_a_structure_hint():
    """(u, the new array): one array was asked for, and the hint says so."""
    verdict = exercises.check_apply_boundary(
        lambda u, left, right: (u, apply_boundary(u, left, right))
    )
    assert_fails_with(
        verdict, "should be one array of shape (6,) (the updated copy of u), got a tuple"
    )


def test_apply_boundary_python_if_on_a_traced_value_fails_under_jit():
    """Skipping the halving with a Python `if` on the data works eagerly, not under jit."""

    def with_if(u, left, right):
        u = u.at[0].set(left).at[-1].set(right)
        if u[1:-1].sum() != 0:
            u = u.at[1:-1].multiply(0.5)
        return u

    assert_fails_with(exercises.check_apply_boundary(with_if), "traced value")


# Exercise 2: a timing that blocks ----------------------------------------------------------------


def time_blocked(fn, x):
    jax.block_until_ready(fn(x))
    start = time.perf_counter()
    jax.block_until_ready(fn(x))
    return time.perf_counter() - start


def test_time_blocked_reference_passes():
    """Warm up (blocking), then time one blocked call."""
    verdict = exercises.check_time_blocked(time_blocked)
    assert verdict, verdict.message


def test_time_blocked_method_form_passes():
    """Calling the result's own .block_until_ready() is as good as jax.block_until_ready."""

    def with_method(fn, x):
        fn(x).block_until_ready()
        start = time.perf_counter()
        fn(x).block_until_ready()
        return time.perf_counter() - start

    verdict = exercises.check_time_blocked(with_method)
    assert verdict, verdict.message


def test_time_blocked_stub_is_not_yet():
    assert_fails_with(exercises.check_time_blocked(stub), "no answer yet")


def test_time_blocked_without_blocking_fails():
    """The naive timing measures the dispatch only."""

    def naive(fn, x):
        jax.block_until_ready(fn(x))
        start = time.perf_counter()
        fn(x)
        return time.perf_counter() - start

    assert_fails_with(exercises.check_time_blocked(naive), "stopped before the result was ready")


def test_time_blocked_without_warmup_fails():
    """Timing the first call includes compilation."""

    def cold(fn, x):
        start = time.perf_counter()
        jax.block_until_ready(fn(x))
        return time.perf_counter() - start

    assert_fails_with(exercises.check_time_blocked(cold), "warm-up")


def test_time_blocked_unblocked_warmup_fails():
    """A warm-up whose work is still queued leaks into the timed call."""

    def leaky(fn, x):
        fn(x)
        start = time.perf_counter()
        jax.block_until_ready(fn(x))
        return time.perf_counter() - start

    assert_fails_with(exercises.check_time_blocked(leaky), "block on the warm-up")


def test_time_blocked_returning_milliseconds_in_a_string_fails():
    assert_fails_with(
        exercises.check_time_blocked(lambda fn, x: f"{time_blocked(fn, x) * 1e3} ms"), "float"
    )


def test_time_blocked_in_milliseconds_is_not_blamed_on_compilation():
    """A correct timing in milliseconds gets a unit hint, not the compilation hint."""
    verdict = exercises.check_time_blocked(lambda fn, x: time_blocked(fn, x) * 1e3)
    assert_fails_with(verdict, "looks like milliseconds")
    assert "compilation" not in verdict.message


# Exercise 3: stop recompiling --------------------------------------------------------------------


def soft_threshold(x, threshold):
    return jnp.sign(x) * jnp.maximum(jnp.abs(x) - threshold, 0.0)


soft_threshold_jit = jax.jit(soft_threshold)


def shrink_path(x, thresholds):
    return [soft_threshold_jit(x, t) for t in thresholds]


def test_shrink_path_reference_passes():
    """One jitted soft_threshold, threshold passed as a traced argument."""
    verdict = exercises.check_shrink_path(shrink_path)
    assert verdict, verdict.message


def test_shrink_path_vmapped_passes():
    """One program for all thresholds at once (a stacked array) also passes."""
    batched = jax.jit(jax.vmap(soft_threshold, in_axes=(None, 0)))
    verdict = exercises.check_shrink_path(lambda x, thresholds: batched(x, jnp.asarray(thresholds)))
    assert verdict, verdict.message


def test_shrink_path_stub_is_not_yet():
    assert_fails_with(exercises.check_shrink_path(stub), "no answer yet")


def test_shrink_path_partial_in_loop_fails():
    """The chapter's slow version: a new partial per threshold compiles every time."""

    def slow(x, thresholds):
        return [jax.jit(partial(soft_threshold, threshold=t))(x) for t in thresholds]

    assert_fails_with(exercises.check_shrink_path(slow), "compiled 3 new programs")


def test_shrink_path_static_threshold_fails():
    """A static threshold is part of the cache key, so every new value compiles."""
    static = jax.jit(soft_threshold, static_argnames="threshold")
    verdict = exercises.check_shrink_path(
        lambda x, thresholds: [static(x, threshold=t) for t in thresholds]
    )
    assert_fails_with(verdict, "static_argnames")


def test_shrink_path_eager_fails():
    """Un-jitted code compiles one small program per operation on first use."""
    verdict = exercises.check_shrink_path(
        lambda x, thresholds: [soft_threshold(x, t) for t in thresholds]
    )
    assert_fails_with(verdict, "eager")


def test_shrink_path_wrong_values_fail():
    verdict = exercises.check_shrink_path(
        lambda x, thresholds: [soft_threshold_jit(x, 0.0) for _ in thresholds]
    )
    assert_fails_with(verdict, "wrong values")


def test_shrink_path_dict_gets_a_structure_hint():
    """A dict keyed by threshold is not the list (or stacked array) asked for."""
    verdict = exercises.check_shrink_path(
        lambda x, thresholds: {t: soft_threshold_jit(x, t) for t in thresholds}
    )
    assert_fails_with(verdict, "one array of shape")


# Exercise 4: serve a fixed set of shapes, compiled ahead of time ------------------------------------


def precompile(fn, shapes, dtype):
    compiled = {
        (tuple(shape), jnp.dtype(dtype)): jax.jit(fn)
        .lower(jax.ShapeDtypeStruct(shape, dtype))
        .compile()
        for shape in shapes
    }

    def serve(x):
        key = (tuple(x.shape), x.dtype)
        if key not in compiled:
            raise ValueError(
                f"no executable for shape {key[0]} and dtype {key[1]}; served: {list(compiled)}"
            )
        return compiled[key](x)

    return serve


def test_precompile_reference_passes():
    """One ShapeDtypeStruct-lowered executable per (shape, dtype), looked up at call time."""
    verdict = exercises.check_precompile(precompile)
    assert verdict, verdict.message


def test_precompile_stub_is_not_yet():
    assert_fails_with(exercises.check_precompile(stub), "no answer yet")


def _lazy_jit(fn, shapes, dtype):
    """jax.jit(fn) compiles on first use, at call time, and any shape."""
    return jax.jit(fn)


def _warm_up_with_data(fn, shapes, dtype):
    """Compiles by running the jitted function on zeros: the cache is warm, but fn ran on data."""
    jitted = jax.jit(fn)
    for shape in shapes:
        jitted(jnp.zeros(shape, dtype))

    def serve(x):
        if tuple(x.shape) not in {tuple(s) for s in shapes} or x.dtype != dtype:
            raise ValueError(f"shape {tuple(x.shape)}, dtype {x.dtype} not served")
        return jitted(x)

    return serve


def _keyed_on_shape_only(fn, shapes, dtype):
    compiled = {
        tuple(s): jax.jit(fn).lower(jax.ShapeDtypeStruct(s, dtype)).compile() for s in shapes
    }

    def serve(x):
        if tuple(x.shape) not in compiled:
            raise ValueError(f"shape {tuple(x.shape)} not served")
        return compiled[tuple(x.shape)](x)

    return serve


def _falls_back_to_jit(fn, shapes, dtype):
    compiled = {
        tuple(s): jax.jit(fn).lower(jax.ShapeDtypeStruct(s, dtype)).compile() for s in shapes
    }
    return lambda x: compiled[tuple(x.shape)](x) if tuple(x.shape) in compiled else jax.jit(fn)(x)


def _key_error(fn, shapes, dtype):
    compiled = {
        tuple(s): jax.jit(fn).lower(jax.ShapeDtypeStruct(s, dtype)).compile() for s in shapes
    }
    return lambda x: compiled[tuple(x.shape)](x)


@pytest.mark.parametrize(
    ("wrong", "hint"),
    [
        (_lazy_jit, "before it returns"),
        (_warm_up_with_data, "ran fn 3 time(s) on data"),
        (_keyed_on_shape_only, "key your executables on both"),
        (_falls_back_to_jit, "compiling 1 program(s) at call time"),
        (_key_error, "raised KeyError"),
    ],
    ids=["lazy-jit", "warm-up-with-data", "shape-only-key", "jit-fallback", "key-error"],
)
def test_precompile_wrong_answers_fail(wrong, hint):
    assert_fails_with(exercises.check_precompile(wrong), hint)


# Exercise 5: check jit against float64 -----------------------------------------------------------


def agrees_with_float64(fn, x, rtol=1e-4):
    jitted = float(jax.jit(fn)(x))
    with jax.enable_x64(True):
        reference = float(fn(np.asarray(x, np.float64)))
    return abs(jitted - reference) <= rtol * abs(reference)


def test_agrees_with_float64_reference_passes():
    """jit on x as given, float64 reference under enable_x64, tolerance relative to the reference."""
    verdict = exercises.check_agrees_with_float64(agrees_with_float64)
    assert verdict, verdict.message


def test_agrees_with_float64_reference_used_after_the_x64_block_passes_with_a_note():
    """The newcomer's answer: the float64 reference is an array, compared after the block, where
    JAX rounds it to float32 and warns. It passes, and the verdict, not a warning, says why."""

    def late_comparison(fn, x, rtol=1e-4):
        jitted = jax.jit(fn)(x)
        with jax.enable_x64(True):
            reference = fn(np.asarray(x, np.float64))
        return bool(abs(jitted - reference) <= rtol * abs(reference))

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        verdict = exercises.check_agrees_with_float64(late_comparison)
    assert verdict, verdict.message
    assert "truncated to dtype float32" in verdict.message and "float(" in verdict.message


def test_agrees_with_float64_isclose_passes():
    """np.isclose(jit, reference, rtol=rtol) is relative to its second argument, as it should be."""

    def with_isclose(fn, x, rtol=1e-4):
        with jax.enable_x64(True):
            reference = fn(np.asarray(x, np.float64))
        return np.isclose(jax.jit(fn)(x), reference, rtol=rtol)

    verdict = exercises.check_agrees_with_float64(with_isclose)
    assert verdict, verdict.message


def test_agrees_with_float64_stub_is_not_yet():
    assert_fails_with(exercises.check_agrees_with_float64(stub), "no answer yet")


def test_agrees_with_float64_simulated_miscompile_is_wrong_only_under_jit():
    """The checker's miscompilation on demand: eager JAX right, jit off by exactly `error`."""
    fn = _agrees_with_float64._wrong_under_jit(1.0)
    x = jnp.full(1_000, 1_000.0)
    assert float(fn(x)) == 1e6
    assert float(jax.jit(fn)(x)) == 1e6 + 1


def test_agrees_with_float64_float32_cancellation_fools_a_float32_reference():
    """sum(exp(x) - 1) at x = 1e-8: eager float32 equals jit (both 0), float64 does not."""
    x = jnp.full(1_000, 1e-8, jnp.float32)
    assert (
        float(_agrees_with_float64._exp_minus_one_sum(x))
        == float(jax.jit(_agrees_with_float64._exp_minus_one_sum)(x))
        == 0.0
    )
    with jax.enable_x64(True):
        assert float(
            _agrees_with_float64._exp_minus_one_sum(np.asarray(x, np.float64))
        ) == pytest.approx(1e-5, rel=1e-6)


def test_agrees_with_float64_absolute_tolerance_fails():
    def absolute(fn, x, rtol=1e-4):
        with jax.enable_x64(True):
            reference = float(fn(np.asarray(x, np.float64)))
        return abs(float(jax.jit(fn)(x)) - reference) <= rtol

    assert_fails_with(exercises.check_agrees_with_float64(absolute), "relative to the reference")


def test_agrees_with_float64_float32_eager_reference_fails():
    """Comparing jit with eager float32 shares float32's rounding."""

    def float32_reference(fn, x, rtol=1e-4):
        reference = float(fn(x))
        return abs(float(jax.jit(fn)(x)) - reference) <= rtol * abs(reference)

    assert_fails_with(
        exercises.check_agrees_with_float64(float32_reference), "shares float32's rounding"
    )


def test_agrees_with_float64_without_enable_x64_fails():
    """np.float64 data without enable_x64: JAX rounds it back to float32."""

    def no_x64(fn, x, rtol=1e-4):
        reference = float(fn(np.asarray(x, np.float64)))
        return abs(float(jax.jit(fn)(x)) - reference) <= rtol * abs(reference)

    assert_fails_with(exercises.check_agrees_with_float64(no_x64), "enable_x64")


def test_agrees_with_float64_returning_the_difference_fails():
    def difference(fn, x, rtol=1e-4):
        with jax.enable_x64(True):
            reference = float(fn(np.asarray(x, np.float64)))
        return abs(float(jax.jit(fn)(x)) - reference)

    assert_fails_with(exercises.check_agrees_with_float64(difference), "not the difference")


def test_agrees_with_float64_reversed_comparison_fails():
    assert_fails_with(
        exercises.check_agrees_with_float64(
            lambda fn, x, rtol=1e-4: not agrees_with_float64(fn, x, rtol)
        ),
        "answers are reversed",
    )


def test_agrees_with_float64_without_jit_fails():
    """Eager against float64 cannot see a miscompilation."""

    def eager(fn, x, rtol=1e-4):
        value = float(fn(x))
        with jax.enable_x64(True):
            reference = float(fn(np.asarray(x, np.float64)))
        return abs(value - reference) <= rtol * abs(reference)

    assert_fails_with(exercises.check_agrees_with_float64(eager), "compare jax.jit(fn)(x)")


def test_agrees_with_float64_fixed_rtol_fails():
    assert_fails_with(
        exercises.check_agrees_with_float64(lambda fn, x, rtol=1e-4: agrees_with_float64(fn, x)),
        "rtol argument",
    )


def test_agrees_with_float64_exception_is_reported():
    def broken(fn, x, rtol=1e-4):
        raise ValueError("oops")

    assert_fails_with(exercises.check_agrees_with_float64(broken), "raised ValueError")
