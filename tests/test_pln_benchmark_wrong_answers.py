"""Wrong answers to the PLN benchmark chapter's exercises, written from the exercise texts alone
as a hurried learner would (issue 27, point 4): each must fail, with a hint that names what the
answer did."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.scipy.linalg import cho_solve

from jaxcourse.exercises import pln_benchmark as exercises
from jaxcourse.pln import closed_form_params, profiled_elbo

# Exercise 1: time_to_target(elbo, times, target) -> the first time, or None ----------------------


def last_crossing(elbo, times, target):
    reached = np.flatnonzero(np.asarray(elbo) >= target)
    return float(times[reached[-1]]) if reached.size else None


def strictly_above(elbo, times, target):
    reached = np.flatnonzero(np.asarray(elbo) > target)
    return float(times[reached[0]]) if reached.size else None


def index_not_time(elbo, times, target):
    reached = np.flatnonzero(np.asarray(elbo) >= target)
    return int(reached[0]) if reached.size else None


def sorted_search(elbo, times, target):
    """np.searchsorted assumes a sorted trace."""
    index = int(np.searchsorted(np.asarray(elbo), target))
    return float(times[index]) if index < len(times) else None


def last_time_when_never(elbo, times, target):
    """A target never reached gives the last time instead of None."""
    reached = np.flatnonzero(np.asarray(elbo) >= target)
    return float(times[reached[0]]) if reached.size else float(times[-1])


def below_target(elbo, times, target):
    """<= for >=: the ELBO is maximised, it must rise to the target."""
    reached = np.flatnonzero(np.asarray(elbo) <= target)
    return float(times[reached[0]]) if reached.size else None


def argmax_time(elbo, times, target):
    """np.argmax of a boolean mask is 0 when nothing matches."""
    return float(times[np.argmax(np.asarray(elbo) >= target)])


@pytest.mark.parametrize(
    ("wrong", "hint"),
    [
        (last_crossing, "the LAST time"),
        (strictly_above, "(>=, not >)"),
        (index_not_time, "looks like an index"),
        (sorted_search, "you returned None, but the trace reaches it"),
        (last_time_when_never, "must give None, not a time"),
        (below_target, "at or BELOW the target"),
        (argmax_time, "must give None, not a time"),
    ],
)
def test_time_to_target_wrong_answers_fail(wrong, hint):
    verdict = exercises.check_time_to_target(wrong)
    assert not verdict, f"{wrong.__name__} passed"
    assert hint in verdict.message, verdict.message


# Exercise 2: latent_mean_gradient(data, variational) = Y - A - (M - XB) Omega --------------------


def _pieces(data, variational):
    params = closed_form_params(data, variational)
    residuals = variational.latent_mean - data.covariates @ params.coef
    chol = jnp.linalg.cholesky(params.covariance)
    precision = cho_solve((chol, True), jnp.eye(params.covariance.shape[0]))
    return params, residuals, precision


def by_autodiff(data, variational):
    return jax.grad(profiled_elbo, argnums=1)(data, variational).latent_mean


def residuals_times_sigma(data, variational):
    params, residuals, _ = _pieces(data, variational)
    rate = jnp.exp(data.offsets + variational.latent_mean + 0.5 * variational.latent_sqrt_var**2)
    return data.counts - rate - residuals @ params.covariance


def rate_without_offsets(data, variational):
    _, residuals, precision = _pieces(data, variational)
    rate = jnp.exp(variational.latent_mean + 0.5 * variational.latent_sqrt_var**2)
    return data.counts - rate - residuals @ precision


def rate_with_full_variance(data, variational):
    """S**2 instead of S**2 / 2 in the rate."""
    _, residuals, precision = _pieces(data, variational)
    rate = jnp.exp(data.offsets + variational.latent_mean + variational.latent_sqrt_var**2)
    return data.counts - rate - residuals @ precision


def prior_added(data, variational):
    _, residuals, precision = _pieces(data, variational)
    rate = jnp.exp(data.offsets + variational.latent_mean + 0.5 * variational.latent_sqrt_var**2)
    return data.counts - rate + residuals @ precision


def residuals_around_zero(data, variational):
    """M Omega: the mean XB forgotten in the residuals."""
    _, _, precision = _pieces(data, variational)
    rate = jnp.exp(data.offsets + variational.latent_mean + 0.5 * variational.latent_sqrt_var**2)
    return data.counts - rate - variational.latent_mean @ precision


def minus_the_gradient(data, variational):
    """The gradient of the loss (-ELBO) instead of the ELBO."""
    _, residuals, precision = _pieces(data, variational)
    rate = jnp.exp(data.offsets + variational.latent_mean + 0.5 * variational.latent_sqrt_var**2)
    return -(data.counts - rate - residuals @ precision)


@pytest.mark.slow
@pytest.mark.parametrize(
    ("wrong", "hint"),
    [
        (by_autodiff, "add_any"),
        (residuals_times_sigma, "multiplied the residuals by Sigma"),
        (rate_without_offsets, "missing the offsets"),
        (rate_with_full_variance, "S^2 where it needs S^2 / 2"),
        (prior_added, "the prior term has the wrong sign"),
        (residuals_around_zero, "multiplied M itself by Omega"),
        (minus_the_gradient, "minus the gradient"),
    ],
)
def test_latent_mean_gradient_wrong_answers_fail(wrong, hint):
    verdict = exercises.check_latent_mean_gradient(wrong)
    assert not verdict, f"{wrong.__name__} passed"
    assert hint in verdict.message, verdict.message


# Exercise 3: rprop_step(x, grad, step, prev_sign) -> (x, step, sign) ----------------------------


def _factor(agree):
    return jnp.where(agree > 0, 1.2, jnp.where(agree < 0, 0.5, 1.0))


def no_clipping(x, grad, step, prev_sign):
    sign = jnp.sign(grad).astype(jnp.int8)
    agree = sign * prev_sign
    step = step * _factor(agree)
    sign = jnp.where(agree < 0, jnp.int8(0), sign)
    return x - sign * step, step, sign


def moves_on_a_flip(x, grad, step, prev_sign):
    """A flipped entry moves by its halved step, and remembers its new sign."""
    sign = jnp.sign(grad).astype(jnp.int8)
    step = jnp.clip(step * _factor(sign * prev_sign), 1e-6, 50.0)
    return x - sign * step, step, sign


def clipped_before_scaling(x, grad, step, prev_sign):
    sign = jnp.sign(grad).astype(jnp.int8)
    agree = sign * prev_sign
    step = jnp.clip(step, 1e-6, 50.0) * _factor(agree)
    sign = jnp.where(agree < 0, jnp.int8(0), sign)
    return x - sign * step, step, sign


def etas_swapped(x, grad, step, prev_sign):
    sign = jnp.sign(grad).astype(jnp.int8)
    agree = sign * prev_sign
    step = jnp.clip(step * jnp.where(agree > 0, 0.5, jnp.where(agree < 0, 1.2, 1.0)), 1e-6, 50.0)
    sign = jnp.where(agree < 0, jnp.int8(0), sign)
    return x - sign * step, step, sign


def python_if(x, grad, step, prev_sign):
    """An if on the whole array: fine for one case eagerly, an error under jit."""
    sign = jnp.sign(grad).astype(jnp.int8)
    if jnp.all(sign * prev_sign >= 0):
        step = jnp.clip(step * _factor(sign * prev_sign), 1e-6, 50.0)
        return x - sign * step, step, sign
    return x, step * 0.5, jnp.zeros_like(sign)


def grows_when_previous_sign_is_zero(x, grad, step, prev_sign):
    """A first step (previous sign 0) grows as if the sign had held."""
    sign = jnp.sign(grad).astype(jnp.int8)
    agree = sign * prev_sign
    grow = (agree > 0) | ((prev_sign == 0) & (sign != 0))
    step = jnp.clip(step * jnp.where(grow, 1.2, jnp.where(agree < 0, 0.5, 1.0)), 1e-6, 50.0)
    sign = jnp.where(agree < 0, jnp.int8(0), sign)
    return x - sign * step, step, sign


@pytest.mark.parametrize(
    ("wrong", "hint"),
    [
        (no_clipping, "not clipped after scaling"),
        (moves_on_a_flip, "does not move that entry"),
        (clipped_before_scaling, "not clipped after scaling"),
        (etas_swapped, "shrink where the sign holds"),
        (python_if, "traced value"),
        (grows_when_previous_sign_is_zero, "the previous sign is 0"),
    ],
)
def test_rprop_step_wrong_answers_fail(wrong, hint):
    verdict = exercises.check_rprop_step(wrong)
    assert not verdict, f"{wrong.__name__} passed"
    assert hint in verdict.message, verdict.message


# Exercise 4: momentum_update(grad, curvature, velocity, momentum) -> new velocity ----------------


def fixed_momentum(grad, curvature, velocity, momentum):
    """0.9 typed in instead of the momentum argument."""
    carried = jnp.where(jnp.sum(grad * velocity) > 0, 0.0, 0.9)
    return carried * velocity - grad / curvature


def times_curvature(grad, curvature, velocity, momentum):
    carried = jnp.where(jnp.sum(grad * velocity) > 0, 0.0, momentum)
    return carried * velocity - grad * curvature


def velocity_dropped_not_momentum(grad, curvature, velocity, momentum):
    """On a restart the whole update is zeroed, Newton step included."""
    update = momentum * velocity - grad / curvature
    return jnp.where(jnp.sum(grad * velocity) > 0, jnp.zeros_like(update), update)


def restart_on_downhill(grad, curvature, velocity, momentum):
    """The test reversed: restart when sum(grad * velocity) < 0."""
    carried = jnp.where(jnp.sum(grad * velocity) < 0, 0.0, momentum)
    return carried * velocity - grad / curvature


def python_if_restart(grad, curvature, velocity, momentum):
    if jnp.sum(grad * velocity) > 0:
        return -grad / curvature
    return momentum * velocity - grad / curvature


def no_restart(grad, curvature, velocity, momentum):
    return momentum * velocity - grad / curvature


@pytest.mark.parametrize(
    ("wrong", "hint"),
    [
        (fixed_momentum, "not a fixed 0.9"),
        (times_curvature, "multiplied the gradient by the curvature"),
        (velocity_dropped_not_momentum, "you returned zeros"),
        (restart_on_downhill, "still points downhill"),
        (python_if_restart, "traced value"),
        (no_restart, "now points uphill"),
    ],
)
def test_momentum_update_wrong_answers_fail(wrong, hint):
    verdict = exercises.check_momentum_update(wrong)
    assert not verdict, f"{wrong.__name__} passed"
    assert hint in verdict.message, verdict.message


# Exercise 5: weighted column sums of a * b, through memory and in one loop; the bytes saved ------


def fused_for_memory(a, b, w):
    """The plain reduction: XLA fuses the products into it and never writes a * b."""
    return jnp.sum(w[:, None] * a * b, axis=0)


def row_sums_through_a_dot(a, b, w):
    """The weights on the wrong side: one sum per row."""
    return (a * b) @ jnp.ones(a.shape[1], a.dtype)


def weights_of_fixed_length(a, b, w):
    """A vector of ones as long as the first example's rows, round the weighted product."""
    return jnp.ones(300, a.dtype) @ (w[:, None] * a * b)


