"""Helpers shared by the sharding chapter's checkers: the tolerance of sums split over devices,
the hints for plain code given sharded inputs, and what the answer's program does per device
(read from its jaxpr)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
from jax.sharding import Mesh, NamedSharding
from jax.sharding import PartitionSpec as P

from ... import parallel
from ...checks import close, require
from .._jaxpr import equations, primitive_names, traced_program


def close_enough(a, b) -> bool:
    """The sharding checkers' tolerance: float32 sums split over devices round differently."""
    return close(a, b, rtol=1e-4, atol=1e-5)


def require_unlike(value, candidates: list[tuple[object, str]]) -> None:
    """Fails with the hint of the first known wrong answer that `value` equals, so that the hint
    names what the answer did."""
    for candidate, hint in candidates:
        require(not close_enough(value, candidate), hint)


COLLECTIVES = ("psum", "pmax", "pmin", "all_gather", "ppermute", "all_to_all", "reduce_scatter")

SHARDED_INPUT_HINTS = (
    (
        ValueError,
        "out_specs which require replication",
        "your shard_map returns a value that differs from device to device where out_specs=P() "
        "asks for one value shared by all: something computed from the block alone was never "
        "combined over devices. Combine it with a collective (lax.psum of sums, lax.pmean of "
        "equal-sized means) before returning it",
    ),
    (
        Exception,
        "sharded",
        "the arrays are split over the mesh, and plain jax.numpy code on them needs an explicit "
        "output sharding: compute per device with jax.shard_map and combine with a collective",
    ),
)


def require_per_device_program(
    answer, args: tuple, hint: str, what: str, static_argnums=()
) -> None:
    """Fails with `hint` unless the answer's program maps over devices (shard_map, or pmap, which
    also shows as `shard_map` in the jaxpr) and combines the devices' results with a collective."""
    jaxpr = traced_program(
        answer, *args, what=what, hints=SHARDED_INPUT_HINTS, static_argnums=static_argnums
    )
    names = primitive_names(jaxpr)
    require("shard_map" in names and any(n.startswith(COLLECTIVES) for n in names), hint)


def require_rows_not_gathered(answer, mesh: Mesh, what: str) -> None:
    """Fails unless the answer's program keeps every device's rows on that device: an
    `all_gather` of an operand with one axis per row of the block moves the whole data set to
    every device, which data parallelism exists to avoid (statistics, one value per column, may
    be gathered)."""
    n_devices, rows_per_device, columns = mesh.shape[parallel.AXIS], 5, 3
    x = jax.device_put(
        jnp.ones((rows_per_device * n_devices, columns)), NamedSharding(mesh, P(parallel.AXIS))
    )
    jaxpr = traced_program(answer, x, what=what, hints=SHARDED_INPUT_HINTS)
    gathered_rows = [
        eqn
        for eqn in equations(jaxpr)
        if eqn.primitive.name.startswith("all_gather")
        and any(rows_per_device in getattr(v.aval, "shape", ()) for v in eqn.invars)
    ]
    require(
        not gathered_rows,
        "the values are right, but your program all_gathers the rows: every device then holds "
        "the whole data set, which is what data parallelism avoids. Keep each block where it is, "
        "reduce it to per-column statistics (means of x and of x**2) and combine those with "
        "lax.pmean over 'data'.",
    )
