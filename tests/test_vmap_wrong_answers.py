"""Wrong answers to the vmap chapter's exercises, written from the exercise texts alone as a hurried
learner would (issue 27, point 4): each fails, and its hint names what the answer actually did."""

import jax
import jax.numpy as jnp
import pytest
from wrong_answers import assert_fails_with

from jaxcourse.exercises.vmap import (
    check_clipped_mean_grad,
    check_pairwise_sq_dists,
    check_positive_mean,
    check_predict_all,
)

# Exercise 1: predict_all(weights, bias, xs) with jax.vmap -----------------------------------


def affine(weights, bias, x):
    return weights @ x + bias


WRONG_PREDICT_ALL = {
    "bias mapped with the examples": (
        lambda w, b, xs: jax.vmap(affine, in_axes=(None, 0, 0))(w, b, xs),
        ("mapped the bias",),
    ),
    "weights mapped, bias shared": (
        lambda w, b, xs: jax.vmap(affine, in_axes=(0, None, 0))(w, b, xs),
        ("mapped the weights",),
    ),
    "bias forgotten": (
        lambda w, b, xs: jax.vmap(lambda w, x: w @ x, in_axes=(None, 0))(w, xs),
        ("without the bias",),
    ),
    "bias subtracted": (
        lambda w, b, xs: jax.vmap(lambda w, b, x: w @ x - b, in_axes=(None, None, 0))(w, b, xs),
        ("subtracted the bias",),
    ),
    "a Python loop over the rows": (
        lambda w, b, xs: jnp.stack([affine(w, b, x) for x in xs]),
        ("Python loop",),
    ),
    "right values, half precision": (
        lambda w, b, xs: jax.vmap(affine, in_axes=(None, None, 0))(w, b, xs).astype(jnp.float16),
        ("float16",),
    ),
    "only the first example": (
        lambda w, b, xs: affine(w, b, xs[0]),
        ("first example only",),
    ),
    "broadcast by hand, wrapped in a vmap that only passes it through": (
        lambda w, b, xs: jax.vmap(lambda r: r * 1.0)(xs @ w.T + b),
        ("never reads an example of xs",),
    ),
}


@pytest.mark.slow_after_first
@pytest.mark.parametrize("case", list(WRONG_PREDICT_ALL), ids=list(WRONG_PREDICT_ALL))
def test_predict_all_wrong_answer(case):
    answer, fragments = WRONG_PREDICT_ALL[case]
    assert_fails_with(check_predict_all(answer), *fragments)


# Exercise 2: positive_mean(x), batched by vmap ---------------------------------------------


def _nonzero_mean(x):
    return x[jnp.nonzero(x > 0)].mean()


WRONG_POSITIVE_MEAN = {
    "jnp.nonzero without a size": (_nonzero_mean, ("depends on the values",)),
    "divided by the number of nonzero entries": (
        lambda x: jnp.where(x > 0, x, 0.0).sum() / jnp.maximum(jnp.count_nonzero(x), 1),
        ("nonzero entries",),
    ),
    "every entry summed, divided by the positives": (
        lambda x: x.sum() / jnp.maximum((x > 0).sum(), 1),
        ("the negative ones too",),
    ),
    "mean of the absolute values": (
        lambda x: jnp.where(x != 0, jnp.abs(x), 0.0).sum() / jnp.maximum((x != 0).sum(), 1),
        ("absolute values",),
    ),
    "1.0 for a row with no positive entry": (
        lambda x: jnp.where(
            (x > 0).sum() > 0, jnp.where(x > 0, x, 0.0).sum() / jnp.maximum((x > 0).sum(), 1), 1.0
        ),
        ("no positive entry", "0.0"),
    ),
    "jnp.mean with where=": (lambda x: jnp.mean(x, where=x > 0), ("NaN",)),
    "kept the reduced axis": (
        lambda x: (
            jnp.where(x > 0, x, 0.0).sum(keepdims=True) / jnp.maximum((x > 0).sum(keepdims=True), 1)
        ),
        ("a scalar",),
    ),
}


@pytest.mark.slow_after_first
@pytest.mark.parametrize("case", list(WRONG_POSITIVE_MEAN), ids=list(WRONG_POSITIVE_MEAN))
def test_positive_mean_wrong_answer(case):
    answer, fragments = WRONG_POSITIVE_MEAN[case]
    assert_fails_with(check_positive_mean(answer), *fragments)


# Exercise 3: pairwise_sq_dists(xs, ys) with two nested vmaps -------------------------------


def sq_dist(x, y):
    return jnp.sum((x - y) ** 2)


def _loop_of_vmap(xs, ys):
    return jnp.stack([jax.vmap(sq_dist, in_axes=(None, 0))(x, ys) for x in xs])


