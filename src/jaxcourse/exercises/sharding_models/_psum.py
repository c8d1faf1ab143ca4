"""Checker of the second sharding chapter's exercise on psum from psum_scatter and all_gather."""

from __future__ import annotations

import numpy as np
from jax.sharding import Mesh

from ...checks import CheckFailed, close, exercise_checker, require, require_array, require_callable
from ...mesh import DATA
from ._common import lax_names, line_mesh, require_data_axis_only, run_per_device, same_rows

_PSUM = ("psum", "psum_invariant")


def _untiled_scatter_hint(rows: int, n: int) -> tuple:
    return (
        ValueError,
        "must match shard count",
        f"with {rows} rows per device, your lax.psum_scatter failed: without tiled=True it wants "
        f"the scattered axis exactly {n} long (one entry per device) and removes it, so it only "
        f"works when the rows happen to equal the devices. With tiled=True it cuts any multiple of "
        f"{n} rows into {n} slices.",
    )


def _wrong_sum_hint(got: np.ndarray, total: np.ndarray, found, rows: int, n: int) -> str:
    """What an answer whose values are not the sum did, as far as its values and collectives
    tell."""
    used = {collective.name for collective in found}
    if n > 1 and all(close(got[d], total / n, rtol=1e-4, atol=1e-5) for d in range(n)):
        return (
            f"every device holds the sum divided by {n}, the mean of the blocks: the exercise asks "
            "for lax.psum, the sum, so drop the division."
        )
    if not used:
        return (
            "your function calls no collective, so each device computes from its own block only "
            "and cannot know the other devices' blocks, whose sum the exercise asks for."
        )
    if "reduce_scatter" in used and "all_gather" not in used:
        return (
            f"your function scatters the sum (lax.psum_scatter) but never gathers the slices: "
            f"each device computed only its own {rows // n} row(s) of the sum. "
            "lax.all_gather(..., tiled=True) gives every device all of them."
        )
    if all(same_rows(got[d], total) for d in range(n)):
        return (
            "every device holds all the rows of the sum, but in another order: "
            "lax.all_gather(piece, 'data', tiled=True) puts device i's slice at its place; a stack "
            "(tiled=False) transposed or reshaped across the device axis does not."
        )
    return (
        f"with {rows} rows per device, some device does not hold the sum over devices of the "
        "blocks. psum_scatter(block, 'data', tiled=True) leaves device i the i-th slice of the "
        "sum; all_gather(..., tiled=True) puts the slices back in order on every device."
    )


def _without_scatter_hint(found) -> str:
    used = {collective.name for collective in found}
    if "ppermute" in used:
        return (
            "the values are right, but your function adds whole blocks passed round with "
            "lax.ppermute, not lax.psum_scatter: each device sends n - 1 whole blocks, n/2 times "
            "the 2(n - 1)/n blocks of a scatter of the sum and a gather of its slices. Build it "
            "from those two."
        )
    if "all_to_all" in used:
        return (
            "the values are right, but your function scatters the sum by hand (lax.all_to_all "
            "then a local sum): the exercise asks for lax.psum_scatter."
        )
    if "all_gather" in used:
        return (
            "the values are right, but without lax.psum_scatter: gathering every full block and "
            "adding them sends n - 1 whole blocks per device, n/2 times the 2(n - 1)/n blocks of "
            "a scatter of the sum and a gather of its slices."
        )
    return (
        f"the values are right, but without lax.psum_scatter (your function calls "
        f"{', '.join(lax_names(found)) or 'no collective'})."
    )


@exercise_checker(
    hints=(
        "lax.psum_scatter(block, 'data', tiled=True) leaves each device one slice of the "
        "sum; lax.all_gather(..., 'data', tiled=True) puts the slices back together.",
        "Use tiled=True in both (without it the scatter wants a leading axis of size n and "
        "the gather adds one); gather along the axis you scattered, rows (axis 0). A gather"
        " of the blocks themselves concatenates them instead of adding them.",
    )
)
def check_psum_from_pieces(psum_from_pieces, mesh: Mesh) -> None:
    """`psum_from_pieces(block)` runs on one device's `(rows, columns)` block inside shard_map
    and returns `lax.psum(block, "data")`, built from `lax.psum_scatter` and `lax.all_gather`.

    It runs on all of `mesh`'s devices along "data" (a long axis shows wrong orders), for rows
    equal to the devices and twice as many, on blocks of both signs."""
    require_callable(psum_from_pieces, "psum_from_pieces")
    line = line_mesh(mesh)
    n = line.shape[DATA]
    rng = np.random.default_rng(3)
    for rows in (n, 2 * n):
        x = rng.standard_normal((n * rows, 3)).astype(np.float32)
        result, found, _ = run_per_device(
            psum_from_pieces, line, x, "psum_from_pieces", hints=(_untiled_scatter_hint(rows, n),)
        )
        got = require_array(
            result,
            (n * rows, 3),
            what="psum_from_pieces (stacked over devices)",
            expected=f"each device returns {rows} rows, like its input block",
        ).reshape(n, rows, 3)
        total = x.reshape(n, rows, 3).sum(axis=0)
        if not all(close(got[d], total, rtol=1e-4, atol=1e-5) for d in range(n)):
            raise CheckFailed(_wrong_sum_hint(got, total, found, rows, n))
    used = {collective.name for collective in found}
    require(
        not used & set(_PSUM),
        "the values are right, but your function calls lax.psum (or pmean) itself; build the sum "
        "from lax.psum_scatter and lax.all_gather only.",
    )
    require_data_axis_only(found)
    require("reduce_scatter" in used, _without_scatter_hint(found))
    others = ", ".join(lax_names(found, leave_out=("reduce_scatter",))) or "nothing else"
    require(
        "all_gather" in used,
        f"the values are right, but the slices reach every device without lax.all_gather (your "
        f"function calls {others}): gather them with lax.all_gather(..., tiled=True).",
    )
