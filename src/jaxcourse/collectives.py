"""The collectives, one idea each: their names in `lax` and in compiled programs, the bytes each
sends, and the all-gather overlapped with a matmul by a `ppermute` ring (collective matmul).

The functions taking `axis_name` run inside `jax.shard_map`, on one device's block.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from jax import lax

HLO_NAMES = {
    "psum": "all-reduce",
    "all_gather": "all-gather",
    "psum_scatter": "reduce-scatter",
    "ppermute": "collective-permute",
    "all_to_all": "all-to-all",
}
"""Each `jax.lax` collective and the HLO instruction it compiles to (`pmean` is a `psum` and a
division). These are the names that `hlo.collective_counts` counts."""

_SENT_PER_BLOCK = {
    "psum": lambda n: 2 * (n - 1) / n,  # a reduce-scatter, then an all-gather
    "all_gather": lambda n: n - 1,  # its own block to each of the others, by a ring
    "psum_scatter": lambda n: (n - 1) / n,  # all but the 1/n of the result it keeps
    "ppermute": lambda n: 1,  # the whole block, to one neighbour
    # One piece straight to each of the others (a switch, not a ring: on a one-way ring the
    # pieces are forwarded, k hops for the k-th, (n - 1) / 2 blocks per device).
    "all_to_all": lambda n: (n - 1) / n,
}


def bytes_sent_per_device(collective: str, block_bytes: int, n_devices: int) -> float:
    """The bytes one device sends in `collective` over `n_devices` devices, by the usual ring
    algorithms, when each device's input block holds `block_bytes` bytes; `all_to_all` by
    direct links instead (each piece sent once, to its destination, as through a switch).

    `psum` sends twice what `psum_scatter` sends: it is a `psum_scatter` followed by an
    `all_gather` of the scattered pieces. The estimate counts data, not latency: on real
    hardware a collective also pays a fixed cost per message.

    Raises:
        ValueError: an unknown collective (the names are those of `HLO_NAMES`), a negative
            size, or fewer than one device.
    """
    if collective not in _SENT_PER_BLOCK:
        raise ValueError(
            f"unknown collective {collective!r}; expected one of {sorted(_SENT_PER_BLOCK)}."
        )
    if isinstance(n_devices, bool) or not isinstance(n_devices, int) or n_devices < 1:
        raise ValueError(f"n_devices must be an int of at least 1, got {n_devices!r}.")
    if block_bytes < 0:
        raise ValueError(f"block_bytes must be at least 0, got {block_bytes}.")
    return block_bytes * _SENT_PER_BLOCK[collective](n_devices)


def ring(n_devices: int, shift: int = 1) -> list[tuple[int, int]]:
    """The `perm` of a `ppermute` that sends each device's block `shift` places along a ring of
    `n_devices`: `[(0, shift), (1, 1 + shift), ...]`, indices modulo `n_devices`."""
    return [(source, (source + shift) % n_devices) for source in range(n_devices)]


def gathered_matmul(x_block: jax.Array, w_block: jax.Array, axis_name: str) -> jax.Array:
    """`x @ w` with rows of both split over `axis_name`: gather all of `w`, then multiply.

    `x_block` is `(m / k, d)` (this device's rows of x), `w_block` `(d / k, h)` (its rows of
    w, as FSDP stores a weight); returns this device's `(m / k, h)` rows of `x @ w`. The
    matmul waits for the whole all-gather."""
    return x_block @ lax.all_gather(w_block, axis_name, tiled=True)


def collective_matmul(x_block: jax.Array, w_block: jax.Array, axis_name: str) -> jax.Array:
    """`gathered_matmul`, with the all-gather split into k - 1 `ppermute` steps along a ring.

    Device i starts with its own block of w and multiplies it by the matching columns of
    `x_block`. Then, k - 1 times, each device passes the block it holds to the next device on
    the ring and multiplies the block it receives. Each product needs only the block at hand,
    so a device with separate compute and communication units can multiply one block while
    the next one travels. The sum of the k partial products is `x_block @ w`.
    """
    n_devices = lax.axis_size(axis_name)
    me = lax.axis_index(axis_name)
    rows = w_block.shape[0]

    def columns_for(owner):  # the columns of x that multiply device `owner`'s block of w
        return lax.dynamic_slice_in_dim(x_block, owner * rows, rows, axis=1)

    product = columns_for(me) @ w_block
    for step in range(1, n_devices):
        w_block = lax.ppermute(w_block, axis_name, ring(n_devices))
        product = product + columns_for((me - step) % n_devices) @ w_block
    return product


def block_bytes(x: jax.Array) -> int:
    """The bytes of one device's block of `x` (its first addressable shard)."""
    shard = x.addressable_shards[0].data
    return int(shard.size * jnp.dtype(shard.dtype).itemsize)
