"""Wrong answers to the debugging chapter's exercises, written from the exercise texts alone as a
hurried learner would (issue 27, point 4): each must fail, with a hint that names what the answer
did."""

import re

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.experimental import checkify
from wrong_answers import assert_answer_fails

from jaxcourse import debugging, jit_parity
from jaxcourse.exercises.debugging import (
    check_first_wrong_size,
    check_nan_source,
    check_normalise_weights,
    check_shift_counts,
)


@pytest.fixture(autouse=True)
def _restore_debug_nans():
    """Some wrong answers below leave jax_debug_nans on, on purpose: never let it leak."""
    was_on = jax.config.jax_debug_nans
    yield
    jax.config.update("jax_debug_nans", was_on)


# Exercise 1: nan_source(fn, x) -> the primitive's name or None -----------------------------------


def _primitive(error):
    found = re.search(r"encountered in (\w+)", str(error))
    return found.group(1) if found else str(error)


def _global_flag_left_on(fn, x):
    jax.config.update("jax_debug_nans", True)
    try:
        fn(x)
    except FloatingPointError as error:
        return _primitive(error)
    return None


def _global_flag_set_off(fn, x):
    jax.config.update("jax_debug_nans", True)
    try:
        fn(x)
    except FloatingPointError as error:
        return _primitive(error)
    finally:
        jax.config.update("jax_debug_nans", False)  # off, whatever it was before
    return None


def _debug_infs(fn, x):
    try:
        with jax.debug_infs(True):
            fn(x)
    except FloatingPointError as error:
        return _primitive(error)
    return None


def _whole_message(fn, x):
    try:
        with jax.debug_nans(True):
            fn(x)
    except FloatingPointError as error:
        return str(error)
    return None


def _always_nan(fn, x):
    try:
        with jax.debug_nans(True):
            fn(x)
    except FloatingPointError:
        return "nan"
    return None


def _a_flag(fn, x):
    try:
        with jax.debug_nans(True):
            fn(x)
    except FloatingPointError:
        return True
    return False


def _float_checks(fn, x):
    error, _ = checkify.checkify(fn, errors=checkify.float_checks)(x)
    message = error.get()
    if message is None:
        return None
    found = re.search(r"(nan|division by zero).*?(?:in|at) (\w+)", message)
    return "div" if "division by zero" in message else (found.group(2) if found else "unknown")


def _output_is_nan(fn, x):
    return "nan" if bool(jnp.any(jnp.isnan(fn(x)))) else None


@pytest.mark.parametrize(
    ("wrong", "hint"),
    [
        (_global_flag_left_on, "jax_debug_nans was still on"),
        (_global_flag_set_off, "switched jax_debug_nans off although it was on"),
        (_debug_infs, "but you returned None"),
        (_whole_message, "not the whole message"),
        (_always_nan, "not 'nan'"),
        (_a_flag, "got a bool"),
        (_float_checks, "not 'unknown'"),
        (_output_is_nan, "not 'nan'"),
    ],
    ids=[
        "flag-left-on",
        "flag-set-off",
        "debug-infs",
        "whole-message",
        "always-nan",
        "a-bool",
        "checkify-float-checks",
        "output-isnan",
    ],
)
def test_nan_source_wrong_answers(wrong, hint):
    assert_answer_fails(check_nan_source, wrong, hint)


# Exercise 2: normalise_weights(w), guarded by checkify.check ----------------------------------------


def _only_the_sum(w):
    total = jnp.sum(w)
    checkify.check(total > 0, "the sum must be positive")
    return w / total


def _strictly_positive(w):
    checkify.check(jnp.all(w > 0), "weights must be positive")
    checkify.check(jnp.sum(w) > 0, "the sum must be positive")
    return w / jnp.sum(w)


def _python_if(w):
    if jnp.any(w < 0):
        raise ValueError("negative weight")
    return w / jnp.sum(w)


def _clipped(w):
    w = jnp.maximum(w, 0.0)
    checkify.check(jnp.sum(w) > 0, "the sum must be positive")
    return w / jnp.sum(w)


def _sum_not_negative(w):
    checkify.check(jnp.all(w >= 0), "weights must be >= 0")
    checkify.check(jnp.sum(w) >= 0, "the sum must not be negative")
    return w / jnp.sum(w)


def _inverted(w):
    checkify.check(jnp.any(w < 0), "weights must be >= 0")
    return w / jnp.sum(w)


def _by_the_largest(w):
    checkify.check(jnp.all(w >= 0), "weights must be >= 0")
    checkify.check(jnp.sum(w) > 0, "the sum must be positive")
    return w / jnp.max(w)


