"""Checkers of the PLN benchmark chapter: reference solutions pass, typical mistakes get hints."""

import jax.numpy as jnp
import numpy as np
import pytest
from jax.scipy.linalg import cho_solve

from jaxcourse.exercises import pln_benchmark as exercises
from jaxcourse.pln import closed_form_params


# --- exercise 1: time to target -------------------------------------------------------------
def time_to_target(elbo, times, target):
    reached = np.flatnonzero(np.asarray(elbo) >= target)
    return float(times[reached[0]]) if reached.size else None


def test_time_to_target_reference_passes():
    """The first-crossing solution passes."""
    assert exercises.check_time_to_target(time_to_target)


def test_time_to_target_last_crossing_fails():
    """Taking the last crossing of a non-monotone trace is caught with a hint."""

    def last_crossing(elbo, times, target):
        reached = np.flatnonzero(np.asarray(elbo) >= target)
        return float(times[reached[-1]]) if reached.size else None

    verdict = exercises.check_time_to_target(last_crossing)
    assert not verdict and "FIRST time" in verdict.message


def test_time_to_target_index_instead_of_time_fails():
    """Returning the index rather than the time is caught."""

    def index(elbo, times, target):
        reached = np.flatnonzero(np.asarray(elbo) >= target)
        return int(reached[0]) if reached.size else None

    verdict = exercises.check_time_to_target(index)
    assert not verdict and "index" in verdict.message


def test_time_to_target_stub_is_not_yet():
    """A stub raising NotImplementedError gets 'no answer yet'."""

    def stub(elbo, times, target):
        raise NotImplementedError

    verdict = exercises.check_time_to_target(stub)
    assert not verdict and "no answer yet" in verdict.message


# --- exercise 2: the analytic gradient in M ------------------------------------------------------
def latent_mean_gradient(data, variational):
    params = closed_form_params(data, variational)
    rate = jnp.exp(data.offsets + variational.latent_mean + 0.5 * variational.latent_sqrt_var**2)
    residuals = variational.latent_mean - data.covariates @ params.coef
    chol = jnp.linalg.cholesky(params.covariance)
    precision = cho_solve((chol, True), jnp.eye(params.covariance.shape[0]))
    return data.counts - rate - residuals @ precision


@pytest.mark.slow
def test_gradient_reference_passes():
    """Y - A - (M - XB) Omega passes."""
    assert exercises.check_latent_mean_gradient(latent_mean_gradient)


@pytest.mark.slow
def test_gradient_without_prior_term_fails():
    """Forgetting the Gaussian term is named in the hint."""

    def poisson_only(data, variational):
        rate = jnp.exp(
            data.offsets + variational.latent_mean + 0.5 * variational.latent_sqrt_var**2
        )
        return data.counts - rate

    verdict = exercises.check_latent_mean_gradient(poisson_only)
    assert not verdict and "-(M - XB) Omega" in verdict.message


def test_gradient_with_sigma_instead_of_omega_fails():
    """Multiplying by Sigma instead of its inverse is named in the hint."""

    def with_sigma(data, variational):
        params = closed_form_params(data, variational)
        rate = jnp.exp(
            data.offsets + variational.latent_mean + 0.5 * variational.latent_sqrt_var**2
        )
        residuals = variational.latent_mean - data.covariates @ params.coef
        return data.counts - rate - residuals @ params.covariance

    verdict = exercises.check_latent_mean_gradient(with_sigma)
    assert not verdict and "inverse Omega" in verdict.message


# --- exercise 3: one Rprop step ---------------------------------------------------------------
def rprop_step(x, grad, step, prev_sign):
    sign = jnp.sign(grad).astype(jnp.int8)
    agree = sign * prev_sign
    step = jnp.clip(step * jnp.where(agree > 0, 1.2, jnp.where(agree < 0, 0.5, 1.0)), 1e-6, 50.0)
    sign = jnp.where(agree < 0, jnp.int8(0), sign)
    return x - sign * step, step, sign


@pytest.mark.slow
def test_rprop_reference_passes():
    """torch's rule (grow, shrink and skip, clip) passes."""
    assert exercises.check_rprop_step(rprop_step)


def test_rprop_moving_after_a_flip_fails():
    """Moving an entry whose gradient just flipped sign (what textbook Rprop- does) is caught."""

    def moves_on_flip(x, grad, step, prev_sign):
        sign = jnp.sign(grad).astype(jnp.int8)
        agree = sign * prev_sign
        step = jnp.clip(
            step * jnp.where(agree > 0, 1.2, jnp.where(agree < 0, 0.5, 1.0)), 1e-6, 50.0
        )
        return x - sign * step, step, jnp.where(agree < 0, jnp.int8(0), sign)

    verdict = exercises.check_rprop_step(moves_on_flip)
    assert not verdict and "does not move" in verdict.message


