"""The vmap chapter's checkers: reference solutions pass, typical wrong answers get a useful hint."""

import jax
import jax.numpy as jnp
import pytest

from jaxcourse.exercises.vmap import (
    check_clipped_mean_grad,
    check_pairwise_sq_dists,
    check_positive_mean,
    check_predict_all,
)


def _stub(*args):
    raise NotImplementedError


@pytest.mark.parametrize(
    "checker",
    [check_predict_all, check_positive_mean, check_pairwise_sq_dists, check_clipped_mean_grad],
)
def test_a_stub_is_not_yet(checker):
    """A stub that raises NotImplementedError, or a missing answer, is 'not yet', never an error."""
    verdict = checker(_stub)
    assert not verdict and "no answer yet" in verdict.message
    assert not checker(None)


# Exercise 1 -----------------------------------------------------------------------------


def _affine(weights, bias, x):
    return weights @ x + bias


def test_predict_all_reference_passes():
    """Sharing the weights and the bias with in_axes=None is accepted."""

    def predict_all(weights, bias, xs):
        return jax.vmap(_affine, in_axes=(None, None, 0))(weights, bias, xs)

    assert check_predict_all(predict_all)


def test_predict_all_mapping_every_argument_fails_on_values():
    """Mapping the weights too runs when n == k, but gives wrong values, and the hint says why."""

    def predict_all(weights, bias, xs):
        return jax.vmap(_affine)(weights, bias, xs)

    verdict = check_predict_all(predict_all)
    assert not verdict and "in_axes=(None, None, 0)" in verdict.message


def test_predict_all_broadcasting_by_hand_fails():
    """The right numbers without vmap: the exercise practises vmap, and the checker asks the program."""
    verdict = check_predict_all(lambda weights, bias, xs: xs @ weights.T + bias)
    assert not verdict and "no vmap batched them" in verdict.message


def test_predict_all_returning_a_tuple_gets_a_structure_hint():
    """A (weights, predictions) pair where one array was asked for: the hint says what was expected."""

    def predict_all(weights, bias, xs):
        return weights, jax.vmap(_affine, in_axes=(None, None, 0))(weights, bias, xs)

    verdict = check_predict_all(predict_all)
    assert (
        not verdict
        and "should be one array of shape (4, 4)" in verdict.message
        and "tuple" in verdict.message
    )


def test_predict_all_transposed_result_gets_the_out_axes_hint():
    """Returning the batch on the last axis is caught, and the hint names out_axes."""

    def predict_all(weights, bias, xs):
        return jax.vmap(_affine, in_axes=(None, None, 0), out_axes=1)(weights, bias, xs)

    verdict = check_predict_all(predict_all)
    assert not verdict and "out_axes=0" in verdict.message


# Exercise 2 -----------------------------------------------------------------------------


def test_positive_mean_reference_passes():
    """Counting and summing with jnp.where, guarding the empty case, is accepted."""

    def positive_mean(x):
        positive = x > 0
        count = positive.sum()
        total = jnp.where(positive, x, 0.0).sum()
        return jnp.where(count > 0, total / jnp.maximum(count, 1), 0.0)

    assert check_positive_mean(positive_mean)


def test_positive_mean_boolean_mask_gets_the_where_hint():
    """The boolean-mask version fails under vmap; the hint points to jnp.where."""
    verdict = check_positive_mean(lambda x: x[x > 0].mean())
    assert not verdict and "jnp.where" in verdict.message


def test_positive_mean_dividing_by_the_length_fails():
    """Averaging with zeros in place of negatives divides by the wrong count."""
    verdict = check_positive_mean(lambda x: jnp.where(x > 0, x, 0.0).mean())
    assert not verdict and "number of positive entries" in verdict.message


def test_positive_mean_counting_zeros_fails():
    """x >= 0 counts the zeros as positive entries; the hint says zeros are not positive."""

    def positive_mean(x):
        count = (x >= 0).sum()
        return jnp.where(x >= 0, x, 0.0).sum() / jnp.maximum(count, 1)

    verdict = check_positive_mean(positive_mean)
    assert not verdict and "zeros are not positive" in verdict.message


def test_positive_mean_python_if_gets_the_traced_value_hint():
    """A Python `if` on the count works eagerly but not under vmap or jit; the hint says why."""

    def positive_mean(x):
        count = (x > 0).sum()
        if count == 0:
            return 0.0
        return jnp.where(x > 0, x, 0.0).sum() / count

    verdict = check_positive_mean(positive_mean)
    assert not verdict and "traced value" in verdict.message


def test_positive_mean_nan_for_an_empty_row_fails():
    """Dividing by a zero count gives NaN for a row without positive entries."""
    verdict = check_positive_mean(lambda x: jnp.where(x > 0, x, 0.0).sum() / (x > 0).sum())
    assert not verdict and "NaN" in verdict.message


