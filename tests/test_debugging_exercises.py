"""The debugging chapter's checkers accept the reference solutions and reject typical wrong answers
with the hint that names the mistake."""

import jax
import jax.numpy as jnp
import pytest
from jax.experimental import checkify
from wrong_answers import assert_fails_with

from jaxcourse.debugging import compare_with_float64
from jaxcourse.exercises import debugging as exercises
from jaxcourse.jit_parity import sample


def stub(*args, **kwargs):
    raise NotImplementedError


# Exercise 1: which operation made the NaN? -------------------------------------------------------


def nan_source(fn, x):
    try:
        with jax.debug_nans(True):
            fn(x)
    except FloatingPointError as error:
        return str(error).split()[-1]
    return None


def test_nan_source_reference_passes():
    """debug_nans in a context manager, the primitive read from the message, None without a NaN."""
    verdict = exercises.check_nan_source(nan_source)
    assert verdict, verdict.message
    assert not jax.config.jax_debug_nans


def test_nan_source_with_checkify_nan_checks_passes():
    """checkify with nan_checks finds the same primitives: another right method."""

    def with_checkify(fn, x):
        error, _ = checkify.checkify(fn, errors=checkify.nan_checks)(x)
        message = error.get()
        return None if message is None else message.split()[-1].rstrip(".")

    verdict = exercises.check_nan_source(with_checkify)
    assert verdict, verdict.message


def test_nan_source_stub_is_not_yet():
    assert_fails_with(exercises.check_nan_source(stub), "no answer yet")


def test_nan_source_leaving_the_flag_on_fails_and_is_undone():
    """config.update without switching it off: the hint says so, and the checker restores the flag."""

    def leaves_flag_on(fn, x):
        jax.config.update("jax_debug_nans", True)
        try:
            fn(x)
        except FloatingPointError as error:
            return str(error).split()[-1]
        return None

    assert_fails_with(exercises.check_nan_source(leaves_flag_on), "jax_debug_nans was still on")
    assert not jax.config.jax_debug_nans


def test_nan_source_whole_message_fails():
    def whole_message(fn, x):
        try:
            with jax.debug_nans(True):
                fn(x)
        except FloatingPointError as error:
            return str(error)
        return None

    assert_fails_with(exercises.check_nan_source(whole_message), "not the whole message")


def test_nan_source_is_nan_flag_fails():
    """Saying whether the output is NaN does not say which operation made it."""
    assert_fails_with(
        exercises.check_nan_source(lambda fn, x: bool(jnp.isnan(fn(x)))),
        "return the primitive's name as a string",
    )


def test_nan_source_float_checks_report_division_by_zero():
    """checkify.float_checks also reports 1/0, an inf, which is not the NaN asked for."""

    def with_float_checks(fn, x):
        error, _ = checkify.checkify(fn, errors=checkify.float_checks)(x)
        message = error.get()
        return None if message is None else message.split()[-1].rstrip(".")

    assert_fails_with(exercises.check_nan_source(with_float_checks), "use checkify.nan_checks")


# Exercise 2: weights checked inside jit ---------------------------------------------------------


def normalise_weights(w):
    checkify.check(jnp.all(w >= 0), "weights must be >= 0, got {w}", w=w)
    total = jnp.sum(w)
    checkify.check(total > 0, "the weights sum to {total}, not a positive number", total=total)
    return w / total


def test_normalise_weights_reference_passes():
    verdict = exercises.check_normalise_weights(normalise_weights)
    assert verdict, verdict.message


def test_normalise_weights_stub_is_not_yet():
    assert_fails_with(exercises.check_normalise_weights(stub), "no answer yet")


def test_normalise_weights_python_assert_fails_with_checkify_hint():
    def with_assert(w):
        assert jnp.all(w >= 0), "negative weight"
        return w / jnp.sum(w)

    assert_fails_with(
        exercises.check_normalise_weights(with_assert), "Use checkify.check(condition, message)"
    )