WRONG_PAIRWISE = {
    "Euclidean distances, not squared": (
        lambda xs, ys: jax.vmap(
            jax.vmap(lambda x, y: jnp.sqrt(sq_dist(x, y)), in_axes=(None, 0)), in_axes=(0, None)
        )(xs, ys),
        ("square root",),
    ),
    "differences not summed": (
        lambda xs, ys: jax.vmap(
            jax.vmap(lambda x, y: (x - y) ** 2, in_axes=(None, 0)), in_axes=(0, None)
        )(xs, ys),
        ("one array of shape",),
    ),
    "a Python loop around one vmap": (_loop_of_vmap, ("Python loop",)),
    "inner vmap over the coordinates of x": (
        lambda xs, ys: jax.vmap(jax.vmap(sq_dist, in_axes=(0, None)), in_axes=(0, None))(xs, ys),
        ("got an array of shape (5, 3)",),
    ),
    "both levels map both arguments": (
        lambda xs, ys: jax.vmap(jax.vmap(sq_dist))(xs, ys),
        ("pairs xs[i] with ys[i]",),
    ),
    "broadcast by hand, wrapped in two vmaps that only pass it through": (
        lambda xs, ys: jax.vmap(jax.vmap(lambda r: r * 1.0))(
            ((xs[:, None, :] - ys[None, :, :]) ** 2).sum(-1)
        ),
        ("never reads a point",),
    ),
    "absolute differences": (
        lambda xs, ys: jax.vmap(
            jax.vmap(lambda x, y: jnp.sum(jnp.abs(x - y)), in_axes=(None, 0)), in_axes=(0, None)
        )(xs, ys),
        ("absolute differences",),
    ),
}


@pytest.mark.slow_after_first
@pytest.mark.parametrize("case", list(WRONG_PAIRWISE), ids=list(WRONG_PAIRWISE))
def test_pairwise_sq_dists_wrong_answer(case):
    answer, fragments = WRONG_PAIRWISE[case]
    assert_fails_with(check_pairwise_sq_dists(answer), *fragments)


# Exercise 4: clipped_mean_grad(loss, w, xs, ys, max_norm) ----------------------------------


def _per_example(loss, w, xs, ys):
    return jax.vmap(jax.grad(loss), in_axes=(None, 0, 0))(w, xs, ys)


def _grad_of_batch(loss, w, xs, ys, max_norm):
    grads = jax.grad(loss)(w, xs, ys)  # loss is written for one example
    return grads * jnp.minimum(1.0, max_norm / jnp.linalg.norm(grads))


def _norm_over_examples(loss, w, xs, ys, max_norm):
    grads = _per_example(loss, w, xs, ys)
    norms = jnp.linalg.norm(grads, axis=0, keepdims=True)
    return jnp.mean(grads * jnp.minimum(1.0, max_norm / norms), axis=0)


def _one_norm_for_the_batch(loss, w, xs, ys, max_norm):
    grads = _per_example(loss, w, xs, ys)
    return jnp.mean(grads * jnp.minimum(1.0, max_norm / jnp.linalg.norm(grads)), axis=0)


def _maximum_not_minimum(loss, w, xs, ys, max_norm):
    grads = _per_example(loss, w, xs, ys)
    norms = jnp.linalg.norm(grads, axis=1, keepdims=True)
    return jnp.mean(grads * jnp.maximum(1.0, max_norm / norms), axis=0)


def _squared_norm(loss, w, xs, ys, max_norm):
    grads = _per_example(loss, w, xs, ys)
    squared = jnp.sum(grads**2, axis=1, keepdims=True)
    return jnp.mean(grads * jnp.minimum(1.0, max_norm / squared), axis=0)


def _one_sided_coordinate_clip(loss, w, xs, ys, max_norm):
    return jnp.mean(jnp.clip(_per_example(loss, w, xs, ys), max=max_norm), axis=0)


WRONG_CLIPPING = {
    "grad of the batch, loss written for one example": (_grad_of_batch, ("scalar",)),
    "norms taken over the examples": (_norm_over_examples, ("axis=0",)),
    "one norm for the whole batch": (_one_norm_for_the_batch, ("one norm for the whole batch",)),
    "jnp.maximum instead of jnp.minimum": (_maximum_not_minimum, ("max(1, max_norm / norm)",)),
    "squared norm": (_squared_norm, ("squared norm",)),
    "jnp.clip of the coordinates, from above only": (_one_sided_coordinate_clip, ("coordinate",)),
}


@pytest.mark.slow_after_first
@pytest.mark.parametrize("case", list(WRONG_CLIPPING), ids=list(WRONG_CLIPPING))
def test_clipped_mean_grad_wrong_answer(case):
    answer, fragments = WRONG_CLIPPING[case]
    assert_fails_with(check_clipped_mean_grad(answer), *fragments)
