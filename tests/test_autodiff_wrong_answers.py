"""Wrong answers to the autodiff chapter's exercises, written from the exercise texts alone as a
hurried learner would (issue 27, point 4): each must fail, with a hint that names what the answer
did."""

import jax
import jax.numpy as jnp
import pytest
from wrong_answers import assert_answer_fails

from jaxcourse.exercises.autodiff import (
    check_curvatures,
    check_exprel,
    check_jacobian_rows,
    check_loss_and_grad,
)

# Exercise 1: loss_and_grad(predict, params, x, y) -> ((loss, predictions), grads) -----------------


def _half_mse(predict, params, x, y):
    def loss(params):
        predictions = predict(params, x)
        return 0.5 * jnp.mean((predictions - y) ** 2), predictions

    return jax.value_and_grad(loss, has_aux=True)(params)


def _rmse(predict, params, x, y):
    def loss(params):
        predictions = predict(params, x)
        return jnp.sqrt(jnp.mean((predictions - y) ** 2)), predictions

    return jax.value_and_grad(loss, has_aux=True)(params)


def _mae(predict, params, x, y):
    def loss(params):
        predictions = predict(params, x)
        return jnp.mean(jnp.abs(predictions - y)), predictions

    return jax.value_and_grad(loss, has_aux=True)(params)


def _gradient_of_the_sum(predict, params, x, y):
    predictions = predict(params, x)
    grads = jax.grad(lambda p: jnp.sum((predict(p, x) - y) ** 2))(params)
    return (jnp.mean((predictions - y) ** 2), predictions), grads


def _gradient_in_x(predict, params, x, y):
    def loss(x):
        predictions = predict(params, x)
        return jnp.mean((predictions - y) ** 2), predictions

    return jax.value_and_grad(loss, has_aux=True)(x)


def _predict_twice(predict, params, x, y):
    loss, grads = jax.value_and_grad(lambda p: jnp.mean((predict(p, x) - y) ** 2))(params)
    return (loss, predict(params, x)), grads


def _flat_triple(predict, params, x, y):
    (loss, predictions), grads = _half_mse(predict, params, x, y)
    return 2.0 * loss, predictions, grads


def _frozen_predictions(predict, params, x, y):
    def loss(params):
        predictions = jax.lax.stop_gradient(predict(params, x))
        return jnp.mean((predictions - y) ** 2), predictions

    return jax.value_and_grad(loss, has_aux=True)(params)


@pytest.mark.parametrize(
    ("wrong", "hint"),
    [
        (_half_mse, "half the mean squared error"),
        (_rmse, "square root"),
        (_mae, "absolute"),
        (_gradient_of_the_sum, "gradient of the sum of squares"),
        (_gradient_in_x, "differentiate with respect to params, not x"),
        (_predict_twice, "predict ran 2 times"),
        (_flat_triple, "three separate items"),
        (_frozen_predictions, "the gradient is zero"),
    ],
    ids=[
        "half-mse",
        "rmse",
        "mae",
        "gradient-of-sum",
        "gradient-in-x",
        "predict-twice",
        "flat-triple",
        "stop-gradient",
    ],
)
def test_loss_and_grad_wrong_answers(wrong, hint):
    assert_answer_fails(check_loss_and_grad, wrong, hint)


# Exercise 2: curvatures(f, x, directions) -> (k,), v^T H v ----------------------------------------


def _hvp(f, x, v):
    return jax.jvp(jax.grad(f), (x,), (v,))[1]


def _finite_differences(f, x, d):
    eps = 1e-3
    grad = jax.grad(f)
    return jax.vmap(lambda v: jnp.vdot(v, (grad(x + eps * v) - grad(x - eps * v)) / (2 * eps)))(d)


@pytest.mark.slow_after_first
@pytest.mark.parametrize(
    ("wrong", "hint"),
    [
        (lambda f, x, d: jax.vmap(lambda v: 0.5 * jnp.vdot(v, _hvp(f, x, v)))(d), "half"),
        (lambda f, x, d: jax.vmap(lambda v: -jnp.vdot(v, _hvp(f, x, v)))(d), "wrong sign"),
        (
            lambda f, x, d: jax.vmap(lambda v: jnp.vdot(v, _hvp(f, x, v)) / jnp.vdot(v, v))(d),
            "divide by something that is 0 for a zero direction",
        ),
        (lambda f, x, d: (d @ jax.grad(f)(x)) ** 2, "squared slopes"),
        (
            lambda f, x, d: jnp.full(d.shape[0], jnp.sum(jax.vmap(lambda v: v @ _hvp(f, x, v))(d))),
            "sum over all directions",
        ),
        (lambda f, x, d: jnp.vdot(d[0], _hvp(f, x, d[0])), "should be one array of shape (3,)"),
        (lambda f, x, d: jax.vmap(lambda v: jnp.vdot(v, _hvp(f, v, x)))(d), "entry i should be"),
        (_finite_differences, "finite differences"),
    ],
    ids=[
        "half",
        "sign",
        "normalised",
        "squared-slopes",
        "summed",
        "first-direction-only",
        "x-and-v-swapped",
        "finite-differences",
    ],
)
def test_curvatures_wrong_answers(wrong, hint):
    assert_answer_fails(check_curvatures, wrong, hint)


