"""Checkers of the chapter 'Automatic differentiation': the reference solutions pass, typical
mistakes fail with the hint that names them."""

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


def stub(*args, **kwargs):
    raise NotImplementedError


@pytest.mark.parametrize(
    "checker", [check_loss_and_grad, check_curvatures, check_exprel, check_jacobian_rows]
)
def test_stub_is_not_yet(checker):
    verdict = checker(stub)
    assert not verdict
    assert "no answer yet" in verdict.message


# Exercise 1 ------------------------------------------------------------------------------------


def mean_squared_error(predict, params, x, y):
    predictions = predict(params, x)
    return jnp.mean((predictions - y) ** 2), predictions


def reference_loss_and_grad(predict, params, x, y):
    return jax.value_and_grad(mean_squared_error, argnums=1, has_aux=True)(predict, params, x, y)


@pytest.mark.slow
def test_loss_and_grad_reference_passes():
    assert check_loss_and_grad(reference_loss_and_grad)


def without_aux(predict, params, x, y):
    """value_and_grad of the loss alone, then the predictions computed a second time."""
    loss, grads = jax.value_and_grad(lambda p: mean_squared_error(predict, p, x, y)[0])(params)
    return (loss, predict(params, x)), grads


def summed(predict, params, x, y):
    """Sums the squared errors where the exercise asks for their mean."""

    def loss(params):
        predictions = predict(params, x)
        return jnp.sum((predictions - y) ** 2), predictions

    return jax.value_and_grad(loss, has_aux=True)(params)


@pytest.mark.parametrize(
    ("wrong", "hint"),
    [
        (
            lambda predict, p, x, y: jax.value_and_grad(mean_squared_error, argnums=1)(
                predict, p, x, y
            ),
            "scalar-output",
        ),
        (without_aux, "predict ran 2 times"),
        (
            lambda predict, p, x, y: jax.value_and_grad(
                mean_squared_error, argnums=2, has_aux=True
            )(predict, p, x, y),
            "with respect to params, not x",
        ),
        (
            lambda predict, p, x, y: jax.grad(mean_squared_error, argnums=1, has_aux=True)(
                predict, p, x, y
            ),
            "the pair (loss, predictions)",
        ),
        (summed, "the exercise asks for their mean"),
    ],
    ids=["no-has-aux", "predict-twice", "grad-wrt-x", "grad-not-value-and-grad", "sum-not-mean"],
)
def test_loss_and_grad_wrong_answers_fail(wrong, hint):
    assert_answer_fails(check_loss_and_grad, wrong, hint)


# Exercise 2 ------------------------------------------------------------------------------------


def hvp(f, x, v):
    return jax.jvp(jax.grad(f), (x,), (v,))[1]


@pytest.mark.slow  # 4 s of CPU in all
def test_curvatures_forward_over_reverse_passes():
    assert check_curvatures(lambda f, x, d: jax.vmap(lambda v: jnp.vdot(v, hvp(f, x, v)))(d))


@pytest.mark.slow  # 5 s of CPU in all
def test_curvatures_reverse_over_reverse_and_forward_over_forward_also_pass():
    def reverse(f, x, d):
        return jax.vmap(lambda v: jnp.vdot(v, jax.grad(lambda y: jnp.vdot(jax.grad(f)(y), v))(x)))(
            d
        )

    def forward(f, x, d):
        return jax.vmap(lambda v: jax.jvp(lambda y: jax.jvp(f, (y,), (v,))[1], (x,), (v,))[1])(d)

    assert check_curvatures(reverse)
    assert check_curvatures(forward)


@pytest.mark.slow  # 6 s of CPU in all
@pytest.mark.parametrize(
    ("wrong", "hint"),
    [
        (
            lambda f, x, d: jnp.einsum("kn,nm,km->k", d, jax.hessian(f)(x), d),
            "the Hessian",
        ),
        (
            lambda f, x, d: jnp.stack([jnp.vdot(v, hvp(f, x, v)) for v in d]),
            "a Python loop over the directions",
        ),
        (lambda f, x, d: jax.vmap(lambda v: hvp(f, x, v))(d), "H v for each direction"),
        (lambda f, x, d: d @ jax.grad(f)(x), "first derivatives"),
    ],
    ids=["hessian", "python-loop", "hvp-not-dotted", "slopes"],
)
def test_curvatures_wrong_answers_fail(wrong, hint):
    assert_answer_fails(check_curvatures, wrong, hint)


# Exercise 3 ------------------------------------------------------------------------------------


def plain_exprel(x):
    safe = jnp.where(x == 0.0, 1.0, x)
    return jnp.where(x == 0.0, 1.0, jnp.expm1(safe) / safe)


@jax.custom_jvp
def reference_exprel(x):
    return plain_exprel(x)


