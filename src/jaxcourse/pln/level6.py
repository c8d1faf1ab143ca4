"""Level 6: the level-5 fit spread over devices, and many fits at once with `vmap`.

`fit` splits the samples over a mesh: each device holds n/k rows of Y, O, X, M and S, the
sums over samples (X'M, the Poisson sum, the scatter matrix) are added up with `psum`, and
every device completes the same ELBO and Sigma from the totals. The whole convergence loop
runs inside one `shard_map` under one `jit`, so the host never queues collective-bearing
steps one by one (which deadlocked small CPU machines with jax 0.10; see the sharding chapter).

`fit_many` runs several independent fits in one compiled program: restarts from perturbed
starting points, or several data sets of the same shape.
"""

from __future__ import annotations

from functools import partial

import jax
import jax.numpy as jnp
import optax
from jax.sharding import Mesh, NamedSharding
from jax.sharding import PartitionSpec as P

from ..parallel import AXIS, check_even_split
from ..parallel import sample_mesh as sample_mesh
from ._algorithm import FitResult, check_fit_arguments, init_variational
from ._data import PLNData
from ._model import Variational
from .convergence import DEFAULT_TOL, check_tol, run_loop
from .level5 import BLAS_THREADS, RPROP, check_level_options, run_with_blas_threads
from .profiled import prepare, problem_layout

@partial(jax.jit, static_argnames=("n_iter", "optimizer", "monitor_every", "mesh"))
def _fit_sharded(problem, variational, tol, *, n_iter, optimizer, monitor_every, mesh) -> FitResult:
    rows = P(AXIS)

    @partial(
        jax.shard_map,
        mesh=mesh,
        in_specs=(problem_layout(rows, P()), rows, P()),
        out_specs=FitResult(P(), rows, P(), P()),
    )
    def on_each_device(problem_block, variational_block, tol):
        return run_loop(
            problem_block,
            variational_block,
            tol,
            n_iter=n_iter,
            optimizer=optimizer,
            reduce=lambda tree: jax.lax.psum(tree, AXIS),
            monitor_every=monitor_every,
        )

    return on_each_device(problem, variational, tol)


def fit(
    data: PLNData,
    n_iter: int,
    *,
    optimizer: optax.GradientTransformation = RPROP,
    tol: float = DEFAULT_TOL,
    monitor_every: int = 1,
    blas_threads: int | None = BLAS_THREADS,
    mesh: Mesh | None = None,
) -> FitResult:
    """`level5.fit`, with the samples split over the devices of `mesh`.

    Where level 6 differs from level 5: the `mesh` option, and M and S come back split over
    its devices like the data.

    Args:
        data: the data; its number of samples must be a multiple of the mesh size.
        n_iter, optimizer, tol, monitor_every, blas_threads: as in `level5.fit`.
        mesh: a mesh with an axis named `parallel.AXIS`; by default all devices (`sample_mesh()`).

    Returns:
        The `FitResult` of `level5.fit` (up to the rounding of sums taken in another order).

    Raises:
        ValueError: the samples do not split evenly over the devices.
    """
    check_fit_arguments(data, n_iter)
    check_level_options(tol, monitor_every, blas_threads)
    mesh = sample_mesh() if mesh is None else mesh
    check_even_split(data.n_samples, mesh, AXIS)
    rows, replicated = NamedSharding(mesh, P(AXIS)), NamedSharding(mesh, P())
    problem = jax.device_put(prepare(data), problem_layout(rows, replicated))
    variational = jax.device_put(init_variational(data), rows)
    tol = jax.device_put(jnp.asarray(tol, data.counts.dtype), replicated)
    return run_with_blas_threads(
        blas_threads, _fit_sharded, problem, variational, tol,
        n_iter=n_iter, optimizer=optimizer, monitor_every=int(monitor_every), mesh=mesh,
    )


def random_starts(data: PLNData, keys: jax.Array, *, scale: float = 0.5) -> Variational:
    """`len(keys)` starting points: `init_variational(data)` with M moved by N(0, scale^2) noise.

    Returns a `Variational` whose arrays have a leading axis of length `len(keys)`.
    """
    start = init_variational(data)

    def perturb(key):
        noise = scale * jax.random.normal(key, start.latent_mean.shape, start.latent_mean.dtype)
        return Variational(start.latent_mean + noise, start.latent_sqrt_var)

    return jax.vmap(perturb)(keys)


@partial(jax.jit, static_argnames=("n_iter", "optimizer", "batched_problem"))
def _fit_many_compiled(problem, starts, tol, *, n_iter, optimizer, batched_problem):
    def one_fit(problem, start):
        return run_loop(problem, start, tol, n_iter=n_iter, optimizer=optimizer)

    return jax.vmap(one_fit, in_axes=(0 if batched_problem else None, 0))(problem, starts)


def fit_many(
    data: PLNData | list[PLNData],
    n_iter: int,
    *,
    keys: jax.Array | None = None,
    scale: float = 0.5,
    optimizer: optax.GradientTransformation = RPROP,
    tol: float = DEFAULT_TOL,
) -> FitResult:
    """Several independent level-5 fits in one compiled, `vmap`ped program.

    Either restarts: one data set and `keys`, one fit from each of `random_starts(data,
    keys, scale=scale)`. Or several data sets: a list of `PLNData` of one shape (no
    `keys`), each fitted from `init_variational`.

    The batched `while_loop` runs until every fit has stopped; a fit that stopped earlier
    keeps its result (JAX's batching rule freezes it) and reports its own `n_steps`.

    Returns:
        A `FitResult` whose every array has a leading axis, one entry per fit.
    """
    check_tol(tol)
    if isinstance(data, PLNData):
        if keys is None:
            raise TypeError("fit_many on one data set needs keys= (one restart per key).")
        check_fit_arguments(data, n_iter)
        problem = prepare(data)
        starts = random_starts(data, keys, scale=scale)
        batched_problem = False
        dtype = data.counts.dtype
    else:
        datasets = list(data)
        if keys is not None:
            raise TypeError("pass either several data sets or keys for restarts, not both.")
        if not datasets:
            raise ValueError("fit_many needs at least one data set.")
        for dataset in datasets:
            check_fit_arguments(dataset, n_iter)
        shapes = {jax.tree.map(jnp.shape, d) for d in datasets}
        if len(shapes) != 1:
            raise ValueError(f"all data sets must have the same shapes, got {sorted(shapes)}.")
        problem = jax.tree.map(lambda *leaves: jnp.stack(leaves), *map(prepare, datasets))
        starts = jax.tree.map(lambda *leaves: jnp.stack(leaves), *map(init_variational, datasets))
        batched_problem = True
        dtype = datasets[0].counts.dtype
    return _fit_many_compiled(
        problem,
        starts,
        jnp.asarray(tol, dtype),
        n_iter=n_iter,
        optimizer=optimizer,
        batched_problem=batched_problem,
    )