# Exercise 3: a safe exprel with custom_jvp ---------------------------------------------------------


def _custom_exprel(derivative):
    @jax.custom_jvp
    def exprel(x):
        at_zero = x == 0.0
        safe = jnp.where(at_zero, 1.0, x)
        return jnp.where(at_zero, 1.0, jnp.expm1(safe) / safe)

    @exprel.defjvp
    def _(primals, tangents):
        (x,), (x_dot,) = primals, tangents
        value = exprel(x)
        return value, derivative(x, value) * x_dot

    return exprel


def _formula(x, value):
    safe = jnp.where(x == 0.0, 1.0, x)
    return jnp.where(x == 0.0, 0.5, (jnp.exp(x) - value) / safe)


def _series_near_zero(limit):
    def derivative(x, value):
        small = jnp.abs(x) < 1e-3
        safe = jnp.where(small, 1.0, x)
        return jnp.where(small, limit + x / 3.0, (jnp.exp(x) - value) / safe)

    return derivative


def _exp_minus_one(x):
    at_zero = x == 0.0
    safe = jnp.where(at_zero, 1.0, x)
    return jnp.where(at_zero, 1.0, (jnp.exp(safe) - 1.0) / safe)


def _zero_at_zero(x):
    safe = jnp.where(x == 0.0, 1.0, x)
    return jnp.where(x == 0.0, 0.0, jnp.expm1(safe) / safe)


def _taylor_double_where(x):
    small = jnp.abs(x) < 1e-3
    safe = jnp.where(small, 1.0, x)
    return jnp.where(small, 1.0 + x / 2.0 + x**2 / 6.0, jnp.expm1(safe) / safe)


def _derivative_without_tangent():
    @jax.custom_jvp
    def exprel(x):
        at_zero = x == 0.0
        safe = jnp.where(at_zero, 1.0, x)
        return jnp.where(at_zero, 1.0, jnp.expm1(safe) / safe)

    @exprel.defjvp
    def _(primals, tangents):
        (x,), _ = primals, tangents
        return exprel(x), _series_near_zero(0.5)(x, exprel(x))

    return exprel


@pytest.mark.slow_after_first
@pytest.mark.parametrize(
    ("wrong", "hint"),
    [
        (lambda x: jnp.where(x == 0.0, 1.0, jnp.expm1(x) / x), "the where trap"),
        (_exp_minus_one, "jnp.expm1"),
        (_zero_at_zero, "exprel(0) should be 1"),
        (_custom_exprel(_formula), "near 0"),
        (_custom_exprel(_series_near_zero(1.0)), "at x = 0 your derivative is 1"),
        (_derivative_without_tangent(), "times the tangent"),
        (_taylor_double_where, "custom_jvp"),
    ],
    ids=[
        "single-where",
        "exp-minus-one",
        "zero-at-zero",
        "no-series",
        "limit-one",
        "no-tangent",
        "taylor-without-custom-jvp",
    ],
)
def test_exprel_wrong_answers(wrong, hint):
    assert_answer_fails(check_exprel, wrong, hint)


# Exercise 4: jacobian_rows(f, x, cotangents) -> (k, n) ---------------------------------------------


def _loop_of_backward_calls(f, x, cotangents):
    _, backward = jax.vjp(f, x)
    return jnp.stack([backward(u)[0] for u in cotangents])


@pytest.mark.slow
@pytest.mark.parametrize(
    ("wrong", "hint"),
    [
        (lambda f, x, u: u @ jax.jacfwd(f)(x), "jax.jacfwd"),
        (lambda f, x, u: u @ jax.jacrev(f)(x), "whole Jacobian"),
        (lambda f, x, u: jnp.stack([jax.vjp(f, x)[1](c)[0] for c in u]), "f ran"),
        (_loop_of_backward_calls, "a Python loop over the rows"),
        (lambda f, x, u: jax.vmap(jax.vjp(f, x)[1])(u), "tuple of one array"),
        (lambda f, x, u: jax.vmap(lambda c: jax.vjp(f, x)[1](c)[0])(u).T, "(k, n)"),
    ],
    ids=["jacfwd", "jacrev", "vjp-per-row", "loop-of-backward", "no-index", "transposed"],
)
def test_jacobian_rows_wrong_answers(wrong, hint):
    assert_answer_fails(check_jacobian_rows, wrong, hint)
