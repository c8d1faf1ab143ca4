"""Collectives, drawn from a real run: which device holds which block before and after one
collective, read back from one-hot blocks that the collective moved (or added up)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P
from matplotlib.patches import Rectangle

from ._drawing import SHARED_COLOR, cell_color, new_axes


@dataclass(frozen=True)
class CollectiveMoves:
    """Each device's slots before and after a collective; a slot is the set of (device, block)
    pairs whose values it holds (several: their sum)."""

    before: tuple[tuple[frozenset, ...], ...]
    after: tuple[tuple[frozenset, ...], ...]


def _slots(rows: np.ndarray, blocks: int) -> tuple[frozenset, ...]:
    return tuple(frozenset(divmod(int(k), blocks) for k in np.flatnonzero(row)) for row in rows)


def collective_moves(
    body: Callable, mesh: jax.sharding.Mesh, axis_name: str, *, blocks: int
) -> CollectiveMoves:
    """Runs `body` (one collective over `axis_name`, acting on axis 0 of a device's block) in a
    `shard_map` over `mesh`, on `blocks` one-hot rows per device, and reads back where each
    row went.

    Device d's row j is the unit vector of index d * blocks + j. A collective that moves rows
    keeps them one-hot; one that adds them leaves several ones in a row.
    """
    n = mesh.shape[axis_name]
    marked = jnp.eye(n * blocks, dtype=jnp.float32)
    spec = P(axis_name)
    run = jax.shard_map(body, mesh=mesh, in_specs=spec, out_specs=spec, check_vma=False)
    result = np.asarray(run(jax.device_put(marked, NamedSharding(mesh, spec))))
    per_device = result.shape[0] // n
    return CollectiveMoves(
        before=tuple(
            _slots(np.eye(n * blocks)[d * blocks : (d + 1) * blocks], blocks) for d in range(n)
        ),
        after=tuple(
            _slots(result[d * per_device : (d + 1) * per_device], blocks) for d in range(n)
        ),
    )


def _label(slot: frozenset) -> str:
    if len(slot) == 1:
        ((device, block),) = slot
        return f"{device}.{block}"
    blocks = {block for _, block in slot}
    return f"Σ.{blocks.pop()}" if len(blocks) == 1 else "Σ"


def plot_collective(moves: CollectiveMoves, *, ax=None, title: str = ""):
    """Draws `moves`: one row per device, its slots before (left) and after (right). A slot is
    labelled `d.j` (block j of device d) in device d's colour, or grey `Σ.j` for a sum over
    devices of their block j. Returns the axes."""
    ax = new_axes(ax, (4, 2.5))
    n = len(moves.before)
    width_before = max(len(row) for row in moves.before)
    width_after = max(len(row) for row in moves.after)
    gap = 1.5
    for d in range(n):
        y = n - d - 1
        ax.text(-0.2, y + 0.5, f"device {d}", ha="right", va="center", fontsize=8)
        for offset, row in ((0, moves.before[d]), (width_before + gap, moves.after[d])):
            for j, slot in enumerate(row):
                owner = next(iter(slot))[0] if len(slot) == 1 else None
                color = SHARED_COLOR if owner is None else cell_color(owner)
                ax.add_patch(
                    Rectangle(
                        (offset + j, y), 1, 1, facecolor=color, edgecolor="white", linewidth=1.5
                    )
                )
                ax.text(
                    offset + j + 0.5, y + 0.5, _label(slot), ha="center", va="center", fontsize=7
                )
    ax.annotate(
        "",
        xy=(width_before + gap - 0.2, n / 2),
        xytext=(width_before + 0.2, n / 2),
        arrowprops={"arrowstyle": "->", "color": "#333333"},
    )
    ax.text(width_before / 2, n + 0.15, "before", ha="center", va="bottom", fontsize=8)
    ax.text(
        width_before + gap + width_after / 2,
        n + 0.15,
        "after",
        ha="center",
        va="bottom",
        fontsize=8,
    )
    ax.set_xlim(-1.6, width_before + gap + width_after + 0.1)
    ax.set_ylim(-0.1, n + 0.7)
    ax.set_title(title, fontsize=9, family="monospace")
    return ax