def diagonal_of_a_matmul(a, b, w):
    """diag(a' diag(w) b) holds the weighted column sums, through a p x p product."""
    return jnp.diagonal(a.T @ (w[:, None] * b))


def python_loop_over_rows(a, b, w):
    total = w[0] * a[0] * b[0]
    for row in range(1, a.shape[0]):
        total = total + w[row] * a[row] * b[row]
    return total


def the_page_s_ones(a, b, w):
    """The page's form copied: a vector of ones, the weights left out."""
    return jnp.ones(a.shape[0], a.dtype) @ (a * b)


@pytest.mark.slow_after_first
@pytest.mark.parametrize(
    ("wrong", "hint"),
    [
        (fused_for_memory, "XLA writes nothing as large as a * b"),
        (row_sums_through_a_dot, "those are row sums"),
        (weights_of_fixed_length, "one row per entry of w"),
        (diagonal_of_a_matmul, "never a by b entry by entry"),
        (python_loop_over_rows, "in a Python loop"),
        (the_page_s_ones, "plain column sums of a * b"),
    ],
)
def test_sums_through_memory_wrong_answers_fail(wrong, hint):
    verdict = exercises.check_sums_through_memory(wrong)
    assert not verdict, f"{wrong.__name__} passed"
    assert hint in verdict.message, verdict.message


