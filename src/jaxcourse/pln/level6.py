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

import warnings
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np
import optax
from jax.sharding import Mesh, NamedSharding
from jax.sharding import PartitionSpec as P

from ..config import limit_blas_threads
from ..parallel import AXIS, check_even_split
from ..parallel import sample_mesh as sample_mesh
from ._algorithm import (
    DIVERGED,
    FitDivergedWarning,
    FitResult,
    check_fit_arguments,
    device_array,
    first_bad_step,
    numpy_start,
)
from ._data import PLNData
from ._model import Variational
from .convergence import DEFAULT_MONITOR_EVERY, DEFAULT_TOL, check_tol, run_loop
from .level5 import (
    BLAS_THREADS,
    RPROP,
    check_flag,
    check_level_options,
    prepare_checked,
    run_fit,
)
from .profiled import prepare, problem_layout
from .separation import (
    SeparationWarning,
    coefficient_mask,
    find_separation,
    no_separation,
    push_to_limit,
    separation_message,
)


@partial(jax.jit, static_argnames=("n_iter", "optimizer", "monitor_every", "mesh"))
def _fit_sharded(
    problem, variational, tol, step_limit, *, n_iter, optimizer, monitor_every, mesh
) -> FitResult:
    rows = P(AXIS)

    @partial(
        jax.shard_map,
        mesh=mesh,
        in_specs=(problem_layout(rows, P()), rows, P(), P()),
        out_specs=FitResult(P(), rows, P(), P(), P()),  # type: ignore[arg-type]  # a tree of PartitionSpecs shaped like the result
    )
    def on_each_device(problem_block, variational_block, tol, step_limit):
        return run_loop(
            problem_block,
            variational_block,
            tol,
            n_iter=n_iter,
            optimizer=optimizer,
            reduce=lambda tree: jax.lax.psum(tree, AXIS),
            monitor_every=monitor_every,
            step_limit=step_limit,
        )

    return on_each_device(problem, variational, tol, step_limit)


def fit(
    data: PLNData,
    n_iter: int,
    *,
    optimizer: optax.GradientTransformation = RPROP,
    tol: float = DEFAULT_TOL,
    monitor_every: int = DEFAULT_MONITOR_EVERY,
    blas_threads: int | None = BLAS_THREADS,
    mesh: Mesh | None = None,
    separation_limit: bool = True,
) -> FitResult:
    """`level5.fit`, with the samples split over the devices of `mesh`.

    Where level 6 differs from level 5: the `mesh` option, and M and S come back split over
    its devices like the data.

    Args:
        data: the data; its number of samples must be a multiple of the mesh size.
        n_iter, optimizer, tol, monitor_every, blas_threads, separation_limit: as in `level5.fit`.
        mesh: a mesh with an axis named `parallel.AXIS`; by default all devices (`sample_mesh()`).

    Returns:
        The `FitResult` of `level5.fit` (up to the rounding of sums taken in another order).

    Raises:
        ValueError: the samples do not split evenly over the devices.
    """
    check_fit_arguments(data, n_iter, warn_on_separation=False)
    check_level_options(tol, monitor_every, blas_threads)
    check_flag("separation_limit", separation_limit)
    mesh = sample_mesh() if mesh is None else mesh
    check_even_split(data.n_samples, mesh, AXIS)
    rows, replicated = NamedSharding(mesh, P(AXIS)), NamedSharding(mesh, P())
    with limit_blas_threads(blas_threads):  # from the preparation on (`level5.BLAS_THREADS`)
        problem, held, found = prepare_checked(data, separation_limit)
        problem = jax.device_put(problem, problem_layout(rows, replicated))
        variational = jax.device_put(numpy_start(data), rows)
        traced_tol = device_array(tol, data.counts.dtype, replicated)

        def run(step_limit, every):
            return _fit_sharded(
                problem,
                variational,
                traced_tol,
                device_array(step_limit, np.int32, replicated),
                n_iter=n_iter,
                optimizer=optimizer,
                monitor_every=every,
                mesh=mesh,
            )

        return run_fit(run, n_iter, int(monitor_every), data, held, found)