def test_positive_mean_solution_comment_on_nan_gradients_holds():
    """The solution's comment: without maximum(count, 1), the discarded 0/0 is NaN, yet the
    gradient at a row with no positive entry stays 0 (the inner where masks every entry); with
    jnp.where(x > 0, jnp.log(x), 0.0) the NaN does reach the gradient, at x = 0."""

    def unguarded(x):
        positive = x > 0
        count = positive.sum()
        return jnp.where(count > 0, jnp.where(positive, x, 0.0).sum() / count, 0.0)

    no_positive = jnp.array([-1.0, -2.0, 0.0])
    assert bool(jnp.isnan(jnp.where(no_positive > 0, no_positive, 0.0).sum() / 0))
    assert jnp.array_equal(jax.grad(unguarded)(no_positive), jnp.zeros(3))
    assert check_positive_mean(unguarded)
    log_grad = jax.grad(lambda x: jnp.where(x > 0, jnp.log(x), 0.0).sum())(no_positive)
    assert bool(jnp.isnan(log_grad[2])) and not bool(jnp.isnan(log_grad[:2]).any())


# Exercise 3 -----------------------------------------------------------------------------


def _sq_dist(x, y):
    return jnp.sum((x - y) ** 2)


def test_pairwise_reference_passes():
    """vmap over ys nested in vmap over xs gives the (n, m) matrix."""

    def pairwise_sq_dists(xs, ys):
        return jax.vmap(jax.vmap(_sq_dist, in_axes=(None, 0)), in_axes=(0, None))(xs, ys)

    assert check_pairwise_sq_dists(pairwise_sq_dists)


def test_pairwise_single_vmap_fails():
    """A single vmap zips xs with ys, and fails for n != m; the checker reports it, never raises."""
    verdict = check_pairwise_sq_dists(lambda xs, ys: jax.vmap(_sq_dist)(xs, ys))
    assert not verdict and "nest two vmaps" in verdict.message


def test_pairwise_broadcasting_by_hand_fails():
    """Correct numbers from hand broadcasting: the exercise asks for two nested vmaps."""
    verdict = check_pairwise_sq_dists(
        lambda xs, ys: ((xs[:, None, :] - ys[None, :, :]) ** 2).sum(-1)
    )
    assert not verdict and "not two nested vmaps" in verdict.message


def test_pairwise_one_vmap_and_broadcasting_fails():
    """One vmap over xs with hand broadcasting inside is still not the nested vmaps asked for."""
    verdict = check_pairwise_sq_dists(
        lambda xs, ys: jax.vmap(lambda x: ((x - ys) ** 2).sum(-1))(xs)
    )
    assert not verdict and "not two nested vmaps" in verdict.message


def test_pairwise_transposed_gets_the_order_hint():
    """Swapping the nesting order gives the transpose; the hint names the outer vmap."""

    def pairwise_sq_dists(xs, ys):
        return jax.vmap(jax.vmap(_sq_dist, in_axes=(0, None)), in_axes=(None, 0))(xs, ys)

    verdict = check_pairwise_sq_dists(pairwise_sq_dists)
    assert not verdict and "transposed" in verdict.message


# Exercise 4 -----------------------------------------------------------------------------


def _per_example(loss, w, xs, ys):
    return jax.vmap(jax.grad(loss), in_axes=(None, 0, 0))(w, xs, ys)


@pytest.mark.slow
def test_clipped_mean_grad_reference_passes():
    """vmap(grad(loss)), clipping each example, then the mean, is accepted for every loss (and under jit)."""

    def clipped_mean_grad(loss, w, xs, ys, max_norm):
        grads = _per_example(loss, w, xs, ys)
        norms = jnp.linalg.norm(grads, axis=1, keepdims=True)
        return jnp.mean(grads * jnp.minimum(1.0, max_norm / norms), axis=0)

    assert check_clipped_mean_grad(clipped_mean_grad)


def test_clipping_the_mean_fails():
    """Clipping the averaged gradient instead of each example's is rejected with a hint."""

    def clipped_mean_grad(loss, w, xs, ys, max_norm):
        mean = _per_example(loss, w, xs, ys).mean(axis=0)
        return mean * jnp.minimum(1.0, max_norm / jnp.linalg.norm(mean))

    verdict = check_clipped_mean_grad(clipped_mean_grad)
    assert not verdict and "clipped the mean gradient" in verdict.message


def test_no_clipping_fails():
    """The plain mean of the per-example gradients is rejected."""
    verdict = check_clipped_mean_grad(
        lambda loss, w, xs, ys, max_norm: _per_example(loss, w, xs, ys).mean(axis=0)
    )
    assert not verdict and "no example was clipped" in verdict.message


