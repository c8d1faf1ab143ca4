"""Two-axis meshes: the devices as a `("data", "model")` grid, checked before JAX sees them.

The second sharding chapter splits samples over `"data"` and a model's weights over `"model"`.
`grid_mesh` builds that mesh from a device count that it first checks, so a count the mesh
cannot use is refused with a message that says why, not deep inside `jax.make_mesh`.
"""

from __future__ import annotations

from collections.abc import Sequence

import jax
from jax.sharding import AxisType, Mesh

from .parallel import AXIS

DATA = AXIS
"""The mesh axis that the samples (and, in FSDP, the parameters) are split along: "data"."""

MODEL = "model"
"""The mesh axis that a layer's weights are split along in tensor parallelism: "model"."""


def _check_count(value, name: str) -> None:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be an int, got {type(value).__name__}.")
    if value < 1:
        raise ValueError(f"{name} must be at least 1, got {value}.")


def grid_shape(n_devices: int, *, model: int = 2) -> tuple[int, int]:
    """The `(data, model)` shape of a grid of `n_devices` devices with `model` along "model".

    Raises:
        TypeError: a count is not an int.
        ValueError: `model` does not divide `n_devices`.
    """
    _check_count(n_devices, "n_devices")
    _check_count(model, "model")
    if n_devices % model:
        raise ValueError(
            f"{n_devices} devices do not form a grid with {model} along '{MODEL}': "
            f"use a device count that is a multiple of {model}."
        )
    return n_devices // model, model


def grid_mesh(
    data: int,
    model: int,
    *,
    devices: Sequence[jax.Device] | None = None,
    axis_types: AxisType = AxisType.Explicit,
) -> Mesh:
    """A `(data, model)` mesh with axes `("data", "model")` over the first `data * model` devices.

    Args:
        data, model: the sizes of the two axes, each at least 1.
        devices: the devices to use (all of `jax.devices()` by default); the first
            `data * model` of them, in order, fill the grid row by row.
        axis_types: `AxisType.Explicit` (the `jax.make_mesh` default: shardings are part of
            the arrays' types) or `AxisType.Auto` for both axes.

    Raises:
        TypeError: a size is not an int.
        ValueError: there are fewer than `data * model` devices.
    """
    _check_count(data, "data")
    _check_count(model, "model")
    devices = list(jax.devices() if devices is None else devices)
    if data * model > len(devices):
        raise ValueError(
            f"a ({data}, {model}) mesh needs {data * model} devices, but only {len(devices)} are "
            "available; on a CPU, ask for more with jax.config.update('jax_num_cpu_devices', N) "
            "before the first JAX operation."
        )
    return jax.make_mesh(
        (data, model),
        (DATA, MODEL),
        axis_types=(axis_types, axis_types),
        devices=devices[: data * model],
    )