def test_normalise_weights_strictly_positive_check_rejects_a_zero_weight():
    def strictly_positive(w):
        checkify.check(jnp.all(w > 0), "weights must be positive")
        return w / jnp.sum(w)

    assert_fails_with(exercises.check_normalise_weights(strictly_positive), "zero is allowed")


def test_normalise_weights_missing_sum_check_fails():
    def sign_check_only(w):
        checkify.check(jnp.all(w >= 0), "weights must be >= 0")
        return w / jnp.sum(w)

    assert_fails_with(exercises.check_normalise_weights(sign_check_only), "Guard both conditions")


def test_normalise_weights_silent_nan_fails():
    """Returning NaN for bad weights reports nothing."""

    def nan_for_bad(w):
        total = jnp.sum(w)
        return jnp.where(jnp.all(w >= 0) & (total > 0), w / total, jnp.nan)

    assert_fails_with(exercises.check_normalise_weights(nan_for_bad), "no error was reported")


# Exercise 3: counts that overflow ----------------------------------------------------------------


def test_shift_counts_reference_passes():
    verdict = exercises.check_shift_counts(lambda counts, shift: counts.astype(jnp.int32) + shift)
    assert verdict, verdict.message


def test_shift_counts_with_an_int32_shift_passes():
    """Promoting through a strongly typed int32 shift is also right."""
    verdict = exercises.check_shift_counts(lambda counts, shift: counts + jnp.int32(shift))
    assert verdict, verdict.message


def test_shift_counts_stub_is_not_yet():
    assert_fails_with(exercises.check_shift_counts(stub), "no answer yet")


def test_shift_counts_plain_sum_keeps_the_small_dtype():
    assert_fails_with(
        exercises.check_shift_counts(lambda counts, shift: counts + shift), "return int32"
    )


def test_shift_counts_cast_after_adding_wraps():
    assert_fails_with(
        exercises.check_shift_counts(lambda counts, shift: (counts + shift).astype(jnp.int32)),
        "wrapped around",
    )


def test_shift_counts_float_result_fails():
    assert_fails_with(
        exercises.check_shift_counts(lambda counts, shift: counts.astype(jnp.float32) + shift),
        "return int32",
    )


# Exercise 4: the size where jit goes wrong -------------------------------------------------------


def first_wrong_size(fn, sizes, rtol=1e-4):
    for n in sizes:
        if not compare_with_float64(fn, sample((n,)), rtol=rtol).jit_agrees:
            return n
    return None


@pytest.mark.slow
def test_first_wrong_size_reference_passes():
    verdict = exercises.check_first_wrong_size(first_wrong_size)
    assert verdict, verdict.message


def test_first_wrong_size_stub_is_not_yet():
    assert_fails_with(exercises.check_first_wrong_size(stub), "no answer yet")


def test_first_wrong_size_eager_comparison_finds_nothing():
    """Comparing eager fn with float64 misses a miscompilation."""

    def eager_only(fn, sizes, rtol=1e-4):
        for n in sizes:
            parity = compare_with_float64(fn, sample((n,)), rtol=rtol)
            if not parity.eager_agrees:
                return n
        return None

    assert_fails_with(exercises.check_first_wrong_size(eager_only), "not eager fn(x)")


def test_first_wrong_size_returning_every_wrong_size_fails():
    def all_wrong(fn, sizes, rtol=1e-4):
        return [
            n for n in sizes if not compare_with_float64(fn, sample((n,)), rtol=rtol).jit_agrees
        ]

    assert_fails_with(exercises.check_first_wrong_size(all_wrong), "not a collection")


def test_first_wrong_size_returning_the_position_fails():
    def position(fn, sizes, rtol=1e-4):
        for i, n in enumerate(sizes):
            if not compare_with_float64(fn, sample((n,)), rtol=rtol).jit_agrees:
                return i
        return None

    assert_fails_with(exercises.check_first_wrong_size(position), "the position in `sizes`")


