"""Checker for the Pallas chapter's exercise on a fused exp and column sum."""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np
from jax.experimental import pallas as pl

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

BLOCK = (32, 128)
SHAPES = ((96, 256), (45, 140), (7, 5), (100, 128))
"""The first divides the block, so a NaN there cannot come from the edge."""


INIT_HINT = (
    "The output block starts uninitialised (NaN in interpret mode, garbage on hardware), and "
    "your kernel adds to it before setting it: zero it under @pl.when(pl.program_id(1) == 0), "
    "the first step of the reduction over row blocks."
)
MASK_HINT = (
    "The shapes whose rows do not divide 32 give NaN: the last row block reads past the end of x "
    "(NaN in interpret mode). Mask those rows before summing: rows = pl.program_id(1) * 32 + "
    "jax.lax.broadcasted_iota(jnp.int32, (32, 128), 0), then jnp.where(rows < n, jnp.exp(block), "
    "0.0). Columns past the edge need no mask: their sums are written past the end and dropped."
)


def _diagnose(got: np.ndarray, x) -> None:
    require(
        not np.allclose(got, np.asarray(jnp.sum(x, axis=0)), rtol=1e-4, atol=1e-4),
        "your result is the column sums of x itself: apply jnp.exp to the block before summing.",
    )


@exercise_checker(
    hints=(
        "Grid (column blocks, row blocks): program (j, i) reads block (i, j) of x and adds the "
        "column sums of its exp to output block j, which stays the same for every i.",
        "Zero out_ref under @pl.when(pl.program_id(1) == 0); mask the rows past the edge with "
        "rows = i * 32 + jax.lax.broadcasted_iota(jnp.int32, (32, 128), 0) and "
        "jnp.where(rows < n, jnp.exp(block), 0.0) before summing over axis 0.",
    )
)
def check_exp_column_sums(exp_column_sums) -> None:
    require_callable(exp_column_sums, "exp_column_sums")
    for seed, shape in enumerate(SHAPES):
        x = random_array(shape, seed)
        n, p = shape
        shapes = f"x of shape {shape}"
        layout = the_call(exp_column_sums, x, what="exp_column_sums")
        grid = (pl.cdiv(p, BLOCK[1]), pl.cdiv(n, BLOCK[0]))
        require_blocks(layout.inputs, BLOCK, "input")
        require_blocks(layout.outputs, (BLOCK[1],), "output")
        require_grid(
            layout, grid, "column blocks first, then the reduction over row blocks", shapes
        )
        require_index_map(layout.inputs[0], grid, lambda j, i: (i, j), "the input")
        require_index_map(layout.outputs[0], grid, lambda j, i: (j,), "the output")
        got = result_of(exp_column_sums, (x,), (p,), "exp_column_sums", "the column sums of exp(x)")
        _diagnose(got, x)
        require_close(
            got,
            jnp.sum(jnp.exp(x), axis=0),
            shapes=shapes,
            nan_hint=INIT_HINT if n % BLOCK[0] == 0 else MASK_HINT,
            rtol=1e-5,
            atol=1e-4,
        )
