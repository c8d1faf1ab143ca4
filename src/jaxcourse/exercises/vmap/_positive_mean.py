"""Checker of the vmap chapter's exercise on a vmap-friendly positive mean."""

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
from ._common import _require_not_like

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

_NONZERO_SIZE_HINT = (
    "jnp.nonzero (or jnp.where with one argument) returns as many indices as there are positive "
    "entries, a number that depends on the values, so vmap cannot batch it without size=. Keep "
    "every entry and zero out the others with jnp.where(x > 0, x, 0.0)."
)

_NO_POSITIVE_ROWS = np.flatnonzero(~(_POSITIVE_MEAN_ROWS > 0).any(axis=1))
"""The test rows with no positive entry, whose answer is 0.0."""


@exercise_checker(
    hints=(
        "Under vmap every row must give arrays of the same shape, so x[x > 0] (whose length depends on the values) is out. Keep all the entries and make the unwanted ones harmless instead.",
        "Two reductions over the whole row: the sum of jnp.where(x > 0, x, 0.0) and the count (x > 0).sum(). Strictly positive: zeros do not count. A row with no positive entry has count 0 and must give 0.0, not a NaN: divide by jnp.maximum(count, 1), and choose with jnp.where, never a Python if.",
    )
)
def check_positive_mean(positive_mean) -> None:
    """`positive_mean(x)` on one vector works eagerly, under `vmap` and under `jit(vmap(...))`."""
    rows = jnp.asarray(_POSITIVE_MEAN_ROWS)
    hints = (
        (jax.errors.ConcretizationTypeError, "size argument", _NONZERO_SIZE_HINT),
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
        positive_count = np.maximum((_POSITIVE_MEAN_ROWS > 0).sum(axis=1), 1)
        nonzero_count = np.maximum((_POSITIVE_MEAN_ROWS != 0).sum(axis=1), 1)
        _require_not_like(
            result,
            [
                (
                    _POSITIVE_MEAN_ROWS.sum(axis=1) / positive_count,
                    "you summed every entry, the negative ones too, then divided by the number of "
                    "positive entries: sum only the positive ones, jnp.where(x > 0, x, 0.0).sum().",
                ),
                (
                    _POSITIVE_MEAN_ROWS.clip(min=0).sum(axis=1) / nonzero_count,
                    "you divided by the number of nonzero entries (jnp.count_nonzero), which counts "
                    "the negative ones too: divide by the number of positive entries, (x > 0).sum().",
                ),
                (
                    np.abs(_POSITIVE_MEAN_ROWS).sum(axis=1) / nonzero_count,
                    "this is the mean of the absolute values of the nonzero entries: negative "
                    "entries must not count at all, neither in the sum nor in the count.",
                ),
            ],
        )
        empty = result[_NO_POSITIVE_ROWS]
        require(
            close(empty, np.zeros_like(empty), atol=1e-6),
            f"{how}: the rows with no positive entry gave {empty.round(4).tolist()}; the exercise "
            "asks for 0.0 there.",
        )
        require(
            close(result, _POSITIVE_MEAN_EXPECTED, rtol=1e-4, atol=1e-5),
            f"{how}: expected {_POSITIVE_MEAN_EXPECTED.tolist()} for the test rows, got "
            f"{result.round(4).tolist()}.",
        )
