"""Checker for the Pallas chapter's exercise on a vector add on a grid."""

from __future__ import annotations

from jax.experimental import pallas as pl

from ...checks import exercise_checker, require_callable
from ...pallas_kernels import CallLayout
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


def require_vector_layout(answer, x, y, what: str) -> CallLayout:
    """The layout of `answer(x, y)`'s pallas_call, failing unless it runs one program per block
    of `VECTOR_BLOCK` entries with blocks of `VECTOR_BLOCK` and index map i -> (i,) for every operand
    (Exercises 1 and 6)."""
    n = x.shape[0]
    layout = the_call(answer, x, y, what=what)
    grid = (pl.cdiv(n, VECTOR_BLOCK),)
    require_blocks(layout.inputs, (VECTOR_BLOCK,), "input")
    require_blocks(layout.outputs, (VECTOR_BLOCK,), "output")
    require_grid(layout, grid, "one program per block of 128 entries", f"vectors of length {n}")
    for position, block in enumerate(layout.inputs):
        require_index_map(block, grid, lambda i: (i,), f"input {position}")
    require_index_map(layout.outputs[0], grid, lambda i: (i,), "the output")
    return layout


@exercise_checker(
    hints=(
        "The kernel gets three refs, x_ref, y_ref and out_ref, and writes "
        "out_ref[...] = x_ref[...] + y_ref[...]; pl.pallas_call runs it once per block.",
        "grid=(pl.cdiv(n, 128),) and pl.BlockSpec((128,), index_map) for the two inputs and the "
        "output; the index map takes the program index i and returns the block index (i,), not "
        "the element offset. Pass interpret=interpret_mode().",
    )
)
def check_add_vectors(add_vectors) -> None:
    require_callable(add_vectors, "add_vectors")
    for seed, n in enumerate(VECTOR_LENGTHS):
        x, y = random_array((n,), 2 * seed), random_array((n,), 2 * seed + 1)
        shapes = f"vectors of length {n}"
        require_vector_layout(add_vectors, x, y, "add_vectors")
        got = result_of(add_vectors, (x, y), (n,), "add_vectors", "x + y")
        require_close(
            got,
            x + y,
            shapes=shapes,
            nan_hint="The blocks past the end read NaN in interpret mode; an elementwise kernel "
            "never needs them, so look at what your kernel writes.",
        )
