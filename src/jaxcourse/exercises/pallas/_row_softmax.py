"""Checker for the Pallas chapter's exercise on a row-wise softmax, one block per row."""

from __future__ import annotations

import jax
import numpy as np

from ...checks import exercise_checker, require, require_callable
from ._common import (
    random_array,
    require_blocks,
    require_close,
    require_grid,
    require_index_map,
    result_of,
    the_call,
)

CASES = (
    ("an (8, 128) array", (8, 128), 1.0, 0.0),
    ("a (5, 100) array", (5, 100), 3.0, 0.0),
    ("a (3, 7) array", (3, 7), 1.0, 0.0),
    ("a (4, 50) array with entries near 100", (4, 50), 1.0, 100.0),
)
"""(words, shape, scale, shift): the last overflows exp in float32 unless the row's max is
subtracted first."""


def _diagnose(got: np.ndarray, x) -> None:
    require(
        not np.allclose(got, 1.0),
        "every entry of your result is 1: the sum ran over axis 0 of the (1, n) block, which "
        "holds one entry per column. Reduce over axis=1, the row.",
    )
    require(
        np.all(np.isfinite(got)),
        "your result has inf or NaN for rows with entries near 100: exp(100) overflows float32. "
        "Subtract the row's max before exp; softmax does not change.",
    )


@exercise_checker(
    hints=(
        "One program per row: grid=(m,), and a BlockSpec((1, n), lambda i: (i, 0)) for the "
        "input and the output, so that the kernel sees the whole row as a (1, n) block.",
        "In the kernel, subtract the row's max before exp (exp(100) overflows float32), then "
        "divide by the sum; reduce over axis=1 with keepdims=True, the axis of the row inside "
        "the (1, n) block.",
    )
)
def check_row_softmax(row_softmax) -> None:
    require_callable(row_softmax, "row_softmax")
    for seed, (shapes, shape, scale, shift) in enumerate(CASES):
        x = shift + random_array(shape, seed, scale=scale)
        m, n = shape
        layout = the_call(row_softmax, x, what="row_softmax")
        require_blocks(layout.inputs, (1, n), "input")
        require_blocks(layout.outputs, (1, n), "output")
        require_grid(layout, (m,), "one program per row", shapes)
        require_index_map(layout.inputs[0], (m,), lambda i: (i, 0), "the input")
        require_index_map(layout.outputs[0], (m,), lambda i: (i, 0), "the output")
        got = result_of(row_softmax, (x,), shape, "row_softmax", "softmax of each row")
        _diagnose(got, x)
        require_close(
            got,
            jax.nn.softmax(x, axis=1),
            shapes=shapes,
            nan_hint="Subtract the row's max before exp.",
            rtol=1e-5,
            atol=1e-6,
        )
