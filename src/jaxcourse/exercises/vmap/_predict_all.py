"""Checker of the vmap chapter's exercise on a shared argument, in_axes=None."""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from ...checks import (
    call_eager_and_jitted,
    close,
    exercise_checker,
    require,
)
from ._common import (
    _fresh_sizes,
    _grows_with_batch,
    _require_float32,
    _require_mapped_function_reads,
    _require_not_like,
    _require_values,
    _require_vmap,
    _shape,
)


@exercise_checker(
    hints=(
        "Start from affine, written for one example, and let jax.vmap add the batch axis. in_axes takes one entry per argument of affine: 0 for an argument cut into one slice per example, None for an argument every example shares.",
        "Only xs has one row per example; the weights and the bias are shared, so in_axes is (None, None, 0). The default maps every argument, and with as many examples as rows of the weights it runs without error and pairs example i with row i and bias[i]. Keep the batch axis first (out_axes=0) and the float32 of the inputs.",
    )
)
def check_predict_all(predict_all) -> None:
    """`predict_all(weights, bias, xs)` returns `xs @ weights.T + bias`, one row per example,
    computed with `jax.vmap` (eagerly and under `jax.jit`).

    The first test batch has as many examples as `weights` has rows, so that mapping over
    `weights` by mistake runs without an error and must be caught by the checks.
    """
    rng = np.random.default_rng(0)
    weights = jnp.asarray(rng.normal(size=(4, 3)), dtype=jnp.float32)
    bias = jnp.asarray(rng.normal(size=(4,)), dtype=jnp.float32)
    w64, b64 = np.asarray(weights, np.float64), np.asarray(bias, np.float64)
    for n_examples in (4, 7, 1):
        xs = rng.normal(size=(n_examples, 3)).astype(np.float32)
        if n_examples == 7:
            xs[2] = 0.0  # an all-zero example: its prediction is the bias
        x64 = xs.astype(np.float64)
        expected = x64 @ w64.T + b64
        for how, result in call_eager_and_jitted(
            predict_all, weights, bias, jnp.asarray(xs), hints=_MAPPED_SHARED_HINTS
        ):
            _require_not_like(
                result,
                [
                    (
                        x64[0] @ w64.T + b64,
                        f"you returned the {len(b64)} outputs of the first example only: apply "
                        "affine to every row of xs with jax.vmap(affine, in_axes=(None, None, 0)).",
                    )
                ],
            )
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
            _require_float32(result, f"predict_all{how}")
            _require_not_like(
                result,
                [
                    # mapping a shared argument runs only when n equals its length
                    *(
                        [
                            (
                                x64 @ w64.T + b64[:, None],
                                "you mapped the bias along with the examples: example i got bias[i] added to "
                                "every output. Share the bias too, in_axes=(None, None, 0).",
                            ),
                            (
                                (w64 * x64).sum(axis=1, keepdims=True) + b64,
                                "you mapped the weights along with the examples: example i met only row i of "
                                "the weights. Share them, in_axes=(None, None, 0).",
                            ),
                        ]
                        if n_examples == len(b64)
                        else []
                    ),
                    (
                        x64 @ w64.T,
                        "the values are weights @ x without the bias: add the bias (affine does), "
                        "shared by every example.",
                    ),
                    (
                        x64 @ w64.T - b64,
                        "you subtracted the bias: affine computes weights @ x + bias.",
                    ),
                ],
            )
            _require_values(
                result,
                expected,
                f"predict_all{how}",
                f"{n_examples} examples x 4 outputs",
                f"the shape is right but the values are not (batch of {n_examples} examples{how}): each "
                "example should meet the whole weight matrix and the whole bias, in_axes=(None, None, 0).",
            )
    grows = _grows_with_batch(
        predict_all, lambda n: (weights, bias, jnp.ones((n, 3), jnp.float32)), "predict_all"
    )
    require(
        grows is None,
        "the values are right, but your program grows with the batch ({1} operations for {0} "
        "examples, {3} for {2}): a Python loop over the rows, unrolled. Map affine over the rows "
        "with jax.vmap(affine, in_axes=(None, None, 0)).".format(*(grows or (0, 0, 0, 0))),
    )
    n_fresh = next(_fresh_sizes)
    _require_vmap(
        predict_all,
        (weights, bias, jnp.ones((n_fresh, 3), jnp.float32)),
        1,
        "the values are right, but no vmap batched them: you wrote the batched product by hand "
        "(such as xs @ weights.T + bias). This exercise practises jax.vmap: map affine over the rows "
        "with jax.vmap(affine, in_axes=(None, None, 0)).",
        what="predict_all",
    )
    _require_mapped_function_reads(
        predict_all,
        (weights, bias, jnp.ones((next(_fresh_sizes), 3), jnp.float32)),  # a size never traced
        1,
        (3,),
        "the values are right, but the function you vmap never reads an example of xs: the "
        "predictions are computed outside vmap (such as xs @ weights.T + bias, by hand) and the "
        "vmap only passes them through. Map affine itself over the rows of xs, "
        "jax.vmap(affine, in_axes=(None, None, 0)).",
        what="predict_all",
    )


_MAPPED_SHARED_HINTS = (
    (
        ValueError,
        "inconsistent sizes",
        "vmap mapped an argument that every example shares: the weights or the bias were cut into "
        "slices along with xs, and their length differs from the number of examples. Share them "
        "with in_axes=(None, None, 0)",
    ),
)