def test_rprop_uphill_fails():
    """Adding the step in the gradient's direction is caught."""

    def uphill(x, grad, step, prev_sign):
        new_x, step, sign = rprop_step(x, grad, step, prev_sign)
        return 2 * x - new_x, step, sign

    verdict = exercises.check_rprop_step(uphill)
    assert not verdict and "uphill" in verdict.message


def test_rprop_without_clipping_fails():
    """Letting a step grow past the largest step size is caught."""

    def unclipped(x, grad, step, prev_sign):
        sign = jnp.sign(grad).astype(jnp.int8)
        agree = sign * prev_sign
        step = step * jnp.where(agree > 0, 1.2, jnp.where(agree < 0, 0.5, 1.0))
        sign = jnp.where(agree < 0, jnp.int8(0), sign)
        return x - sign * step, step, sign

    verdict = exercises.check_rprop_step(unclipped)
    assert not verdict and "clip" in verdict.message


# --- exercise 4: a Newton step with momentum and restart --------------------------------------
def momentum_update(grad, curvature, velocity, momentum):
    carried = jnp.where(jnp.sum(grad * velocity) > 0, 0.0, momentum)
    return carried * velocity - grad / curvature


def test_momentum_update_reference_passes():
    """Momentum carried while sum(g * v) <= 0, dropped otherwise, passes."""
    assert exercises.check_momentum_update(momentum_update)


def test_momentum_update_without_restart_fails():
    """Always carrying the momentum is caught on the uphill case."""

    def no_restart(grad, curvature, velocity, momentum):
        return momentum * velocity - grad / curvature

    verdict = exercises.check_momentum_update(no_restart)
    assert not verdict and "points uphill" in verdict.message


def test_momentum_update_entrywise_restart_fails():
    """Restarting entry by entry instead of on the global sum is named."""

    def per_entry(grad, curvature, velocity, momentum):
        return jnp.where(grad * velocity > 0, 0.0, momentum * velocity) - grad / curvature

    verdict = exercises.check_momentum_update(per_entry)
    assert not verdict and "not a test entry by entry" in verdict.message


def test_momentum_update_wrong_sign_fails():
    """Stepping along the gradient of the loss is caught."""

    def uphill(grad, curvature, velocity, momentum):
        carried = jnp.where(jnp.sum(grad * velocity) > 0, 0.0, momentum)
        return -(carried * velocity - grad / curvature)

    verdict = exercises.check_momentum_update(uphill)
    assert not verdict and "wrong sign" in verdict.message


def test_momentum_update_plain_newton_fails():
    """Dropping the momentum altogether is caught on the downhill case."""

    def plain(grad, curvature, velocity, momentum):
        return -grad / curvature

    verdict = exercises.check_momentum_update(plain)
    assert not verdict and "carry" in verdict.message


# --- exercise 5: a weighted sum that writes to memory, and one that does not ---------------------
def through_memory(a, b, w):
    return w @ (a * b)


def one_loop(a, b, w):
    return jnp.sum(w[:, None] * a * b, axis=0)


def blocks_of_rows(a, b, w, block_rows=128):
    x = w[:, None] * a * b
    whole = x.shape[0] // block_rows * block_rows
    blocks = x[:whole].reshape(-1, block_rows, x.shape[1])
    block_sums = jnp.einsum("bri,r->bi", blocks, jnp.ones(block_rows, x.dtype)).sum(axis=0)
    return block_sums + jnp.ones(x.shape[0] - whole, x.dtype) @ x[whole:]


def stub(*args):
    raise NotImplementedError


@pytest.mark.slow
def test_column_sums_reference_solutions_pass():
    """The chapter's solution passes all three checkers; so does the package's column_sums as
    the fused form."""
    from jaxcourse.reductions import column_sums

    assert exercises.check_sums_through_memory(through_memory)
    assert exercises.check_sums_in_one_loop(one_loop)
    assert exercises.check_sums_in_one_loop(lambda a, b, w: column_sums(w[:, None] * a * b))
    assert exercises.check_bytes_saved(lambda n, p, itemsize: 2 * n * p * itemsize)


