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

# Exercise 1: export_rows(f, n_features) -> bytes ------------------------------------------------


def _spec(shape, dtype=jnp.float32):
    return jax.ShapeDtypeStruct(shape, dtype)


@pytest.mark.parametrize(
    "answer,fragment",
    [
        pytest.param(
            lambda f, n: export.export(jax.jit(f))(_spec((export.symbolic_shape("b")[0], n))),
            "return its bytes",
            id="the Exported object, not its bytes",
        ),
        pytest.param(
            lambda f, n: export.export(jax.jit(f))(_spec((4, n))).serialize(),
            "batch size is fixed at 4",
            id="a fixed batch of 4",
        ),
        pytest.param(
            lambda f, n: jax.jit(f).lower(_spec((4, n))).as_text(),
            "you returned text",
            id="the program's text",
        ),
        pytest.param(
            lambda f, n: export.export(jax.jit(f))(
                _spec((export.symbolic_shape("b")[0], n), jnp.float16)
            ).serialize(),
            "float16 inputs",
            id="float16 inputs",
        ),
        pytest.param(
            lambda f, n: export.export(jax.jit(jnp.tanh))(
                _spec((export.symbolic_shape("b")[0], n))
            ).serialize(),
            "does not compute f",
            id="another function exported",
        ),
        pytest.param(
            lambda f, n: export.export(jax.jit(lambda x: f(x.T)))(
                _spec((n, export.symbolic_shape("b")[0]))
            ).serialize(),
            "batch size is fixed",
            id="features and batch swapped",
        ),
    ],
)
def test_export_rows_wrong_answer_gets_its_hint(answer, fragment):
    verdict = check_export_rows(answer)
    assert not verdict, f"passed: {verdict.message}"
    assert fragment in verdict.message, verdict.message


# Exercise 2: stops_counting(dtype) -> N with N + 1 == N ------------------------------------------


@pytest.mark.parametrize(
    "answer,fragment",
    [
        pytest.param(
            lambda d: stops_counting(d) + 1,
            "= N + 1",
            id="N + 1, the first number lost",
        ),
        pytest.param(
            lambda d: int(1 / jnp.finfo(d).eps),
            "= 1/eps",
            id="1 / eps",
        ),
        pytest.param(
            lambda d: float(jnp.finfo(d).max),
            "where it overflows",
            id="the largest value",
        ),
        pytest.param(
            lambda d: 2**24,
            "each dtype stops at its own number",
            id="float32's answer for every dtype",
        ),
        pytest.param(
            lambda d: 2 * stops_counting(d),
            "counting stops at a smaller",
            id="one doubling too far",
        ),
        pytest.param(
            lambda d: str(stops_counting(d)),
            "should be one whole number",
            id="a string",
        ),
    ],
)
def test_stops_counting_wrong_answer_gets_its_hint(answer, fragment):
    verdict = check_stops_counting(answer)
    assert not verdict, f"passed: {verdict.message}"
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


@pytest.mark.slow_after_first  # 1 s of CPU in its first case, 2 s in all
@pytest.mark.parametrize(
    "answer,fragment",
    [
        pytest.param(
            all_in_float32,
            "no matrix product ran in bfloat16",
            id="everything in float32",
        ),
        pytest.param(
            returns_bfloat16,
            "came back as bfloat16",
            id="parameters returned in bfloat16",
        ),
        pytest.param(
            updates_in_bfloat16,
            "did not move",
            id="the update added in bfloat16",
        ),
        pytest.param(
            ascends,
            "climbs the loss",
            id="gradient ascent",
        ),
        pytest.param(
            forgets_the_learning_rate,
            "not -lr times the gradient",
            id="learning rate ignored",
        ),
        pytest.param(
            lambda params, x, y, lr: tuple(mixed_step(params, x, y, lr).values()),
            "a dict with the keys",
            id="a tuple instead of a dict",
        ),
    ],
)
def test_mixed_step_wrong_answer_gets_its_hint(answer, fragment):
    verdict = check_mixed_step(answer)
    assert not verdict, f"passed: {verdict.message}"
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


@pytest.mark.parametrize(
    "answer,fragment",
    [
        pytest.param(
            lambda a, b, rtol: jnp.float32,
            "comes first in CANDIDATES",
            id="always float32",
        ),
        pytest.param(
            lambda a, b, rtol: jnp.bfloat16,
            "does not meet the tolerance",
            id="always bfloat16",
        ),
        pytest.param(
            lambda a, b, rtol: cheapest_dtype(a, b, rtol) or jnp.float32,
            "return None",
            id="float32 when nothing meets it",
        ),
        pytest.param(
            ignores_overflow,
            "overflows",
            id="resolution only, overflow ignored",
        ),
        pytest.param(
            lambda a, b, rtol: np.float64,
            "choose among CANDIDATES",
            id="float64, not a candidate",
        ),
        pytest.param(
            absolute_error,
            "you compared the absolute error",
            id="the error not relative to the product",
        ),
    ],
)
def test_cheapest_dtype_wrong_answer_gets_its_hint(answer, fragment):
    verdict = check_cheapest_dtype(answer)
    assert not verdict, f"passed: {verdict.message}"
    assert fragment in verdict.message, verdict.message