@reference_exprel.defjvp
def _reference_exprel_jvp(primals, tangents):
    (x,), (x_dot,) = primals, tangents
    value = reference_exprel(x)
    small = jnp.abs(x) < 1e-3
    safe = jnp.where(small, 1.0, x)
    derivative = jnp.where(small, 0.5 + x / 3.0, (jnp.exp(x) - value) / safe)
    return value, derivative * x_dot


def test_exprel_reference_passes():
    assert check_exprel(reference_exprel)


def custom_exprel(derivative_rule):
    """A custom_jvp exprel whose derivative is `derivative_rule(x, value, x_dot)`."""

    @jax.custom_jvp
    def exprel(x):
        return plain_exprel(x)

    @exprel.defjvp
    def _jvp(primals, tangents):
        (x,), (x_dot,) = primals, tangents
        value = exprel(x)
        return value, derivative_rule(x, value, x_dot)

    return exprel


def no_series(x, value, x_dot):
    safe = jnp.where(x == 0.0, 1.0, x)
    return jnp.where(x == 0.0, 0.5, (jnp.exp(x) - value) / safe) * x_dot


def forgets_tangent(x, value, x_dot):
    small = jnp.abs(x) < 1e-3
    return jnp.where(small, 0.5 + x / 3.0, (jnp.exp(x) - value) / jnp.where(small, 1.0, x))


def series_without_custom_jvp(x):
    small = jnp.abs(x) < 1e-3
    safe = jnp.where(small, 1.0, x)
    return jnp.where(small, 1.0 + x / 2.0 + x * x / 6.0, jnp.expm1(safe) / safe)


@pytest.mark.slow_after_first
@pytest.mark.parametrize(
    ("wrong", "hint"),
    [
        (lambda x: jnp.expm1(x) / x, "0 / 0"),
        (lambda x: jnp.where(x == 0.0, 1.0, jnp.expm1(x) / x), "the where trap"),
        (plain_exprel, "the derivative at 0 is 1/2"),
        (custom_exprel(no_series), "use the series 1/2 + x/3"),
        (custom_exprel(forgets_tangent), "not the derivative alone"),
        (series_without_custom_jvp, "decorate exprel with @jax.custom_jvp"),
    ],
    ids=["naive", "single-where", "double-where", "no-series", "forgets-tangent", "no-custom-jvp"],
)
def test_exprel_wrong_answers_fail(wrong, hint):
    assert_answer_fails(check_exprel, wrong, hint)


# Exercise 4 ------------------------------------------------------------------------------------


def reference_jacobian_rows(f, x, cotangents):
    _, backward = jax.vjp(f, x)
    return jax.vmap(lambda u: backward(u)[0])(cotangents)


@pytest.mark.slow  # 2 s of CPU in all
def test_jacobian_rows_reference_passes():
    verdict = check_jacobian_rows(reference_jacobian_rows)
    assert verdict, verdict.message


@pytest.mark.slow
def test_jacobian_rows_vjp_inside_vmap_also_passes():
    """One vjp traced inside vmap: f still runs once, the program is one batched backward pass."""
    assert check_jacobian_rows(lambda f, x, u: jax.vmap(lambda row: jax.vjp(f, x)[1](row)[0])(u))


def loop_of_vjps(f, x, cotangents):
    return jnp.stack([jax.vjp(f, x)[1](u)[0] for u in cotangents])


def loop_over_backward(f, x, cotangents):
    _, backward = jax.vjp(f, x)
    return jnp.stack([backward(u)[0] for u in cotangents])


def tuple_not_unpacked(f, x, cotangents):
    _, backward = jax.vjp(f, x)
    return jax.vmap(backward)(cotangents)


@pytest.mark.slow  # 3 s of CPU in all
@pytest.mark.parametrize(
    ("wrong", "hint"),
    [
        (lambda f, x, u: u @ jax.jacrev(f)(x), "builds an (7, 5) or (7, 7) array"),
        (lambda f, x, u: u @ jax.jacfwd(f)(x), "builds an (7, 5) or (7, 7) array"),
        (loop_of_vjps, "f ran 3 times for 3 cotangent(s)"),
        (loop_over_backward, "a Python loop over the rows is unrolled"),
        (tuple_not_unpacked, "the backward function of jax.vjp returns one cotangent per argument"),
        (
            lambda f, x, u: jax.vmap(lambda row: jax.vjp(f, x)[1](row)[0])(u).T,
            "one row per cotangent",
        ),
    ],
    ids=[
        "jacrev-then-matmul",
        "jacfwd-then-matmul",
        "vjp-per-row",
        "loop-over-backward",
        "tuple",
        "transposed",
    ],
)
def test_jacobian_rows_wrong_answers_fail(wrong, hint):
    assert_answer_fails(check_jacobian_rows, wrong, hint)
