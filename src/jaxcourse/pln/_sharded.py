"""The PLN ELBO evaluated data-parallel: per-shard sums over samples, one `psum`, then the usual
completion step, so it equals `elbo` on one device.
"""

from __future__ import annotations

from functools import partial

import jax
from jax.sharding import Mesh, NamedSharding
from jax.sharding import PartitionSpec as P

from ..parallel import AXIS, check_even_split
from ._data import PLNData
from ._model import ModelParams, Variational, elbo_from_statistics, elbo_statistics


def sharded_elbo(
    data: PLNData,
    variational: Variational,
    params: ModelParams,
    mesh: Mesh,
    *,
    axis_name: str = AXIS,
) -> jax.Array:
    """The ELBO of `elbo(data, variational, params)`, with the samples split over `mesh`.

    Each device holds `n / k` rows of the data and of M, S (k = size of `axis_name` in
    `mesh`) and computes their `ElboStatistics`; `psum` adds them up, and every device
    completes the same ELBO from the totals and the replicated Sigma.

    Args:
        data: counts and offsets `(n, p)`, covariates `(n, d)`; n must be a multiple of k.
        variational: M and S, each `(n, p)`.
        params: B `(d, p)` and Sigma `(p, p)`, replicated on every device.
        mesh: the devices; `axis_name` must be one of its axes.
        axis_name: the mesh axis that the samples are split along.

    Returns:
        A scalar, replicated over the mesh.

    Raises:
        ValueError: n is not a multiple of the number of devices along `axis_name`.

    It is differentiable under `jax.jit(jax.grad(...))`, or inside `with jax.set_mesh(mesh):`.
    A bare eager `jax.grad` raises a `ValueError` ("Length of device assignment 1 is not equal
    to the size of the mesh", with a pointer to `jax.set_mesh`): its output cotangent is made
    outside the mesh.
    """
    check_even_split(data.n_samples, mesh, axis_name)
    rows, replicated = NamedSharding(mesh, P(axis_name)), NamedSharding(mesh, P())
    return _sharded_elbo(
        jax.device_put(data, rows),
        jax.device_put(variational, rows),
        jax.device_put(params, replicated),
        mesh=mesh,
        axis_name=axis_name,
    )


@partial(jax.jit, static_argnames=("mesh", "axis_name"))
def _sharded_elbo(data, variational, params, *, mesh, axis_name):
    @partial(
        jax.shard_map,
        mesh=mesh,
        in_specs=(P(axis_name), P(axis_name), P()),
        out_specs=P(),
    )
    def on_each_device(data_block, variational_block, params):
        block_sums = elbo_statistics(data_block, variational_block, params.coef)
        totals = jax.lax.psum(block_sums, axis_name)
        return elbo_from_statistics(totals, params.covariance)

    return on_each_device(data, variational, params)
