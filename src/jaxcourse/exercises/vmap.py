"""Checkers for the exercises of the chapter 'Automatic vectorisation with jax.vmap'."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from ..checks import exercise_checker, require


def _close(actual, expected, *, rtol: float = 1e-4, atol: float = 1e-5) -> bool:
    actual = np.asarray(actual)
    return actual.shape == np.shape(expected) and np.allclose(actual, expected, rtol=rtol, atol=atol)


def _shape(value) -> tuple:
    return tuple(np.shape(value))


@exercise_checker("Exercise 1 (a shared argument: in_axes=None)")
def check_predict_all(predict_all) -> None:
    """`predict_all(weights, bias, xs)` returns `xs @ weights.T + bias`, one row per example.

    The first test batch has as many examples as `weights` has rows, so that mapping over
    `weights` by mistake runs without an error and must be caught by the checks.
    """
    rng = np.random.default_rng(0)
    weights = jnp.asarray(rng.normal(size=(4, 3)), dtype=jnp.float32)
    bias = jnp.asarray(rng.normal(size=(4,)), dtype=jnp.float32)
    for n_examples in (4, 7):
        xs = jnp.asarray(rng.normal(size=(n_examples, 3)), dtype=jnp.float32)
        expected = np.asarray(xs) @ np.asarray(weights).T + np.asarray(bias)
        result = predict_all(weights, bias, xs)
        require(
            _shape(result) != (n_examples,),
            f"one number per example, shape {(n_examples,)}: vmap paired example i with row i of the "
            "weights and entry i of the bias. Share them with in_axes=(None, None, 0).",
        )
        require(
            _shape(result) == expected.shape,
            f"for {n_examples} examples and 4 outputs the result should have shape {expected.shape}, "
            f"got {_shape(result)}. Map over the examples only.",
        )
        require(
            not _close(np.asarray(result).T, expected),
            "the values are right but transposed: the batch axis of the result should come first "
            "(out_axes=0, the default).",
        )
        require(
            _close(result, expected),
            f"the shape is right but the values are not (batch of {n_examples} examples): each "
            "example should meet the whole weight matrix and the whole bias, in_axes=(None, None, 0).",
        )


@exercise_checker("Exercise 2 (a vmap-friendly positive mean)")
def check_positive_mean(positive_mean) -> None:
    """`positive_mean(x)` on one vector works under `vmap` and `jit(vmap(...))`."""
    rows = np.array(
        [
            [1.0, -2.0, 3.0, -4.0, 5.0],
            [-1.0, -2.0, -3.0, -4.0, -5.0],  # no positive entry: the answer is 0
            [0.5, 0.0, 0.0, 2.5, -1.0],  # zeros are not positive
            [2.0, 2.0, 2.0, 2.0, 2.0],
        ],
        dtype=np.float32,
    )
    expected = np.array([3.0, 0.0, 1.5, 2.0], dtype=np.float32)
    try:
        result = jax.vmap(positive_mean)(jnp.asarray(rows))
    except IndexError:
        require(False, "vmap cannot index with a boolean mask (the result's size would depend on "
                       "the values). Keep every entry and zero out the others with jnp.where.")
    require(_shape(result) == (4,), f"one number per row was expected, got shape {_shape(result)}.")
    require(
        bool(np.all(np.isfinite(np.asarray(result)))),
        "a row with no positive entry gave a NaN or inf: dividing by a count of 0. Return 0.0 "
        "for such a row (jnp.maximum(count, 1) or jnp.where helps).",
    )
    require(
        not _close(result, rows.clip(min=0).mean(axis=1)),
        "you divided by the length of the row; divide by the number of positive entries.",
    )
    require(
        _close(result, expected),
        f"expected {expected.tolist()} for the test rows, got {np.asarray(result).round(4).tolist()}.",
    )
    jitted = jax.jit(jax.vmap(positive_mean))(jnp.asarray(rows))
    require(_close(jitted, expected), "the result changes under jax.jit; keep everything in jnp.")


@exercise_checker("Exercise 3 (pairwise distances with nested vmap)")
def check_pairwise_sq_dists(pairwise_sq_dists) -> None:
    """`pairwise_sq_dists(xs, ys)[i, j] == sum((xs[i] - ys[j]) ** 2)`, shape (n, m)."""
    rng = np.random.default_rng(1)
    xs = rng.normal(size=(5, 3)).astype(np.float32)
    ys = rng.normal(size=(4, 3)).astype(np.float32)
    expected = ((xs[:, None, :] - ys[None, :, :]) ** 2).sum(axis=-1)
    result = pairwise_sq_dists(jnp.asarray(xs), jnp.asarray(ys))
    require(
        _shape(result) != (4, 5) or not _close(np.asarray(result).T, expected),
        "the values are right but transposed: the outer vmap should run over xs, so that "
        "rows are indexed by xs (or set out_axes=1 on the outer vmap).",
    )
    require(
        _shape(result) == (5, 4),
        f"xs has 5 points and ys has 4, so the result should have shape (5, 4), got {_shape(result)}. "
        "A single vmap pairs xs[i] with ys[i]; nest two vmaps to get every pair.",
    )
    require(_close(result, expected), "the shape is right but the values are not: is sq_dist applied "
                                      "to one point of xs and one point of ys?")


def _poisson_reference(weights, xs, ys, max_norm):
    """Per-example gradients of exp(x.w) - y x.w, each clipped to `max_norm`, then averaged."""
    weights, xs, ys = (np.asarray(a, dtype=np.float64) for a in (weights, xs, ys))
    grads = (np.exp(xs @ weights) - ys)[:, None] * xs
    norms = np.linalg.norm(grads, axis=1, keepdims=True)
    clipped = grads * np.minimum(1.0, max_norm / norms)
    return clipped.mean(axis=0), grads


def _call_traceable(fn, args):
    """Calls `fn(*args)`, turning a tracer-conversion error into a hint."""
    try:
        return fn(*args)
    except jax.errors.ConcretizationTypeError:
        require(False, "a Python `if`, `float()` or `min()` met a traced value (under vmap or jit). "
                       "Clip inside the computation with jnp.minimum or jnp.where.")


@exercise_checker("Exercise 4 (clipped per-example gradients)")
def check_clipped_mean_grad(clipped_mean_grad) -> None:
    """`clipped_mean_grad(weights, xs, ys, max_norm)`: mean of per-example Poisson gradients,
    each clipped to L2 norm at most `max_norm`; it must also run under `jax.jit`."""
    rng = np.random.default_rng(2)
    n_examples, n_features = 8, 3
    xs = rng.normal(size=(n_examples, n_features)).astype(np.float32)
    ys = rng.poisson(2.0, size=n_examples).astype(np.float32)
    weights = np.array([0.3, -0.2, 0.5], dtype=np.float32)
    max_norm = 0.3  # below most per-example norms and the mean's norm, above one example's
    expected, grads = _poisson_reference(weights, xs, ys, max_norm)
    args = (jnp.asarray(weights), jnp.asarray(xs), jnp.asarray(ys), max_norm)
    result = _call_traceable(clipped_mean_grad, args)
    require(
        _shape(result) != (n_examples, n_features),
        f"you returned one gradient per example, shape {(n_examples, n_features)}; "
        "clip each of them, then return their mean over the examples.",
    )
    require(
        _shape(result) == (n_features,),
        f"the result should have the shape of the weights, {(n_features,)}; got {_shape(result)}.",
    )
    unclipped = grads.mean(axis=0)
    require(not _close(result, unclipped), "this is the plain mean gradient: no example was clipped. "
                                           "Scale each per-example gradient by min(1, max_norm / its norm).")
    mean_norm = np.linalg.norm(unclipped)
    require(
        not _close(result, unclipped * min(1.0, max_norm / mean_norm)),
        "you clipped the mean gradient. Clip each example's gradient first, then average.",
    )
    require(
        not _close(result, expected * n_examples),
        "this is the sum of the clipped gradients; return their mean.",
    )
    require(_close(result, expected, rtol=1e-3, atol=1e-4),
            "wrong values: compare your per-example gradients with the formula (exp(x.w) - y) x.")
    jitted = _call_traceable(jax.jit(clipped_mean_grad), args)
    require(_close(jitted, expected, rtol=1e-3, atol=1e-4), "the result changes under jax.jit.")
