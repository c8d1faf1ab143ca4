"""Checker for the Pallas chapter's exercise on a tiled matrix product with an accumulator."""

from __future__ import annotations

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

BLOCK = 32
CASES = (((64, 96), (96, 64)), ((50, 64), (64, 40)), ((32, 32), (32, 70)))
"""(x's shape, y's shape): k is a multiple of 32, m and n not always."""


def _diagnose(got: np.ndarray, x, y) -> None:
    require(
        not np.isnan(got).any(),
        "your result has NaN: the accumulator was used before it was set. Scratch memory "
        "starts uninitialised (NaN in interpret mode, garbage on hardware): zero it under "
        "@pl.when(pl.program_id(2) == 0), the first step of the reduction.",
    )
    last = np.asarray(x[:, -BLOCK:] @ y[-BLOCK:, :])
    require(
        x.shape[1] == BLOCK or not np.allclose(got, last, rtol=1e-4, atol=1e-4),
        "your result is the product of the last blocks of k only: each step overwrote the "
        "accumulator or the output instead of adding to it (acc_ref[...] += ...).",
    )


@exercise_checker(
    hints=(
        "Three grid axes: the output's row block i, its column block j, and the reduction "
        "block kk last. Program (i, j, kk) reads block (i, kk) of x and (kk, j) of y and adds "
        "their product to a (32, 32) accumulator.",
        "scratch_shapes=[pltpu.VMEM((32, 32), jnp.float32)] gives the kernel a fourth ref, "
        "acc_ref; under @pl.when(pl.program_id(2) == 0) zero it, add x_ref[...] @ y_ref[...] at "
        "every step, and under @pl.when(pl.program_id(2) == pl.num_programs(2) - 1) copy it to "
        "out_ref. The output's index map ignores kk.",
    )
)
def check_matmul(matmul) -> None:
    require_callable(matmul, "matmul")
    for seed, (x_shape, y_shape) in enumerate(CASES):
        x, y = random_array(x_shape, 2 * seed), random_array(y_shape, 2 * seed + 1)
        (m, k), n = x_shape, y_shape[1]
        shapes = f"x of shape {x_shape} and y of shape {y_shape}"
        layout = the_call(matmul, x, y, what="matmul")
        grid = (pl.cdiv(m, BLOCK), pl.cdiv(n, BLOCK), k // BLOCK)
        require_blocks(layout.inputs, (BLOCK, BLOCK), "input")
        require_blocks(layout.outputs, (BLOCK, BLOCK), "output")
        require_grid(layout, grid, "row blocks, column blocks, then the reduction over k", shapes)
        require_index_map(layout.inputs[0], grid, lambda i, j, kk: (i, kk), "x (input 0)")
        require_index_map(layout.inputs[1], grid, lambda i, j, kk: (kk, j), "y (input 1)")
        require_index_map(layout.outputs[0], grid, lambda i, j, kk: (i, j), "the output")
        require(
            layout.scratch_shapes == ((BLOCK, BLOCK),),
            f"your kernel's scratch buffers have shapes {layout.scratch_shapes}; the exercise "
            "asks for one (32, 32) accumulator: scratch_shapes=[pltpu.VMEM((32, 32), "
            "jnp.float32)].",
        )
        semantics = layout.dimension_semantics or ()
        reduction = semantics[2].lower() if len(semantics) == 3 else "arbitrary"
        require(
            "parallel" not in reduction,
            f"your compiler_params mark the reduction axis {reduction!r}: "
            "its programs add to the same accumulator and output block, so they must run one "
            "after another. Mark it 'arbitrary' (the first two axes may be 'parallel').",
        )
        got = result_of(matmul, (x, y), (m, n), "matmul", "x @ y")
        _diagnose(got, x, y)
        require_close(
            got,
            x @ y,
            shapes=shapes,
            nan_hint="Zero the accumulator at the first step.",
            rtol=1e-4,
            atol=1e-4,
        )
