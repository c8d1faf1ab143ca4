"""One computation on several devices: choosing the devices, and the sharding chapter's regression step
written four ways (one device, `pmap`, `jit` on sharded arrays, `shard_map`), which must agree.
"""

from __future__ import annotations

from functools import partial
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax
from jax.sharding import Mesh, NamedSharding
from jax.sharding import PartitionSpec as P

AXIS = "data"
"""The name of the device axis that the samples are split along, in `pmap` and in meshes."""

LEARNING_RATE = 0.1
"""Step size of the plain gradient-descent steps below."""


def course_devices(count: int = 4) -> list[jax.Device]:
    """The devices the sharding chapter spreads its work over.

    Several GPUs or TPUs: the first `count` of them (or the largest divisor of `count` that
    there are, at least 2). Otherwise (a CPU, or a single GPU as on Colab): `count` simulated
    CPU devices, which needs `jax.config.update("jax_num_cpu_devices", count)` before the
    first JAX operation; arrays then default to the first CPU device so that every result
    on the page comes from the same kind of device.

    Raises:
        RuntimeError: fewer than `count` CPU devices exist and no accelerators can stand in.
    """
    accelerators = [device for device in jax.devices() if device.platform != "cpu"]
    usable = [k for k in range(2, count + 1) if count % k == 0 and k <= len(accelerators)]
    if usable:
        return accelerators[: max(usable)]
    cpus = jax.devices("cpu")
    if len(cpus) < count:
        raise RuntimeError(
            f"only {len(cpus)} CPU device(s): call jax.config.update('jax_num_cpu_devices', {count}) "
            "right after `import jax`, before any JAX operation, then restart the kernel."
        )
    jax.config.update("jax_default_device", cpus[0])
    return cpus[:count]


def sample_mesh(n_devices: int | None = None) -> Mesh:
    """A one-axis mesh, axis `AXIS`, over the first `n_devices` devices (all of them by default)."""
    devices = jax.devices()
    n_devices = len(devices) if n_devices is None else n_devices
    if isinstance(n_devices, bool) or not isinstance(n_devices, int):
        raise TypeError(f"n_devices must be an int or None, got {type(n_devices).__name__}.")
    if not 1 <= n_devices <= len(devices):
        raise ValueError(f"n_devices must be between 1 and {len(devices)}, got {n_devices}.")
    return jax.make_mesh((n_devices,), (AXIS,), devices=devices[:n_devices])


def check_even_split(n_samples: int, mesh: Mesh, axis_name: str = AXIS) -> None:
    """Raises `ValueError` unless `n_samples` rows split evenly over the mesh axis `axis_name`."""
    n_shards = mesh.shape[axis_name]
    if n_samples % n_shards:
        raise ValueError(
            f"{n_samples} samples do not split evenly over {n_shards} devices; "
            "use a device count that divides the number of samples."
        )


