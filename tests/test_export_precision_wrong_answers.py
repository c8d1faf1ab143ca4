"""Wrong answers to the export-precision chapter's exercises, written from the exercise texts as a
hurried learner would: each fails, and its hint names what the answer did."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax import export
from test_export_precision_exercises import cheapest_dtype, mixed_step, stops_counting

from jaxcourse.exercises.export_precision import (
    check_cheapest_dtype,
    check_export_rows,
    check_mixed_step,
    check_stops_counting,
    matmul_in,
)

# More than a few seconds: left out of the fast tier (scripts/test.sh --fast).
pytestmark = pytest.mark.slow

# Exercise 1: export_rows(f, n_features) -> bytes ------------------------------------------------


def _spec(shape, dtype=jnp.float32):
    return jax.ShapeDtypeStruct(shape, dtype)


EXPORT_ROWS_WRONG = {
    "the Exported object, not its bytes": (
        lambda f, n: export.export(jax.jit(f))(_spec((export.symbolic_shape("b")[0], n))),
        "return its bytes",
    ),
    "a fixed batch of 4": (
        lambda f, n: export.export(jax.jit(f))(_spec((4, n))).serialize(),
        "batch size is fixed at 4",
    ),
    "the program's text": (
        lambda f, n: jax.jit(f).lower(_spec((4, n))).as_text(),
        "you returned text",
    ),
    "float16 inputs": (
        lambda f, n: export.export(jax.jit(f))(
            _spec((export.symbolic_shape("b")[0], n), jnp.float16)
        ).serialize(),
        "float16 inputs",
    ),
    "another function exported": (
        lambda f, n: export.export(jax.jit(jnp.tanh))(
            _spec((export.symbolic_shape("b")[0], n))
        ).serialize(),
        "does not compute f",
    ),
    "features and batch swapped": (
        lambda f, n: export.export(jax.jit(lambda x: f(x.T)))(
            _spec((n, export.symbolic_shape("b")[0]))
        ).serialize(),
        "batch size is fixed",
    ),
}


@pytest.mark.parametrize("name", EXPORT_ROWS_WRONG)
def test_export_rows_wrong_answer_gets_its_hint(name):
    answer, fragment = EXPORT_ROWS_WRONG[name]
    verdict = check_export_rows(answer)
    assert not verdict, f"{name} passed"
    assert fragment in verdict.message, verdict.message


# Exercise 2: stops_counting(dtype) -> N with N + 1 == N ------------------------------------------

STOPS_COUNTING_WRONG = {
    "N + 1, the first number lost": (lambda d: stops_counting(d) + 1, "= N + 1"),
    "1 / eps": (lambda d: int(1 / jnp.finfo(d).eps), "= 1/eps"),
    "the largest value": (lambda d: float(jnp.finfo(d).max), "where it overflows"),
    "float32's answer for every dtype": (lambda d: 2**24, "each dtype stops at its own number"),
    "one doubling too far": (lambda d: 2 * stops_counting(d), "counting stops at a smaller"),
    "a string": (lambda d: str(stops_counting(d)), "should be one whole number"),
}


@pytest.mark.parametrize("name", STOPS_COUNTING_WRONG)
def test_stops_counting_wrong_answer_gets_its_hint(name):
    answer, fragment = STOPS_COUNTING_WRONG[name]
    verdict = check_stops_counting(answer)
    assert not verdict, f"{name} passed"
    assert fragment in verdict.message, verdict.message


# Exercise 3: mixed_step(params, x, y, lr) ---------------------------------------------------------


def _loss(params, x, y, dtype):
    cast = jax.tree.map(lambda p: p.astype(dtype), params)
    residual = x.astype(dtype) @ cast["w"] + cast["b"] - y.astype(dtype)
    return jnp.mean(residual**2)


def all_in_float32(params, x, y, lr):
    grads = jax.grad(_loss)(params, x, y, jnp.float32)
    return jax.tree.map(lambda p, g: p - lr * g, params, grads)


def returns_bfloat16(params, x, y, lr):
    return jax.tree.map(lambda p: p.astype(jnp.bfloat16), mixed_step(params, x, y, lr))


def updates_in_bfloat16(params, x, y, lr):
    half = jax.tree.map(lambda p: p.astype(jnp.bfloat16), params)
    grads = jax.grad(_loss)(half, x, y, jnp.bfloat16)
    return jax.tree.map(lambda p, g: (p - lr * g).astype(jnp.float32), half, grads)


def ascends(params, x, y, lr):
    return mixed_step(params, x, y, -lr)


def forgets_the_learning_rate(params, x, y, lr):
    return mixed_step(params, x, y, 1.0)


MIXED_STEP_WRONG = {
    "everything in float32": (all_in_float32, "no matrix product ran in bfloat16"),
    "parameters returned in bfloat16": (returns_bfloat16, "came back as bfloat16"),
    "the update added in bfloat16": (updates_in_bfloat16, "did not move"),
    "gradient ascent": (ascends, "climbs the loss"),
    "learning rate ignored": (forgets_the_learning_rate, "not -lr times the gradient"),
    "a tuple instead of a dict": (
        lambda params, x, y, lr: tuple(mixed_step(params, x, y, lr).values()),
        "a dict with the keys",
    ),
}


@pytest.mark.parametrize("name", MIXED_STEP_WRONG)
def test_mixed_step_wrong_answer_gets_its_hint(name):
    answer, fragment = MIXED_STEP_WRONG[name]
    verdict = check_mixed_step(answer)
    assert not verdict, f"{name} passed"
    assert fragment in verdict.message, verdict.message


# Exercise 4: cheapest_dtype(a, b, rtol) -----------------------------------------------------------


def ignores_overflow(a, b, rtol):
    """Judges each dtype by its resolution alone (eps against rtol)."""
    for dtype in (jnp.bfloat16, jnp.float16, jnp.float32):
        if float(jnp.finfo(dtype).eps) <= rtol:
            return dtype
    return None


def absolute_error(a, b, rtol):
    exact = np.asarray(a, np.float64) @ np.asarray(b, np.float64)
    for dtype in (jnp.bfloat16, jnp.float16, jnp.float32):
        if np.max(np.abs(np.asarray(matmul_in(a, b, dtype), np.float64) - exact)) <= rtol:
            return dtype
    return None


CHEAPEST_WRONG = {
    "always float32": (lambda a, b, rtol: jnp.float32, "comes first in CANDIDATES"),
    "always bfloat16": (lambda a, b, rtol: jnp.bfloat16, "does not meet the tolerance"),
    "float32 when nothing meets it": (
        lambda a, b, rtol: cheapest_dtype(a, b, rtol) or jnp.float32,
        "return None",
    ),
    "resolution only, overflow ignored": (ignores_overflow, "overflows"),
    "float64, not a candidate": (lambda a, b, rtol: np.float64, "choose among CANDIDATES"),
    "the error not relative to the product": (absolute_error, "you compared the absolute error"),
}


@pytest.mark.parametrize("name", CHEAPEST_WRONG)
def test_cheapest_dtype_wrong_answer_gets_its_hint(name):
    answer, fragment = CHEAPEST_WRONG[name]
    verdict = check_cheapest_dtype(answer)
    assert not verdict, f"{name} passed"
    assert fragment in verdict.message, verdict.message