@pytest.mark.parametrize(
    "checker",
    [
        exercises.check_sums_through_memory,
        exercises.check_sums_in_one_loop,
        exercises.check_bytes_saved,
    ],
    ids=lambda checker: checker.__name__,
)
def test_column_sums_stubs_are_not_yet(checker):
    verdict = checker(stub)
    assert not verdict and "no answer yet" in verdict.message


# sums_through_memory


def test_through_memory_fused_form_fails():
    """A plain reduction writes nothing: the hint says how to make the product an instruction's operand."""
    verdict = exercises.check_sums_through_memory(one_loop)
    assert not verdict and "writes nothing" in verdict.message and "product of w" in verdict.message


def test_through_memory_row_sums_fail():
    """(a * b) @ w-like vector on the wrong side gives one sum per row; the hint says so."""
    verdict = exercises.check_sums_through_memory(
        lambda a, b, w: (w[:, None] * a * b) @ jnp.ones(a.shape[1], a.dtype)
    )
    assert not verdict and "row sums" in verdict.message


def test_through_memory_weights_on_the_wrong_axis_fail():
    """w broadcast along the columns does not fit (n, p); the hint says w has one entry per row."""
    verdict = exercises.check_sums_through_memory(lambda a, b, w: (w * a) @ b)
    assert not verdict and "one entry per row" in verdict.message


def test_through_memory_whole_blocks_only_fails():
    """Blocks that need the rows to be a multiple of 128 fail on 300 rows; the hint says so."""

    def whole_blocks(a, b, w):
        blocks = (w[:, None] * a * b).reshape(-1, 128, a.shape[1])
        return jnp.einsum("bri,r->bi", blocks, jnp.ones(128, a.dtype)).sum(axis=0)

    verdict = exercises.check_sums_through_memory(whole_blocks)
    assert not verdict and "any number of rows" in verdict.message


def test_through_memory_with_numpy_fails_under_jit():
    """A NumPy product works eagerly but not on a tracer; the hint says to use jnp."""
    verdict = exercises.check_sums_through_memory(
        lambda a, b, w: np.asarray(w) @ (np.asarray(a) * np.asarray(b))
    )
    assert not verdict and "jnp, not np" in verdict.message


# sums_in_one_loop


def test_one_loop_dot_fails():
    """w @ (a * b) gives the right numbers but writes a * b: the hint says why."""
    verdict = exercises.check_sums_in_one_loop(through_memory)
    assert (
        not verdict
        and "writes a * b to memory" in verdict.message
        and "product of w with a matrix" in verdict.message
    )


def test_one_loop_blocks_fail():
    """jax 0.10's blocks give the right numbers but make XLA write the product rearranged."""
    verdict = exercises.check_sums_in_one_loop(blocks_of_rows)
    assert not verdict and "blocks of rows" in verdict.message and "rearranged" in verdict.message


@pytest.mark.slow
def test_one_loop_python_loop_fails():
    """Adding the rows in a Python loop is right eagerly, but unrolls under jit; the hint says so."""

    def loop(a, b, w):
        sums = jnp.zeros(a.shape[1], a.dtype)
        for row in w[:, None] * a * b:
            sums = sums + row
        return sums

    verdict = exercises.check_sums_in_one_loop(loop)
    assert not verdict and "Python loop" in verdict.message


def test_one_loop_sum_of_everything_fails():
    """A sum without an axis is one number; the hint names axis=0."""
    verdict = exercises.check_sums_in_one_loop(lambda a, b, w: jnp.sum(w[:, None] * a * b))
    assert not verdict and "one number" in verdict.message and "axis=0" in verdict.message


# bytes_saved


def test_bytes_saved_written_once_fails():
    """Counting the product's write but not its read back: the hint says it crosses memory twice."""
    verdict = exercises.check_bytes_saved(lambda n, p, itemsize: n * p * itemsize)
    assert not verdict and "twice" in verdict.message


def test_bytes_saved_in_entries_fails():
    """Entries instead of bytes: the hint names itemsize."""
    verdict = exercises.check_bytes_saved(lambda n, p, itemsize: 2 * n * p)
    assert not verdict and "itemsize" in verdict.message


def test_bytes_saved_with_shared_traffic_fails():
    """Counting a and b too: the hint says their reads cancel."""
    verdict = exercises.check_bytes_saved(lambda n, p, itemsize: 4 * n * p * itemsize)
    assert not verdict and "cancels" in verdict.message


def test_bytes_saved_not_a_number_fails():
    verdict = exercises.check_bytes_saved(lambda n, p, itemsize: (n, p))
    assert not verdict and "one number of bytes" in verdict.message


