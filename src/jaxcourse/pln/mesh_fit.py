"""Level 6 on a two-axis mesh: the samples split over "data" and the restarts over "model".

Each device runs the level-5 loop (`convergence.run_loop`, unchanged) on its block of samples
for its share of the restarts, `vmap`ped over them; the sums over samples go through a `psum`
over "data" only. Restarts never talk to each other, so nothing crosses "model": the second
axis adds fits, not communication. (Splitting the p species over "model" instead would split
Sigma, whose Cholesky factor couples every species, and each iteration would need gathers.)
"""

from __future__ import annotations

from functools import partial

import jax
import jax.numpy as jnp
import optax
from jax.sharding import Mesh, NamedSharding
from jax.sharding import PartitionSpec as P

from ..mesh import DATA, MODEL
from ..parallel import check_even_split
from ._algorithm import FitResult, check_fit_arguments, device_array
from ._data import PLNData
from .convergence import DEFAULT_TOL, check_tol, run_loop
from .level5 import RPROP, prepare_checked
from .level6 import push_each_to_limit, random_starts, report_divergences
from .profiled import problem_layout


@partial(jax.jit, static_argnames=("n_iter", "optimizer", "mesh"))
def _fit_on_grid(problem, starts, tol, step_limits, *, n_iter, optimizer, mesh) -> FitResult:
    samples = P(DATA)
    restarts_and_samples = P(MODEL, DATA)

    @partial(
        jax.shard_map,
        mesh=mesh,
        in_specs=(problem_layout(samples, P()), restarts_and_samples, P(), P(MODEL)),
        out_specs=FitResult(P(MODEL), restarts_and_samples, P(MODEL), P(MODEL), P(MODEL)),  # type: ignore[arg-type]  # a tree of PartitionSpecs shaped like the result
        # run_loop starts its carry from constants, which vary over no axis, while the body's
        # values vary over "model" (each device has its own restarts); the varying-axes check
        # would refuse that loop, and nothing here is differentiated, so it is turned off.
        check_vma=False,
    )
    def on_each_device(problem_block, starts_block, tol, step_limits_block):
        def one_fit(start, step_limit):
            return run_loop(
                problem_block,
                start,
                tol,
                n_iter=n_iter,
                optimizer=optimizer,
                reduce=lambda tree: jax.lax.psum(tree, DATA),
                step_limit=step_limit,
            )

        return jax.vmap(one_fit)(starts_block, step_limits_block)

    return on_each_device(problem, starts, tol, step_limits)


def fit_restarts(
    data: PLNData,
    n_iter: int,
    *,
    keys: jax.Array,
    mesh: Mesh,
    scale: float = 0.5,
    optimizer: optax.GradientTransformation = RPROP,
    tol: float = DEFAULT_TOL,
) -> FitResult:
    """`level6.fit_many(data, n_iter, keys=keys, ...)` on a `("data", "model")` mesh: one fit
    from each of `random_starts(data, keys, scale=scale)`, the samples split over "data" and
    the restarts over "model".

    Quasi-separation and divergence are handled as in `level6.fit_many` (one warning each;
    a diverged restart keeps its last finite iterate).

    Returns:
        A `FitResult` whose arrays have a leading axis, one entry per restart; M and S come back
        split over both axes, the rest split over "model" (a restart that diverged comes back
        gathered on one device, as the replay returns it).

    Raises:
        ValueError: the samples do not split evenly over "data", or the restarts over "model".
    """
    check_tol(tol)
    check_fit_arguments(data, n_iter, warn_on_separation=False)
    check_even_split(data.n_samples, mesh, DATA)
    if len(keys) % mesh.shape[MODEL]:
        raise ValueError(
            f"{len(keys)} restarts do not split evenly over the {mesh.shape[MODEL]} devices of '{MODEL}'; "
            "use a number of keys that is a multiple of it."
        )
    samples, replicated = NamedSharding(mesh, P(DATA)), NamedSharding(mesh, P())
    problem, held, found = prepare_checked(data, True, stacklevel=3)
    problem = jax.device_put(problem, problem_layout(samples, replicated))
    starts = jax.device_put(
        random_starts(data, keys, scale=scale), NamedSharding(mesh, P(MODEL, DATA))
    )
    traced_tol = device_array(tol, data.counts.dtype, replicated)
    by_restart = NamedSharding(mesh, P(MODEL))

    def run(step_limits):
        step_limits = device_array(step_limits, jnp.int32, by_restart)
        return _fit_on_grid(
            problem, starts, traced_tol, step_limits, n_iter=n_iter, optimizer=optimizer, mesh=mesh
        )

    results = report_divergences(run(jnp.full((len(keys),), n_iter, jnp.int32)), run)
    return push_each_to_limit(
        results, [data.offsets] * len(keys), [held] * len(keys), [found] * len(keys)
    )
