"""Checker of the vmap chapter's exercise on pairwise distances with nested vmap."""

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
    _require_mapped_function_reads,
    _require_not_like,
    _require_values,
    _require_vmap,
    _shape,
)

_ZIPPED_HINTS = (
    (
        ValueError,
        "inconsistent sizes",
        "a single vmap pairs xs[i] with ys[i], which needs len(xs) == len(ys); nest two vmaps to get "
        "every pair: the inner over ys with in_axes=(None, 0), the outer over xs with in_axes=(0, None)",
    ),
)


@exercise_checker(
    hints=(
        "One vmap pairs xs[i] with ys[i]. To get every pair, map twice: first one point of xs against all of ys, then that over all of xs.",
        "Inner: jax.vmap(sq_dist, in_axes=(None, 0)), one x against every y, shape (m,). Outer: jax.vmap(inner, in_axes=(0, None)) over xs, so the rows are indexed by xs, shape (n, m). Use sq_dist as given: squared differences, no square root; no Python loop over the points.",
    )
)
def check_pairwise_sq_dists(pairwise_sq_dists) -> None:
    """`pairwise_sq_dists(xs, ys)[i, j] == sum((xs[i] - ys[j]) ** 2)`, shape (n, m), with two
    nested `vmap`s (eagerly and under `jax.jit`)."""
    rng = np.random.default_rng(1)
    for n, m in ((5, 4), (3, 3), (1, 6)):
        xs = rng.normal(size=(n, 3)).astype(np.float32)
        ys = rng.normal(size=(m, 3)).astype(np.float32)
        ys[0] = xs[0]  # a distance of exactly 0
        expected = ((xs[:, None, :].astype(np.float64) - ys[None, :, :]) ** 2).sum(axis=-1)
        results = call_eager_and_jitted(
            pairwise_sq_dists, jnp.asarray(xs), jnp.asarray(ys), hints=_ZIPPED_HINTS
        )
        for how, result in results:
            require(
                n == m
                or _shape(result) != (m, n)
                or not close(np.asarray(result).T, expected, rtol=1e-4, atol=1e-5),
                "the values are right but transposed: the outer vmap should run over xs, so that "
                "rows are indexed by xs (or set out_axes=1 on the outer vmap).",
            )
            require(
                n == m or _shape(result) != (n,),
                f"a single vmap pairs xs[i] with ys[i]; nest two vmaps to get every pair (shape {(n, m)}).",
            )
            _require_not_like(
                result,
                [
                    (
                        np.sqrt(expected),
                        "you took the square root: these are distances, and the exercise asks for "
                        "squared distances, sq_dist(xs[i], ys[j]) = sum((x - y) ** 2).",
                    ),
                    (
                        np.abs(xs[:, None, :].astype(np.float64) - ys[None, :, :]).sum(axis=-1),
                        "you summed absolute differences |x - y|; sq_dist sums squared differences, "
                        "(x - y) ** 2.",
                    ),
                ],
            )
            _require_values(
                result,
                expected,
                f"pairwise_sq_dists{how}",
                f"{n} points of xs x {m} of ys",
                f"the shape is right but the values are not ({n} x {m} points{how}): is sq_dist applied "
                "to one point of xs and one point of ys?",
            )
    grows = _grows_with_batch(
        pairwise_sq_dists, lambda n: (jnp.ones((n, 3)), jnp.ones((4, 3))), "pairwise_sq_dists"
    )
    require(
        grows is None,
        "the values are right, but your program grows with the number of points of xs ({1} "
        "operations for {0}, {3} for {2}): a Python loop over xs, unrolled. Replace the loop by the "
        "outer vmap, jax.vmap(..., in_axes=(0, None)).".format(*(grows or (0, 0, 0, 0))),
    )
    fresh = next(_fresh_sizes)
    _require_vmap(
        pairwise_sq_dists,
        (jnp.ones((fresh, 3)), jnp.ones((fresh + 1, 3))),
        2,
        "the values are right, but your program is not two nested vmaps (it broadcasts by hand, or "
        "vmaps once): map sq_dist over ys with jax.vmap(sq_dist, in_axes=(None, 0)), then map that "
        "over xs with in_axes=(0, None).",
        what="pairwise_sq_dists",
    )
    _require_mapped_function_reads(
        pairwise_sq_dists,
        (jnp.ones((next(_fresh_sizes), 3)), jnp.ones((fresh + 1, 3))),  # a size never traced
        2,
        (3,),
        "the values are right, but the function under your two vmaps never reads a point: the "
        "distances are computed outside vmap (by broadcasting by hand) and the vmaps only pass "
        "them through. Nest vmaps round sq_dist itself, so that it gets one point of xs and one "
        "of ys.",
        what="pairwise_sq_dists",
    )