def random_starts(data: PLNData, keys: jax.Array, *, scale: float = 0.5) -> Variational:
    """`len(keys)` starting points: `init_variational(data)` with M moved by N(0, scale^2) noise.

    Returns a `Variational` whose arrays have a leading axis of length `len(keys)`.
    """
    start = numpy_start(data)

    def perturb(key):
        noise = scale * jax.random.normal(key, start.latent_mean.shape, start.latent_mean.dtype)
        return Variational(start.latent_mean + noise, start.latent_sqrt_var)

    return jax.vmap(perturb)(keys)


@partial(jax.jit, static_argnames=("n_iter", "optimizer", "batched_problem"))
def _fit_many_compiled(problem, starts, tol, step_limits, *, n_iter, optimizer, batched_problem):
    def one_fit(problem, start, step_limit):
        return run_loop(
            problem, start, tol, n_iter=n_iter, optimizer=optimizer, step_limit=step_limit
        )

    return jax.vmap(one_fit, in_axes=(0 if batched_problem else None, 0, 0))(
        problem, starts, step_limits
    )


def fit_at(results: FitResult, index: int) -> FitResult:
    """The `index`-th fit of `fit_many`'s results, as one level's `FitResult` (gathered onto the
    default device, so that results split over a mesh's axes work too)."""
    return jax.tree.map(lambda leaf: jnp.asarray(np.asarray(leaf)[index]), results)


def gathered(results: FitResult) -> FitResult:
    """`results` with every array gathered onto the default device."""
    return jax.tree.map(lambda leaf: jnp.asarray(np.asarray(leaf)), results)


def report_divergences(results: FitResult, replay) -> FitResult:
    """`_algorithm.report_divergence` for a batch of fits: one warning for all the fits that
    diverged, and each of them replaced by its last finite iterate (`replay(step_limits)`
    reruns the batch, every fit stopping after its own number of steps)."""
    statuses = np.asarray(results.status)
    if not (statuses == DIVERGED).any():
        return results
    results = gathered(results)
    n_fits, n_iter = results.elbo_trace.shape
    last = np.full(n_fits, n_iter, dtype=np.int32)
    diverged = np.flatnonzero(statuses == DIVERGED)
    for index in diverged:
        bad_step = first_bad_step(fit_at(results, int(index)))
        if bad_step == 0:
            raise FloatingPointError(f"fit {index}: the ELBO is not finite at its starting point.")
        last[index] = bad_step - 1
    kept = gathered(replay(jnp.asarray(last)))
    steps = jnp.arange(n_iter)[None, :]
    last_elbo = jnp.take_along_axis(
        results.elbo_trace, jnp.minimum(jnp.asarray(last), n_iter - 1)[:, None], axis=1
    )
    is_diverged = jnp.asarray(statuses == DIVERGED)[:, None]
    trace = jnp.where(
        is_diverged & (steps > jnp.asarray(last)[:, None]), last_elbo, results.elbo_trace
    )
    warnings.warn(
        f"{len(diverged)} of {n_fits} fits diverged (fits {diverged.tolist()[:10]}, after steps "
        f"{[int(last[i]) + 1 for i in diverged[:10]]}): they return their last iterate with a finite ELBO and "
        "status 'diverged'.",
        FitDivergedWarning,
        stacklevel=3,
    )
    status = jnp.where(jnp.asarray(statuses == DIVERGED), DIVERGED, kept.status).astype(jnp.int32)
    return FitResult(trace, kept.variational, kept.params, kept.n_steps, status)