def test_per_example_gradients_without_mean_fail():
    """Returning the (n, d) matrix of gradients is rejected with a shape hint."""
    verdict = check_clipped_mean_grad(
        lambda loss, w, xs, ys, max_norm: _per_example(loss, w, xs, ys)
    )
    assert not verdict and "one gradient per example" in verdict.message


def test_python_min_on_a_tracer_gets_a_hint():
    """A Python `min` on traced norms fails under vmap; the checker turns it into a hint."""

    def clip_one(g, max_norm):
        return g * min(1.0, max_norm / jnp.linalg.norm(g))

    def clipped_mean_grad(loss, w, xs, ys, max_norm):
        grads = _per_example(loss, w, xs, ys)
        return jax.vmap(clip_one, in_axes=(0, None))(grads, max_norm).mean(axis=0)

    verdict = check_clipped_mean_grad(clipped_mean_grad)
    assert not verdict and "jnp.minimum" in verdict.message


def _clip_each_coordinate(loss, w, xs, ys, max_norm):
    return jnp.clip(_per_example(loss, w, xs, ys), -max_norm, max_norm).mean(axis=0)


def _rescale_every_gradient(loss, w, xs, ys, max_norm):
    """Every gradient scaled to norm max_norm (no min with 1): also the small ones change."""
    grads = _per_example(loss, w, xs, ys)
    return jnp.mean(
        grads * max_norm / jnp.maximum(jnp.linalg.norm(grads, axis=1, keepdims=True), 1e-12), axis=0
    )


def _normalise_then_scale(loss, w, xs, ys, max_norm):
    """g / norm(g) * min(norm, max_norm): NaN for the example whose gradient is exactly zero."""
    grads = _per_example(loss, w, xs, ys)
    norms = jnp.linalg.norm(grads, axis=1, keepdims=True)
    return jnp.mean(grads / norms * jnp.minimum(norms, max_norm), axis=0)


@pytest.mark.parametrize(
    "wrong, hint",
    [
        (_clip_each_coordinate, "clipped each coordinate"),
        (_rescale_every_gradient, "rescaled every gradient"),
        (_normalise_then_scale, "gradient is exactly zero"),
    ],
)
def test_wrong_clipping_gets_the_hint_naming_it(wrong, hint):
    """A clipping mistake is named as such, not blamed on the per-example gradients."""
    verdict = check_clipped_mean_grad(wrong)
    assert not verdict and hint in verdict.message


def _clip_and_average(grads, max_norm):
    norms = jax.vmap(jnp.linalg.norm)(grads)[:, None]  # a vmap, but not for the gradients
    return jnp.mean(grads * jnp.minimum(1.0, max_norm / norms), axis=0)


def _hand_derived_poisson(loss, w, xs, ys, max_norm):
    """The review's answer: (exp(x.w) - y) x by hand, with a vmap for the norms only."""
    return _clip_and_average((jnp.exp(xs @ w) - ys)[:, None] * xs, max_norm)


def _python_loop_of_grad(loss, w, xs, ys, max_norm):
    """Autodiff of the right loss, but one example at a time: the program grows with the batch."""
    grads = jnp.stack([jax.grad(loss)(w, x, y) for x, y in zip(xs, ys)])
    return _clip_and_average(grads, max_norm)


@pytest.mark.slow_after_first
@pytest.mark.parametrize(
    "wrong, hint",
    [
        (_hand_derived_poisson, "your per-example gradients are Poisson's"),
        (_python_loop_of_grad, "a Python loop over the examples unrolls into the program"),
    ],
    ids=["hand-derived-gradient", "python-loop-of-grad"],
)
def test_answers_that_skip_vmap_of_grad_fail(wrong, hint):
    """Right numbers for the Poisson loss without vmap of grad: the logistic loss and the program size catch them."""
    verdict = check_clipped_mean_grad(wrong)
    assert not verdict and hint in verdict.message


def test_the_vmap_depth_probe_works_on_the_pinned_jax():
    """The method check of exercises 1, 3 and 4 watches JAX's batching interpreter (an internal
    API); where it is missing, the check would be skipped. On the pinned jax it must work, so
    that a JAX upgrade that moves it fails here instead of silently weakening the checkers."""
    import jax
    import jax.numpy as jnp

    from jaxcourse.exercises.vmap import _vmap_depth

    x = jnp.ones((3, 4))
    assert _vmap_depth(lambda a: jax.vmap(jax.vmap(jnp.sin))(a), x, what="probe") == 2
    assert _vmap_depth(lambda a: jax.vmap(jnp.sin)(a), x, what="probe") == 1
    assert _vmap_depth(jnp.sin, x, what="probe") == 0