def split_for_devices(array: jax.Array, n_devices: int) -> jax.Array:
    """Reshapes `(n, ...)` to `(n_devices, n // n_devices, ...)` for `pmap`.

    Device k gets rows `k * n // n_devices` to `(k + 1) * n // n_devices - 1`, the same
    contiguous blocks as a `NamedSharding` with `P("data")`.
    """
    if array.shape[0] % n_devices:
        raise ValueError(f"{array.shape[0]} rows do not split evenly over {n_devices} devices.")
    return array.reshape(n_devices, array.shape[0] // n_devices, *array.shape[1:])


class LinearParams(NamedTuple):
    """Parameters of the linear model y = x . weights + bias.

    Attributes:
        weights: `(n_features,)` slopes.
        bias: scalar intercept.
    """

    weights: jax.Array
    bias: jax.Array


def make_regression(
    n_samples: int,
    *,
    key: jax.Array,
    weights=(1.0, -2.0, 3.0),
    bias: float = 0.5,
    noise: float = 0.1,
) -> tuple[jax.Array, jax.Array]:
    """Draws `x` `(n_samples, n_features)` standard normal and `y = x @ weights + bias + noise`."""
    key_x, key_noise = jax.random.split(key)
    weights = jnp.asarray(weights, dtype=jnp.float32)
    x = jax.random.normal(key_x, (n_samples, weights.shape[0]))
    y = x @ weights + bias + noise * jax.random.normal(key_noise, (n_samples,))
    return x, y


def mse_loss(params: LinearParams, x: jax.Array, y: jax.Array) -> jax.Array:
    """Mean squared error over a batch: `(n, d)` inputs, `(n,)` targets -> scalar."""
    return jnp.mean(jnp.square(x @ params.weights + params.bias - y))


def sgd_update(params: LinearParams, grads: LinearParams) -> LinearParams:
    """One gradient-descent move with step `LEARNING_RATE`."""
    return jax.tree.map(lambda p, g: p - LEARNING_RATE * g, params, grads)


def sgd_step(params: LinearParams, x: jax.Array, y: jax.Array) -> tuple[LinearParams, jax.Array]:
    """The single-device reference step: returns the new parameters and the loss before the step."""
    loss, grads = jax.value_and_grad(mse_loss)(params, x, y)
    return sgd_update(params, grads), loss


def make_pmap_step(devices: list[jax.Device]):
    """The step with `pmap`: call it with `x`, `y` reshaped by `split_for_devices`.

    The parameters are replicated (`in_axes=None`); each device takes the gradient of the
    mean loss of its block, then `pmean` averages losses and gradients over the devices.
    With equal blocks the mean of the block means is the mean over all samples.
    """

    @partial(jax.pmap, axis_name=AXIS, in_axes=(None, 0, 0), out_axes=None, devices=devices)
    def step(params, x_block, y_block):
        loss, grads = jax.value_and_grad(mse_loss)(params, x_block, y_block)
        loss, grads = lax.pmean((loss, grads), AXIS)
        # out_axes=None returns device 0's copy: right only because pmean made them equal.
        return sgd_update(params, grads), loss

    return step


def make_jit_step(mesh: Mesh):
    """The step with `jit` and explicit shardings: rows of `x`, `y` split over `mesh`, parameters
    and loss replicated. The body is `sgd_step` unchanged; the compiler inserts the all-reduce.

    `jit` moves uncommitted inputs (arrays no `device_put` placed) to these shardings; a
    committed input with another sharding raises a `ValueError` instead of moving.
    """
    rows, replicated = NamedSharding(mesh, P(AXIS)), NamedSharding(mesh, P())
    return jax.jit(
        sgd_step, in_shardings=(replicated, rows, rows), out_shardings=(replicated, replicated)
    )


def make_shard_map_step(mesh: Mesh):
    """The step with `shard_map`: call it with `x`, `y` already sharded by rows over `mesh`.

    It differentiates the *global* loss (the `pmean` of the block losses). Inside
    `shard_map`, JAX already sums the gradients of replicated parameters over the devices,
    so adding a `psum`/`pmean` of the gradients, as in `make_pmap_step`, would be wrong.
    """

    @jax.jit
    @partial(jax.shard_map, mesh=mesh, in_specs=(P(), P(AXIS), P(AXIS)), out_specs=P())
    def step(params, x_block, y_block):
        def global_loss(params):
            return lax.pmean(mse_loss(params, x_block, y_block), AXIS)

        loss, grads = jax.value_and_grad(global_loss)(params)
        return sgd_update(params, grads), loss

    return step


def train(step, params, x, y, n_steps: int) -> tuple[LinearParams, list[float]]:
    """Runs `n_steps` of `step(params, x, y) -> (params, loss)`; returns the final parameters and
    the losses.

    `float(loss)` waits for each step to finish before the next is queued. Without that wait,
    many steps with collectives can pile up; with jax 0.10, on a machine with fewer cores than
    (simulated) devices, they deadlocked and XLA aborted the process after about a minute. The
    pinned release runs them through (tests/test_sharding_equivalence.py), but the wait also
    keeps the queue, and the memory it holds, short.
    """
    losses = []
    for _ in range(n_steps):
        params, loss = step(params, x, y)
        losses.append(float(loss))
    return params, losses


def max_abs_difference(tree_a, tree_b) -> float:
    """The largest absolute elementwise difference between two pytrees of the same structure.

    The leaves are compared as NumPy arrays on the host, so they may live on different devices.
    """
    gaps = jax.tree.map(lambda a, b: np.max(np.abs(np.asarray(a) - np.asarray(b))), tree_a, tree_b)
    return float(max(jax.tree.leaves(gaps)))