def through_a_dot(a, b, w):
    return w @ (a * b)


def total_sum(a, b, w):
    return jnp.sum(w[:, None] * a * b)


def row_sums(a, b, w):
    return jnp.sum(w[:, None] * a * b, axis=1)


def numpy_sums(a, b, w):
    return np.sum(np.asarray(w)[:, None] * np.asarray(a) * np.asarray(b), axis=0)


def product_of_sums(a, b, w):
    return jnp.sum(a, axis=0) * jnp.sum(b, axis=0)


def column_means(a, b, w):
    return jnp.mean(w[:, None] * a * b, axis=0)


def the_page_s_plain_sum(a, b, w):
    """The page's fused form copied: the weights left out."""
    return jnp.sum(a * b, axis=0)


@pytest.mark.parametrize(
    ("wrong", "hint"),
    [
        (through_a_dot, "a product of w with a matrix is a dot"),
        (total_sum, "that sums every entry"),
        (row_sums, "those are row sums"),
        (numpy_sums, "use jnp, not np"),
        (product_of_sums, "multiplied the column sums of a and of b"),
        (column_means, "column MEANS"),
        (diagonal_of_a_matmul, "never a by b entry by entry"),
        (the_page_s_plain_sum, "plain column sums of a * b"),
    ],
)
def test_sums_in_one_loop_wrong_answers_fail(wrong, hint):
    verdict = exercises.check_sums_in_one_loop(wrong)
    assert not verdict, f"{wrong.__name__} passed"
    assert hint in verdict.message, verdict.message


@pytest.mark.parametrize(
    ("wrong", "hint"),
    [
        (lambda n, p, itemsize: n * p * itemsize, "counted writing a * b once"),
        (lambda n, p, itemsize: 2 * n * p, "that counts entries"),
        (lambda n, p, itemsize: 2 * n * p * 4, "not a fixed 4"),
        (lambda n, p, itemsize: 3 * n * p * itemsize, "so it cancels"),
        (lambda n, p, itemsize: 2 * (n + p) * itemsize, "your estimate is"),
        (lambda n, p, itemsize: 2 * n * p * itemsize * 8, "so it cancels"),
    ],
    ids=["written-once", "entries", "float32-itemsize", "three-passes", "n-plus-p", "bits"],
)
def test_bytes_saved_wrong_answers_fail(wrong, hint):
    verdict = exercises.check_bytes_saved(wrong)
    assert not verdict, "passed"
    assert hint in verdict.message, verdict.message
