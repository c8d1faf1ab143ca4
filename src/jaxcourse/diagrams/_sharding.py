"""Sharding, drawn from `devices_indices_map`: which device holds which block of an array, and the
mesh of devices."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import jax
import numpy as np
from matplotlib.patches import Rectangle

from ._drawing import MONO, SHARED_COLOR, cell_color, new_axes, shape_text


@dataclass(frozen=True)
class ShardBlock:
    """One block of an array and the devices that hold a copy of it (several: replicated)."""

    rows: tuple[int, int]
    cols: tuple[int, int]
    device_ids: tuple[int, ...]


def _sharding_and_shape(x, shape):
    if isinstance(x, jax.sharding.Sharding):
        if shape is None:
            raise ValueError("shard_blocks needs `shape` when given a sharding instead of an array")
        return x, tuple(shape)
    if isinstance(x, jax.Array):
        return x.sharding, x.shape if shape is None else tuple(shape)
    raise TypeError(
        f"shard_blocks takes a jax.Array or a jax.sharding.Sharding, got {type(x).__name__}"
    )


def shard_blocks(x, *, shape: Sequence[int] | None = None) -> list[ShardBlock]:
    """The blocks of a 1- or 2-D array (or of `shape` under a sharding), read from
    `sharding.devices_indices_map(shape)`, each with the ids of the devices holding it.

    A 1-D array is one row. Blocks come in row-major order of their corners.

    Raises:
        TypeError: `x` is neither a `jax.Array` nor a `Sharding`.
        ValueError: the shape has 0 or more than 2 dimensions, or a sharding came without `shape`.
    """
    sharding, shape = _sharding_and_shape(x, shape)
    if len(shape) not in (1, 2):
        raise ValueError(f"shard_blocks draws 1- or 2-D arrays, got shape {shape}")
    grid_shape = (1, *shape) if len(shape) == 1 else shape
    holders: dict[tuple, list[int]] = {}
    for device, index in sharding.devices_indices_map(tuple(shape)).items():
        index = (slice(None), *index) if len(shape) == 1 else index
        bounds = tuple(piece.indices(size)[:2] for piece, size in zip(index, grid_shape))
        holders.setdefault(bounds, []).append(device.id)
    return [
        ShardBlock(rows, cols, tuple(sorted(ids))) for (rows, cols), ids in sorted(holders.items())
    ]


def _mesh_text(mesh) -> str:
    return "mesh (" + ", ".join(f"{name}: {size}" for name, size in mesh.shape.items()) + ")"


def _describe_sharding(sharding, shape: tuple[int, ...]) -> str:
    if isinstance(sharding, jax.sharding.NamedSharding):
        return f"{shape_text(shape)}, {sharding.spec}\non {_mesh_text(sharding.mesh)}"
    return f"{shape_text(shape)}, {type(sharding).__name__}"


def plot_sharding(x, *, shape: Sequence[int] | None = None, ax=None, title: str | None = None):
    """Draws the blocks of `x` (a `jax.Array`, or a sharding and a `shape`) as rectangles in the
    colour of the device holding them, labelled with its id; a block held by several devices is
    grey and lists them all. Returns the axes."""
    sharding, shape = _sharding_and_shape(x, shape)
    blocks = shard_blocks(sharding, shape=shape)
    ax = new_axes(ax, (4, 3))
    n_rows, n_cols = (1, *shape) if len(shape) == 1 else shape
    for block in blocks:
        (r0, r1), (c0, c1) = block.rows, block.cols
        single = len(block.device_ids) == 1
        color = cell_color(block.device_ids[0]) if single else SHARED_COLOR
        ax.add_patch(
            Rectangle(
                (c0, n_rows - r1), c1 - c0, r1 - r0, facecolor=color, edgecolor="white", linewidth=2
            )
        )
        ids = ", ".join(map(str, block.device_ids))
        label = f"device {ids}" if single else f"copies on\ndevices {ids}"
        if len(shape) == 2:
            label += f"\nrows {r0}:{r1}\ncols {c0}:{c1}"
        else:
            label += f"\n[{c0}:{c1}]"
        ax.text(
            (c0 + c1) / 2, n_rows - (r0 + r1) / 2, label, ha="center", va="center", fontsize=7.5
        )
        if not single:
            _device_chips(
                ax, (c0, n_rows - r0), block.device_ids, size=(0.05 * n_cols, 0.06 * n_rows)
            )
    ax.set_xlim(0, n_cols)
    ax.set_ylim(0, n_rows)
    ax.set_title(title or _describe_sharding(sharding, tuple(shape)), fontsize=8.5)
    return ax


def _device_chips(ax, corner, device_ids: Sequence[int], *, size: tuple[float, float]):
    """Small squares in the devices' colours along the top-left edge of a replicated block;
    `size` is a chip's width and height in data units."""
    width, height = size
    for k, device_id in enumerate(device_ids):
        chip_corner = (corner[0] + 0.3 * width + 1.2 * width * k, corner[1] - 1.3 * height)
        ax.add_patch(
            Rectangle(
                chip_corner,
                width,
                height,
                facecolor=cell_color(device_id),
                edgecolor="white",
                linewidth=0.5,
            )
        )


def plot_mesh(mesh: jax.sharding.Mesh, *, ax=None):
    """Draws a 1- or 2-D mesh: its devices as a grid, coloured as in `plot_sharding`, with the
    axis names along the sides. Returns the axes."""
    if not isinstance(mesh, jax.sharding.Mesh):
        raise TypeError(f"plot_mesh takes a jax.sharding.Mesh, got {type(mesh).__name__}")
    devices = np.asarray(mesh.devices)
    if devices.ndim not in (1, 2):
        raise ValueError(f"plot_mesh draws 1- or 2-D meshes, got {devices.ndim} axes")
    ax = new_axes(ax, (3, 3))
    grid = devices.reshape(-1, 1) if devices.ndim == 1 else devices
    n_rows, n_cols = grid.shape
    for (i, j), device in np.ndenumerate(grid):
        ax.add_patch(
            Rectangle(
                (j, n_rows - i - 1),
                1,
                1,
                facecolor=cell_color(device.id),
                edgecolor="white",
                linewidth=2,
            )
        )
        ax.text(
            j + 0.5, n_rows - i - 0.5, f"device\n{device.id}", ha="center", va="center", fontsize=8
        )
    names = mesh.axis_names
    ax.text(
        -0.15,
        n_rows / 2,
        f"{names[0]} →",
        rotation=270,
        ha="right",
        va="center",
        fontsize=9,
        family=MONO,
    )
    if len(names) == 2:
        ax.text(
            n_cols / 2,
            n_rows + 0.1,
            f"{names[1]} →",
            ha="center",
            va="bottom",
            fontsize=9,
            family=MONO,
        )
    ax.set_xlim(-0.6, n_cols + 0.1)
    ax.set_ylim(-0.1, n_rows + 0.6)
    ax.set_aspect("equal")
    ax.set_title(_mesh_text(mesh), fontsize=8.5)
    return ax
