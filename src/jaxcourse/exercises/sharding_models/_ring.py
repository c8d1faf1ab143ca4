"""Checker of the second sharding chapter's exercise on a ring all-gather with ppermute."""

from __future__ import annotations

import numpy as np
from jax.sharding import Mesh

from ...checks import CheckFailed, close, exercise_checker, require, require_array, require_callable
from ...mesh import DATA
from ._common import lax_names, line_mesh, ppermute_steps, require_data_axis_only, run_per_device


def _open_ring_hint(found, n: int) -> str | None:
    """The hint for a ppermute whose permutation leaves some device without a sender."""
    for collective in found:
        if collective.name != "ppermute":
            continue
        perm = tuple(tuple(pair) for pair in collective.params.get("perm", ()))
        idle = sorted(set(range(n)) - {destination for _, destination in perm})
        if idle:
            return (
                f"your lax.ppermute with perm={list(perm)} sends nothing to device(s) {idle}, "
                f"which receive zeros instead of a block: a ring's permutation has all {n} pairs, "
                f"the last one, (n - 1, 0), closing the ring."
            )
    return None


def _far_sends(found, n: int) -> list[int]:
    """The distances other than one step round the ring (either way) that ppermutes send over."""
    return sorted(
        {
            (destination - source) % n
            for collective in found
            if collective.name == "ppermute"
            for source, destination in collective.params.get("perm", ())
        }
        - {1, n - 1}
    )


@exercise_checker(
    hints=(
        "n - 1 calls of lax.ppermute along a ring (device i sends to i + 1) bring every "
        "block to every device; keep what each step receives.",
        "After s steps a device holds the block of device (me - s) % n, not of device s: "
        "put each received block at its owner's position (lax.axis_index gives me) before "
        "concatenating the rows, and use no all_gather, psum or all_to_all.",
    )
)
def check_ring_all_gather(ring_all_gather, mesh: Mesh) -> None:
    """`ring_all_gather(block)` runs on one device's `(rows, columns)` block inside shard_map and
    returns `lax.all_gather(block, "data", tiled=True)`: every device's block, in device order,
    passed round a ring with `lax.ppermute` only (each send to a neighbour).

    It runs on all of `mesh`'s devices along "data", so that a ring counted the wrong way round
    shows (on two devices both ways are the same), for 1 and 3 rows per device."""
    require_callable(ring_all_gather, "ring_all_gather")
    line = line_mesh(mesh)
    n = line.shape[DATA]
    rng = np.random.default_rng(5)
    for rows in (1, 3):
        x = rng.standard_normal((n * rows, 2)).astype(np.float32)
        result, found, jaxpr = run_per_device(ring_all_gather, line, x, "ring_all_gather")
        others = lax_names(found, leave_out=("ppermute",))
        require(
            not others,
            f"your function calls {', '.join(others)}: pass the blocks round with lax.ppermute "
            "only, as the exercise asks.",
        )
        got = require_array(
            result,
            (n * n * rows, 2),
            what="ring_all_gather (stacked over devices)",
            expected=f"each device returns all {n} blocks, {n * rows} rows",
        ).reshape(n, n * rows, 2)
        if all(close(got[d], x, rtol=1e-6, atol=1e-6) for d in range(n)):
            continue
        open_ring = _open_ring_hint(found, n)
        if open_ring:
            raise CheckFailed(open_ring)
        blocks_of = (
            lambda device, got=got, rows=rows: {  # noqa: E731
                tuple(np.round(got[device][k * rows : (k + 1) * rows], 5).ravel()) for k in range(n)
            }
        )
        every_block = {tuple(np.round(x[k * rows : (k + 1) * rows], 5).ravel()) for k in range(n)}
        require(
            all(blocks_of(d) == every_block for d in range(n)),
            f"with {rows} row(s) per device, some device is missing a block (or holds one twice): "
            f"after {n - 1} ppermute steps around the ring, each device has seen all {n} blocks, "
            "its own included.",
        )
        raise CheckFailed(
            "every device has every block, but not in device order: the block received after s "
            "steps comes from device (i - s) % n (for a ring that sends i -> i + 1); put it at that "
            "position, e.g. with jnp.roll on the stacked blocks or an index from lax.axis_index."
        )
    require_data_axis_only(found)
    far = _far_sends(found, n)
    if far:
        raise CheckFailed(
            f"the values are right, but your lax.ppermute sends over a distance of {far[0]} "
            f"(device i to device i + {far[0]}): in a ring each device passes blocks to its "
            "neighbour only, n - 1 times, each step forwarding the block it received last."
        )
    steps = ppermute_steps(jaxpr)
    require(
        steps is None or steps >= n - 1,
        f"the values are right, but with {steps} ppermute(s); a ring of {n} devices needs "
        f"{n - 1} steps.",
    )
