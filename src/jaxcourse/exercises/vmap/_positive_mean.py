"""Checker of the vmap chapter's Exercise 2: a vmap-friendly positive mean."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from ...checks import (
    call_answer,
    close,
    exercise_checker,
    require,
    require_array,
)

_POSITIVE_MEAN_ROWS = np.array(
    [
        [1.0, -2.0, 3.0, -4.0, 5.0],
        [-1.0, -2.0, -3.0, -4.0, -5.0],  # no positive entry: the answer is 0
        [0.5, 0.0, 0.0, 2.5, -1.0],  # zeros are not positive
        [2.0, 2.0, 2.0, 2.0, 2.0],  # ties
        [0.0, 0.0, 0.0, 0.0, 0.0],  # only zeros: no positive entry either
    ],
    dtype=np.float32,
)
_POSITIVE_MEAN_EXPECTED = np.array([3.0, 0.0, 1.5, 2.0, 0.0])

_BOOLEAN_MASK_HINT = (
    "vmap cannot index with a boolean mask (the result's size would depend on the values). Keep "
    "every entry and zero out the others with jnp.where."
)


@exercise_checker("Exercise 2 (a vmap-friendly positive mean)")
def check_positive_mean(positive_mean) -> None:
    """`positive_mean(x)` on one vector works eagerly, under `vmap` and under `jit(vmap(...))`."""
    rows = jnp.asarray(_POSITIVE_MEAN_ROWS)
    hints = (
        (IndexError, "", _BOOLEAN_MASK_HINT),
        (jax.errors.NonConcreteBooleanIndexError, "", _BOOLEAN_MASK_HINT),
    )
    single = call_answer(positive_mean, rows[0], what="positive_mean")
    require_array(single, (), what="positive_mean of one vector", expected="a scalar")
    results = {
        "jax.vmap(positive_mean)": call_answer(
            jax.vmap(positive_mean), rows, what="jax.vmap(positive_mean)", hints=hints
        ),
        "jax.jit(jax.vmap(positive_mean))": call_answer(
            jax.jit(jax.vmap(positive_mean)),
            rows,
            what="jax.jit(jax.vmap(positive_mean))",
            hints=hints,
        ),
    }
    for how, result in results.items():
        result = require_array(result, (len(rows),), what=how, expected="one number per row")
        require(
            bool(np.all(np.isfinite(result))),
            f"{how}: a row with no positive entry gave a NaN or inf, from dividing by a count of 0. "
            "Return 0.0 for such a row (jnp.maximum(count, 1) or jnp.where helps).",
        )
        require(
            not close(result, _POSITIVE_MEAN_ROWS.clip(min=0).mean(axis=1), rtol=1e-4, atol=1e-5),
            "you divided by the length of the row; divide by the number of positive entries.",
        )
        nonnegative_count = np.maximum((_POSITIVE_MEAN_ROWS >= 0).sum(axis=1), 1)
        require(
            not close(
                result,
                _POSITIVE_MEAN_ROWS.clip(min=0).sum(axis=1) / nonnegative_count,
                rtol=1e-4,
                atol=1e-5,
            ),
            "zeros are not positive: count the entries with x > 0, not x >= 0.",
        )
        require(
            close(result, _POSITIVE_MEAN_EXPECTED, rtol=1e-4, atol=1e-5),
            f"{how}: expected {_POSITIVE_MEAN_EXPECTED.tolist()} for the test rows, got "
            f"{result.round(4).tolist()}.",
        )