# Wrong answers the first checkers let through ------------------------------------------------------


def test_time_to_target_strict_comparison_fails_on_a_tie():
    """> instead of >= misses a trace that reaches the target exactly."""

    def strict(elbo, times, target):
        reached = np.flatnonzero(np.asarray(elbo) > target)
        return float(times[reached[0]]) if reached.size else None

    verdict = exercises.check_time_to_target(strict)
    assert not verdict and "(>=, not >)" in verdict.message


def test_time_to_target_argmax_without_a_check_fails():
    """np.argmax of an all-False mask is 0: a target never reached must give None."""
    verdict = exercises.check_time_to_target(
        lambda elbo, times, target: float(times[np.argmax(np.asarray(elbo) >= target)])
    )
    assert not verdict and "never reaches" in verdict.message


@pytest.mark.slow
def test_gradient_by_autodiff_fails_on_the_method():
    """jax.grad of the profiled ELBO gives the right numbers but is not the hand-derived formula."""
    import jax

    from jaxcourse.pln import profiled_elbo

    verdict = exercises.check_latent_mean_gradient(
        lambda data, variational: jax.grad(profiled_elbo, argnums=1)(data, variational).latent_mean
    )
    assert not verdict and "differentiates" in verdict.message


def test_gradient_with_the_wrong_sign_of_the_prior_is_blamed_on_the_sign():
    def plus_prior(data, variational):
        return 2 * (
            data.counts
            - jnp.exp(data.offsets + variational.latent_mean + 0.5 * variational.latent_sqrt_var**2)
        ) - latent_mean_gradient(data, variational)

    verdict = exercises.check_latent_mean_gradient(plus_prior)
    assert not verdict and "wrong sign" in verdict.message and "rate" not in verdict.message


def test_gradient_without_the_variance_in_the_rate_fails():
    def no_variance(data, variational):
        params = closed_form_params(data, variational)
        precision = jnp.linalg.inv(params.covariance)
        residuals = variational.latent_mean - data.covariates @ params.coef
        return data.counts - jnp.exp(data.offsets + variational.latent_mean) - residuals @ precision

    verdict = exercises.check_latent_mean_gradient(no_variance)
    assert not verdict and "S^2 / 2" in verdict.message


def test_rprop_sign_by_comparison_fails_on_zero_gradients():
    """sign = where(grad >= 0, 1, -1) moves entries whose gradient is exactly zero."""

    def no_zero(x, grad, step, prev_sign):
        sign = jnp.where(grad >= 0, 1, -1).astype(jnp.int8)
        agree = sign * prev_sign
        step = jnp.clip(
            step * jnp.where(agree > 0, 1.2, jnp.where(agree < 0, 0.5, 1.0)), 1e-6, 50.0
        )
        sign = jnp.where(agree < 0, jnp.int8(0), sign)
        return x - sign * step, step, sign

    verdict = exercises.check_rprop_step(no_zero)
    assert not verdict and "exactly 0" in verdict.message


def test_rprop_python_if_fails_under_jit():
    def branchy(x, grad, step, prev_sign):
        if float(jnp.sum(jnp.abs(grad))) == 0.0:
            return x, step, jnp.zeros_like(prev_sign)
        return rprop_step(x, grad, step, prev_sign)

    verdict = exercises.check_rprop_step(branchy)
    assert not verdict and "traced value" in verdict.message


def test_rprop_returning_a_pair_fails_with_the_expected_structure():
    verdict = exercises.check_rprop_step(
        lambda x, grad, step, prev_sign: rprop_step(x, grad, step, prev_sign)[:2]
    )
    assert not verdict and "three arrays" in verdict.message


def test_momentum_restart_on_a_tie_fails():
    """>= instead of > restarts when sum(grad * velocity) is exactly 0."""

    def eager_restart(grad, curvature, velocity, momentum):
        carried = jnp.where(jnp.sum(grad * velocity) >= 0, 0.0, momentum)
        return carried * velocity - grad / curvature

    verdict = exercises.check_momentum_update(eager_restart)
    assert not verdict and "not >= 0" in verdict.message


def test_momentum_python_if_fails_under_jit():
    def branchy(grad, curvature, velocity, momentum):
        carried = 0.0 if float(jnp.sum(grad * velocity)) > 0 else momentum
        return carried * velocity - grad / curvature

    verdict = exercises.check_momentum_update(branchy)
    assert not verdict and "traced value" in verdict.message