@pytest.mark.parametrize(
    ("wrong", "hint"),
    [
        (_only_the_sum, "a negative weight"),
        (_strictly_positive, "zero is allowed"),
        (_python_if, "checkify.check(condition, message)"),
        (_clipped, "a negative weight"),
        (_sum_not_negative, "no weight at all"),
        (_inverted, "these weights are valid"),
        (_by_the_largest, "expected w / sum(w)"),
        (jax.nn.softmax, "expected w / sum(w)"),
    ],
    ids=[
        "only-sum",
        "strict",
        "python-if",
        "clipped",
        "sum-not-negative",
        "inverted",
        "by-max",
        "softmax",
    ],
)
def test_normalise_weights_wrong_answers(wrong, hint):
    assert_answer_fails(check_normalise_weights, wrong, hint)


# Exercise 3: shift_counts(counts, shift) -> int32 ---------------------------------------------------


@pytest.mark.parametrize(
    ("wrong", "hint"),
    [
        (lambda counts, shift: counts + shift, "took the counts' dtype"),
        (lambda counts, shift: (counts + shift).astype(jnp.int32), "wrapped around"),
        (lambda counts, shift: counts.astype(jnp.float32) + shift, "dtype float32"),
        (lambda counts, shift: counts.astype(jnp.int16) + shift, "dtype int16"),
        (lambda counts, shift: counts.astype(jnp.uint32) + shift, "dtype uint32"),
        (
            lambda counts, shift: np.asarray(counts).astype(np.int32) + shift,
            "under jax.jit",
        ),
        (
            lambda counts, shift: jnp.clip(counts.astype(jnp.int32) + shift, 0, 255),
            "got [255, 255, 255]",
        ),
    ],
    ids=["naive", "cast-after", "float", "int16", "uint32", "numpy", "clipped"],
)
def test_shift_counts_wrong_answers(wrong, hint):
    assert_answer_fails(check_shift_counts, wrong, hint)


# Exercise 4: first_wrong_size(fn, sizes, rtol) --------------------------------------------------------


def _eager(fn, sizes, rtol=1e-4):
    for n in sizes:
        if not debugging.compare_with_float64(fn, jit_parity.sample((n,)), rtol=rtol).eager_agrees:
            return n
    return None


def _largest_wrong(fn, sizes, rtol=1e-4):
    found = None
    for n in sizes:
        if not debugging.compare_with_float64(fn, jit_parity.sample((n,)), rtol=rtol).jit_agrees:
            found = n
    return found


def _fixed_rtol(fn, sizes, rtol=1e-4):
    for n in sizes:
        if not debugging.compare_with_float64(fn, jit_parity.sample((n,))).jit_agrees:
            return n
    return None


def _absolute(fn, sizes, rtol=1e-4):
    for n in sizes:
        x = jit_parity.sample((n,))
        if abs(float(jax.jit(fn)(x)) - float(np.sum(np.asarray(x, np.float64)) * 0 + fn(x))) > rtol:
            return n
    return None


def _float32_reference(fn, sizes, rtol=1e-4):
    for n in sizes:
        x = jit_parity.sample((n,))
        if not np.isclose(float(jax.jit(fn)(x)), float(fn(x)), rtol=rtol):
            return n
    return None


def _position(fn, sizes, rtol=1e-4):
    for i, n in enumerate(sizes):
        if not debugging.compare_with_float64(fn, jit_parity.sample((n,)), rtol=rtol).jit_agrees:
            return i
    return None


def _one_before(fn, sizes, rtol=1e-4):
    previous = None
    for n in sizes:
        if not debugging.compare_with_float64(fn, jit_parity.sample((n,)), rtol=rtol).jit_agrees:
            return previous
        previous = n
    return None


@pytest.mark.slow_after_first
@pytest.mark.parametrize(
    ("wrong", "hint"),
    [
        (_eager, "compare jax.jit(fn)(x), not eager fn(x)"),
        (_largest_wrong, "you said 8192"),
        (_fixed_rtol, "use the rtol argument"),
        (_absolute, "relative tolerance"),
        (_float32_reference, "A float32 reference shares float32's rounding"),
        (_position, "the position in `sizes`"),
        (_one_before, "the size just before"),
    ],
    ids=[
        "eager",
        "largest",
        "fixed-rtol",
        "absolute",
        "float32-reference",
        "position",
        "one-before",
    ],
)
def test_first_wrong_size_wrong_answers(wrong, hint):
    assert_answer_fails(check_first_wrong_size, wrong, hint)
