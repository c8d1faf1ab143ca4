"""Checker for the Pallas chapter's exercise on a masked edge block."""

from __future__ import annotations

import numpy as np
from jax.experimental import pallas as pl

from ...checks import exercise_checker, require_callable
from ._common import (
    VECTOR_BLOCK,
    VECTOR_LENGTHS,
    random_array,
    require_blocks,
    require_close,
    require_grid,
    require_index_map,
    result_of,
    the_call,
)

MASK_HINT = (
    "The last block reaches past the end of x, and its padding is NaN in interpret mode "
    "(garbage on hardware). Mask it: each entry's index in x is pl.program_id(0) * 128 + "
    "jax.lax.broadcasted_iota(jnp.int32, (128,), 0), the block's offset plus the position in the "
    "block; keep the entries with index < n (strictly less: x[n] is already past the end), "
    "and sum jnp.where(index < n, block, 0.0)."
)


def _reference(x: np.ndarray) -> np.ndarray:
    padded = np.zeros(pl.cdiv(x.size, VECTOR_BLOCK) * VECTOR_BLOCK, np.float32)
    padded[: x.size] = x
    return padded.reshape(-1, VECTOR_BLOCK).sum(axis=1)


@exercise_checker(
    hints=(
        "One program per block of 128 entries writes one sum: grid=(pl.cdiv(n, 128),), input "
        "blocks (128,), output blocks (1,), both index maps lambda i: (i,).",
        "The last block reaches past the end of x and reads padding (NaN in interpret mode). "
        "Build each entry's index in x, pl.program_id(0) * 128 + "
        "jax.lax.broadcasted_iota(jnp.int32, (128,), 0), and sum jnp.where(index < n, block, 0.0).",
    )
)
def check_block_sums(block_sums) -> None:
    require_callable(block_sums, "block_sums")
    for seed, n in enumerate(VECTOR_LENGTHS):
        x = random_array((n,), seed)
        shapes = f"a vector of length {n}"
        layout = the_call(block_sums, x, what="block_sums")
        grid = (pl.cdiv(n, VECTOR_BLOCK),)
        require_blocks(layout.inputs, (VECTOR_BLOCK,), "input")
        require_blocks(layout.outputs, (1,), "output")
        require_grid(layout, grid, "one program per block of 128 entries", shapes)
        require_index_map(layout.inputs[0], grid, lambda i: (i,), "the input")
        require_index_map(layout.outputs[0], grid, lambda i: (i,), "the output")
        got = result_of(block_sums, (x,), grid, "block_sums", "one sum per block of 128")
        require_close(
            got, _reference(np.asarray(x)), shapes=shapes, nan_hint=MASK_HINT, rtol=1e-5, atol=1e-4
        )