def fit_many(
    data: PLNData | list[PLNData],
    n_iter: int,
    *,
    keys: jax.Array | None = None,
    scale: float = 0.5,
    optimizer: optax.GradientTransformation = RPROP,
    tol: float = DEFAULT_TOL,
    separation_limit: bool = True,
) -> FitResult:
    """Several independent level-5 fits in one compiled, `vmap`ped program.

    Either restarts: one data set and `keys`, one fit from each of `random_starts(data,
    keys, scale=scale)`. Or several data sets: a list of `PLNData` of one shape (no
    `keys`), each fitted from `init_variational`.

    The batched `while_loop` runs until every fit has stopped; a fit that stopped earlier
    keeps its result (JAX's batching rule freezes it) and reports its own `n_steps`. It
    computes the ELBO at every iteration (`monitor_every=1`): under `vmap` the `lax.cond` that
    skips it would run both branches, so skipping would save nothing.

    Quasi-separation is looked for in every data set and handled as `level5.fit` does
    (`separation_limit`), with one warning for all; fits that diverge warn once together and
    keep their last finite iterate.

    Returns:
        A `FitResult` whose every array has a leading axis, one entry per fit (`fit_at` picks one).
    """
    check_tol(tol)
    check_flag("separation_limit", separation_limit)
    if isinstance(data, PLNData):
        if keys is None:
            raise TypeError("fit_many on one data set needs keys= (one restart per key).")
        check_fit_arguments(data, n_iter, warn_on_separation=False)
        problem, held, found = prepare_checked(data, separation_limit, stacklevel=3)
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
            check_fit_arguments(dataset, n_iter, warn_on_separation=False)
        shapes = {jax.tree.map(jnp.shape, d) for d in datasets}
        if len(shapes) != 1:
            raise ValueError(f"all data sets must have the same shapes, got {sorted(shapes)}.")
        problems, helds, founds = prepare_many(datasets, separation_limit)
        problem = jax.tree.map(lambda *leaves: jnp.stack(leaves), *problems)
        starts = jax.tree.map(lambda *leaves: jnp.stack(leaves), *map(numpy_start, datasets))
        batched_problem = True
        dtype = datasets[0].counts.dtype
    options = dict(n_iter=n_iter, optimizer=optimizer, batched_problem=batched_problem)
    traced_tol = device_array(tol, dtype)

    def run(step_limits):
        return _fit_many_compiled(problem, starts, traced_tol, step_limits, **options)

    n_fits = jax.tree.leaves(starts)[0].shape[0]
    results = report_divergences(run(jnp.full((n_fits,), n_iter, jnp.int32)), run)
    if isinstance(data, PLNData):  # restarts on one data set
        return push_each_to_limit(
            results, [data.offsets] * n_fits, [held] * n_fits, [found] * n_fits
        )
    return push_each_to_limit(results, [d.offsets for d in datasets], helds, founds)


def push_each_to_limit(
    results: FitResult, offsets: list, helds: list, founds: list | None = None
) -> FitResult:
    """`separation.push_to_limit` for each fit of a batch (fit i with `offsets[i]` and
    `helds[i]`), and `separated` set to each fit's `coefficient_mask(founds[i])` stacked
    (`founds` defaults to `helds`)."""
    founds = helds if founds is None else founds
    marks = np.stack([coefficient_mask(found) for found in founds])
    if any(held.any for held in helds):
        fits = [
            push_to_limit(fit_at(results, i), o, h) for i, (o, h) in enumerate(zip(offsets, helds))
        ]
        results = jax.tree.map(lambda *leaves: jnp.stack(leaves), *fits)
    return results._replace(separated=marks)


def prepare_many(datasets: list[PLNData], separation_limit: bool) -> tuple[list, list, list]:
    """`prepare` for each data set, with one `SeparationWarning` for all those that have
    quasi-separation (and, with `separation_limit`, their rates held at 0 as in `level5.fit`).

    Returns:
        The prepared problems, the separations they hold, and the separations found."""
    found = [find_separation(dataset) for dataset in datasets]
    separated = [index for index, separation in enumerate(found) if separation.any]
    if separated:
        warnings.warn(
            f"quasi-separation in {len(separated)} of {len(datasets)} data sets (data sets {separated[:10]}): "
            "some species have only zero counts in a group of samples, so their coefficients have no finite "
            f"estimate; first case:\n{separation_message(datasets[separated[0]], found[separated[0]])}",
            SeparationWarning,
            stacklevel=4,
        )
    helds = [
        separation if separation_limit else no_separation(dataset)
        for dataset, separation in zip(datasets, found)
    ]
    problems = [
        prepare(dataset, held.mask if held.any else None) for dataset, held in zip(datasets, helds)
    ]
    return problems, helds, found
