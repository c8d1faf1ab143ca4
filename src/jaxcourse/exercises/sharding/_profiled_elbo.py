"""Checker of the sharding chapter's exercise on the profiled PLN ELBO with the samples split over
devices."""

from __future__ import annotations

from functools import partial

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh

from ... import parallel, pln
from ...checks import call_answer, exercise_checker, require, require_array, require_callable
from ._common import SHARDED_INPUT_HINTS, require_per_device_program, require_unlike


@partial(jax.jit, static_argnames=("n_devices", "global_cross_products"))
def _profiled_elbo_with_block_coef(
    data, variational, n_devices: int, global_cross_products: bool = False
):
    """Two typical mistakes, computed on one device: each block fits its own B, or (with
    `global_cross_products`) each block solves the summed X'X with its own X'M."""
    blocks_of = lambda tree: jax.tree.map(lambda a: a.reshape(n_devices, -1, *a.shape[1:]), tree)
    xtx = data.covariates.T @ data.covariates

    def block_statistics(data_k, var_k):
        x_k, m_k = data_k.covariates, var_k.latent_mean
        coef = (
            jnp.linalg.solve(xtx, x_k.T @ m_k)
            if global_cross_products
            else pln.closed_form_coef(x_k, m_k)
        )
        return pln.elbo_statistics(data_k, var_k, coef)

    stats = jax.vmap(block_statistics)(blocks_of(data), blocks_of(variational))
    totals = jax.tree.map(lambda s: jnp.sum(s, axis=0), stats)
    return pln.elbo_from_statistics(totals, totals.scatter / totals.n_samples)


@partial(jax.jit, static_argnames="n_devices")
def _sum_of_block_profiled_elbos(data, variational, n_devices: int):
    """A third mistake, on one device: every block's own profiled ELBO, summed."""
    blocks_of = lambda tree: jax.tree.map(lambda a: a.reshape(n_devices, -1, *a.shape[1:]), tree)
    return jnp.sum(jax.vmap(pln.profiled_elbo)(blocks_of(data), blocks_of(variational)))


def _small_pln_problem(n_samples: int) -> tuple[pln.PLNData, pln.Variational]:
    """Counts with two covariates and variational parameters away from the start, drawn with NumPy."""
    rng = np.random.default_rng(11)
    n_species = 5
    covariates = np.column_stack([np.ones(n_samples), rng.standard_normal(n_samples)])
    latent = covariates @ rng.normal(1.0, 0.5, (2, n_species)) + 0.5 * rng.standard_normal(
        (n_samples, n_species)
    )
    counts = rng.poisson(np.exp(latent))
    data = pln.make_data(counts, covariates=covariates)
    start = pln.init_variational(data)
    mean = start.latent_mean + jnp.asarray(
        0.3 * rng.standard_normal(start.latent_mean.shape), dtype=jnp.float32
    )
    return data, pln.Variational(mean, start.latent_sqrt_var)


@exercise_checker(
    hints=(
        "Every quantity the profiled ELBO needs is a sum over samples: compute each sum on a "
        "device's block, psum it over 'data', and only then finish the computation, the same on "
        "every device.",
        "Inside jax.shard_map with in_specs P('data') for data and variational: B = solve(psum of "
        "X'X, psum of X'M); then the statistics pln.elbo_statistics(block, block, B), psum'd (not "
        "pmean'd); Sigma = total scatter / total n_samples; pln.elbo_from_statistics gives the "
        "ELBO. Profiling each block on its own, or solving with a block's X'M, gives another value.",
    )
)
def check_sharded_profiled_elbo(sharded_profiled_elbo, mesh: Mesh) -> None:
    """`sharded_profiled_elbo(data, variational, mesh)` returns `pln.profiled_elbo(data, variational)`
    with the samples split over the "data" axis of `mesh`, per device with psum'd statistics.
    """
    require_callable(sharded_profiled_elbo, "sharded_profiled_elbo")
    n_devices = mesh.shape[parallel.AXIS]
    for samples_per_device in (6, 3):
        data, variational = _small_pln_problem(samples_per_device * n_devices)
        value = call_answer(
            sharded_profiled_elbo,
            data,
            variational,
            mesh,
            what="sharded_profiled_elbo",
            hints=SHARDED_INPUT_HINTS,
        )
        value = float(
            require_array(value, (), what="sharded_profiled_elbo", expected="the ELBO, a scalar")
        )
        expected = float(jax.jit(pln.profiled_elbo)(data, variational))
        if np.isclose(value, expected, rtol=1e-4):
            continue
        # a wrong value: the known mistakes are computed only now, so a right answer pays nothing
        require(
            not np.isclose(
                value,
                float(_profiled_elbo_with_block_coef(data, variational, n_devices)),
                rtol=1e-5,
            ),
            "each device fitted its own B from its block. B = (X'X)^{-1} X'M needs X'X and X'M "
            "summed over all samples: psum them before solving.",
        )
        require_unlike(
            value,
            [
                (
                    expected / n_devices,
                    f"your ELBO is 1/{n_devices} of the right one: you averaged the statistics "
                    "over devices (pmean). They are sums over samples: psum them.",
                ),
                (
                    float(_sum_of_block_profiled_elbos(data, variational, n_devices)),
                    "you summed each block's own profiled ELBO: each block then has its own B "
                    "and Sigma. Sum the statistics (and X'X, X'M) over devices first, then "
                    "profile once.",
                ),
                (
                    float(
                        _profiled_elbo_with_block_coef(
                            data, variational, n_devices, global_cross_products=True
                        )
                    ),
                    "you summed X'X over devices but not X'M: each device solved for B with its "
                    "own block's X'M. psum both before solving.",
                ),
                (
                    -expected,
                    "the sign is flipped: return the ELBO itself, not the negative ELBO (a loss).",
                ),
            ],
        )
        require(
            False,
            f"with {samples_per_device} samples per device, got {value:.4f}, expected {expected:.4f} "
            "(pln.profiled_elbo). Check, in order: X'X and X'M psum'd before solving for B; the "
            "statistics psum'd; Sigma = the total scatter divided by the total number of samples, "
            "both after the psum.",
        )
    require_per_device_program(
        sharded_profiled_elbo,
        (data, variational, mesh),
        "the value is right, but your function ignores the mesh: it computed on one device. Split "
        "the samples over the mesh's 'data' axis with jax.shard_map (in_specs=P('data')) and psum "
        "the sufficient statistics across devices.",
        what="sharded_profiled_elbo",
        static_argnums=(2,),
    )
