"""Checker of the vmap chapter's Exercise 1: a shared argument, in_axes=None."""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from ...checks import (
    call_eager_and_jitted,
    close,
    exercise_checker,
    require,
)
from ._common import _fresh_sizes, _require_values, _require_vmap, _shape


@exercise_checker("Exercise 1 (a shared argument: in_axes=None)")
def check_predict_all(predict_all) -> None:
    """`predict_all(weights, bias, xs)` returns `xs @ weights.T + bias`, one row per example,
    computed with `jax.vmap` (eagerly and under `jax.jit`).

    The first test batch has as many examples as `weights` has rows, so that mapping over
    `weights` by mistake runs without an error and must be caught by the checks.
    """
    rng = np.random.default_rng(0)
    weights = jnp.asarray(rng.normal(size=(4, 3)), dtype=jnp.float32)
    bias = jnp.asarray(rng.normal(size=(4,)), dtype=jnp.float32)
    for n_examples in (4, 7, 1):
        xs = rng.normal(size=(n_examples, 3)).astype(np.float32)
        if n_examples == 7:
            xs[2] = 0.0  # an all-zero example: its prediction is the bias
        expected = xs.astype(np.float64) @ np.asarray(weights, np.float64).T + np.asarray(bias)
        for how, result in call_eager_and_jitted(predict_all, weights, bias, jnp.asarray(xs)):
            require(
                _shape(result) != (n_examples,),
                f"one number per example, shape {(n_examples,)}: vmap paired example i with row i of the "
                "weights and entry i of the bias. Share them with in_axes=(None, None, 0).",
            )
            require(
                _shape(result) != (4, n_examples)
                or not close(np.asarray(result).T, expected, rtol=1e-4, atol=1e-5),
                "the values are right but transposed: the batch axis of the result should come first "
                "(out_axes=0, the default).",
            )
            _require_values(
                result,
                expected,
                f"predict_all{how}",
                f"{n_examples} examples x 4 outputs",
                f"the shape is right but the values are not (batch of {n_examples} examples{how}): each "
                "example should meet the whole weight matrix and the whole bias, in_axes=(None, None, 0).",
            )
    n_fresh = next(_fresh_sizes)
    _require_vmap(
        predict_all,
        (weights, bias, jnp.ones((n_fresh, 3), jnp.float32)),
        1,
        "the values are right, but no vmap batched them: this exercise practises jax.vmap, so map "
        "affine over the rows with jax.vmap(affine, in_axes=(None, None, 0)) instead of writing "
        "xs @ weights.T + bias by hand.",
        what="predict_all",
    )