def test_first_wrong_size_absolute_tolerance_fails():
    def absolute(fn, sizes, rtol=1e-4):
        for n in sizes:
            parity = compare_with_float64(fn, sample((n,)), rtol=rtol)
            if abs(parity.jit - parity.float64) > rtol:
                return n
        return None

    assert_fails_with(exercises.check_first_wrong_size(absolute), "use a relative tolerance")


@pytest.mark.slow_after_first
@pytest.mark.parametrize("ignores", ["rtol", "float64"])
def test_first_wrong_size_fixed_tolerance_or_float32_reference_fails(ignores):
    """A fixed rtol ignores the argument; an eager float32 reference shares float32's rounding."""

    def fixed_rtol(fn, sizes, rtol=1e-4):
        return first_wrong_size(fn, sizes)

    def float32_reference(fn, sizes, rtol=1e-4):
        for n in sizes:
            x = sample((n,))
            jitted, eager = float(jax.jit(fn)(x)), float(fn(x))
            if abs(jitted - eager) > rtol * abs(eager):
                return n
        return None

    answer, hint = {
        "rtol": (fixed_rtol, "use the rtol argument"),
        "float64": (float32_reference, "float32's rounding"),
    }[ignores]
    assert_fails_with(exercises.check_first_wrong_size(answer), hint)


# Malformed answers: a hint saying what shape of answer was expected, never a crash -----------------


class EmptyClass:
    """A class where a function was asked for."""


@pytest.mark.parametrize(
    "checker,name",
    [
        (exercises.check_nan_source, "nan_source"),
        (exercises.check_normalise_weights, "normalise_weights"),
        (exercises.check_shift_counts, "shift_counts"),
        (exercises.check_first_wrong_size, "first_wrong_size"),
    ],
)
@pytest.mark.parametrize("answer", [lambda: 1.0, EmptyClass], ids=["wrong arity", "empty class"])
def test_an_answer_with_the_wrong_parameters_gets_a_signature_hint(checker, name, answer):
    assert_fails_with(checker(answer), f"{name} cannot be called with")


def test_nan_source_returning_an_array_is_asked_for_a_name():
    assert_fails_with(
        exercises.check_nan_source(lambda fn, x: jnp.isnan(x)),
        "should return the primitive's name as a string (e.g. 'log'), or None",
    )


@pytest.mark.parametrize(
    "returned,described",
    [
        ({"w": 1.0}, "a dict of 1 items"),
        (None, "got None"),
        (jnp.ones((2, 7)), "an array of shape (2, 7)"),
    ],
    ids=["dict", "None", "wrong shape"],
)
def test_normalise_weights_returning_no_weight_vector_gets_a_shape_hint(returned, described):
    verdict = exercises.check_normalise_weights(lambda w: returned)
    assert_fails_with(verdict, "should be one array of shape (3,)")
    assert described in verdict.message


def test_normalise_weights_returning_a_string_is_told_to_return_an_array():
    assert_fails_with(
        exercises.check_normalise_weights(lambda w: "normalised"), "cannot hold as an array"
    )


def test_shift_counts_returning_a_pair_gets_a_shape_hint():
    assert_fails_with(
        exercises.check_shift_counts(lambda counts, shift: (counts, shift)),
        "should be one array of shape (3,)",
    )


@pytest.mark.parametrize(
    "returned,hint",
    [
        (jnp.ones((2, 7, 3)), "not a collection: got an array of shape (2, 7, 3)"),
        ({"size": 4_096}, "should return one size, an int taken from `sizes`"),
        ("4096", "should return one size, an int taken from `sizes`"),
    ],
    ids=["array", "dict", "string"],
)
def test_first_wrong_size_returning_no_size_gets_a_hint(returned, hint):
    assert_fails_with(exercises.check_first_wrong_size(lambda fn, sizes, rtol=1e-4: returned), hint)
