"""Checkers for the exercises of the sharding chapter (pmap, shard_map, the data-parallel PLN ELBO).

Test inputs are drawn with NumPy and the learner's function runs first, so a stub gets its
verdict at once; the references are computed on one device.
"""

from __future__ import annotations

from functools import partial

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh, NamedSharding
from jax.sharding import PartitionSpec as P

from .. import parallel, pln
from ..checks import exercise_checker, require


def _close(a, b, *, rtol=1e-4, atol=1e-5) -> bool:
    return bool(np.allclose(np.asarray(a), np.asarray(b), rtol=rtol, atol=atol))


@exercise_checker("Standardise columns with pmap")
def check_global_standardise(standardise, n_devices: int) -> None:
    """`standardise` is pmapped over `n_devices` with axis name "data"; it takes and returns
    `(n_devices, m, d)` blocks, standardised with the mean and std of all `n_devices * m` rows.
    """
    rng = np.random.default_rng(7)
    x = (3.0 + 2.0 * rng.standard_normal((8 * n_devices, 3))).astype(np.float32)
    x[:8] += 5.0  # the blocks differ, so block statistics give a different answer
    blocks = x.reshape(n_devices, 8, 3)
    out = standardise(jnp.asarray(blocks))
    require(out is not None, "your function returned None: return the standardised blocks.")
    out = np.asarray(out)
    require(
        out.shape == blocks.shape,
        f"expected blocks of shape {blocks.shape} (devices, rows, columns), got {out.shape}.",
    )
    local = (blocks - blocks.mean(axis=1, keepdims=True)) / blocks.std(axis=1, keepdims=True)
    require(
        not _close(out, local),
        "each device used the mean and std of its own block; average over devices with "
        "lax.pmean(..., 'data') (the same axis name as in pmap).",
    )
    expected = (x - x.mean(axis=0)) / x.std(axis=0)
    require(
        _close(out.reshape(x.shape), expected),
        "the result differs from standardising all rows together. The global std is "
        "sqrt(mean(x**2) - mean(x)**2) with both means taken over every row (pmean of the "
        "block means); the mean of the block stds is not the std.",
    )


@jax.jit
def _mse_grad(params, x, y):
    return jax.grad(parallel.mse_loss)(params, x, y)


@exercise_checker("A data-parallel gradient with shard_map")
def check_sharded_grad(sharded_grad, mesh: Mesh) -> None:
    """`sharded_grad(params, x, y)` takes replicated `LinearParams` and `x`, `y` sharded by rows
    over `mesh` (axis "data"), and returns the gradient of `mse_loss` over all rows.
    """
    n_devices = mesh.shape[parallel.AXIS]
    rng = np.random.default_rng(3)
    x = rng.standard_normal((16 * n_devices, 3)).astype(np.float32)
    y = (x @ np.array([1.0, -2.0, 3.0]) + 0.5 + 0.1 * rng.standard_normal(16 * n_devices)).astype(np.float32)
    params = parallel.LinearParams(jnp.array([0.5, 0.0, -1.0]), jnp.array(0.2))
    rows = NamedSharding(mesh, P(parallel.AXIS))
    grads = sharded_grad(params, jax.device_put(x, rows), jax.device_put(y, rows))
    require(grads is not None, "your function returned None: return the gradient.")
    require(
        isinstance(grads, parallel.LinearParams),
        f"return the gradient as LinearParams (what jax.grad of mse_loss gives), got {type(grads).__name__}.",
    )
    expected = _mse_grad(params, x, y)
    require(
        not (_close(grads.weights, n_devices * expected.weights) and _close(grads.bias, n_devices * expected.bias)),
        f"your gradient is {n_devices} times too large (one factor per device). Inside "
        "shard_map the gradient of a replicated parameter is already summed over devices; "
        "differentiate the global loss (lax.pmean of the block loss) and do not reduce the "
        "gradient again.",
    )
    n_block = x.shape[0] // n_devices
    first_block = _mse_grad(params, x[:n_block], y[:n_block])
    require(
        not _close(grads.weights, first_block.weights),
        "this is the gradient of the first device's block only: the devices never combined "
        "their results (with check_vma=False nothing warns you about that).",
    )
    require(
        _close(grads.weights, expected.weights) and _close(grads.bias, expected.bias),
        "the gradient differs from jax.grad(mse_loss) over all rows; each block holds an equal "
        "share of the rows, so the global loss is the pmean of the block losses.",
    )


@partial(jax.jit, static_argnames="n_devices")
def _profiled_elbo_with_block_coef(data, variational, n_devices: int):
    """The typical mistake, computed on one device: each block fits its own B."""
    blocks_of = lambda tree: jax.tree.map(lambda a: a.reshape(n_devices, -1, *a.shape[1:]), tree)

    def block_statistics(data_k, var_k):
        return pln.elbo_statistics(data_k, var_k, pln.closed_form_coef(data_k.covariates, var_k.latent_mean))

    stats = jax.vmap(block_statistics)(blocks_of(data), blocks_of(variational))
    totals = jax.tree.map(lambda s: jnp.sum(s, axis=0), stats)
    return pln.elbo_from_statistics(totals, totals.scatter / totals.n_samples)


def _small_pln_problem(n_samples: int) -> tuple[pln.PLNData, pln.Variational]:
    """Counts with two covariates and variational parameters away from the start, drawn with NumPy."""
    rng = np.random.default_rng(11)
    n_species = 5
    covariates = np.column_stack([np.ones(n_samples), rng.standard_normal(n_samples)])
    latent = covariates @ rng.normal(1.0, 0.5, (2, n_species)) + 0.5 * rng.standard_normal((n_samples, n_species))
    counts = rng.poisson(np.exp(latent))
    data = pln.make_data(counts, covariates=covariates)
    start = pln.init_variational(data)
    mean = start.latent_mean + jnp.asarray(0.3 * rng.standard_normal(start.latent_mean.shape), dtype=jnp.float32)
    return data, pln.Variational(mean, start.latent_sqrt_var)


@exercise_checker("The profiled PLN ELBO, data-parallel")
def check_sharded_profiled_elbo(sharded_profiled_elbo, mesh: Mesh) -> None:
    """`sharded_profiled_elbo(data, variational, mesh)` returns `pln.profiled_elbo(data, variational)`
    with the samples split over the "data" axis of `mesh`.
    """
    n_devices = mesh.shape[parallel.AXIS]
    data, variational = _small_pln_problem(6 * n_devices)
    value = sharded_profiled_elbo(data, variational, mesh)
    require(value is not None, "your function returned None: return the ELBO (a scalar).")
    value = jnp.asarray(value)
    require(value.shape == (), f"the ELBO is a scalar, got an array of shape {value.shape}.")
    block_coef = float(_profiled_elbo_with_block_coef(data, variational, n_devices))
    require(
        not np.isclose(float(value), block_coef, rtol=1e-5),
        "each device fitted its own B from its block. B = (X'X)^{-1} X'M needs X'X and X'M "
        "summed over all samples: psum them before solving.",
    )
    expected = float(jax.jit(pln.profiled_elbo)(data, variational))
    require(
        np.isclose(float(value), expected, rtol=1e-4),
        f"got {float(value):.4f}, expected {expected:.4f} (pln.profiled_elbo). Sigma is the "
        "total scatter divided by the total number of samples, both after the psum.",
    )
