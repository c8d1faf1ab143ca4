"""Checkers for the exercises of the sharding chapter (pmap, shard_map, the data-parallel PLN ELBO)."""

from __future__ import annotations

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
    x = 3.0 + 2.0 * jax.random.normal(jax.random.key(7), (8 * n_devices, 3))
    x = x.at[:8].add(5.0)  # the blocks differ, so local statistics give a different answer
    blocks = parallel.split_for_devices(x, n_devices)
    expected = (x - x.mean(axis=0)) / x.std(axis=0)
    out = standardise(blocks)
    require(out is not None, "your function returned None: return the standardised blocks.")
    out = jnp.asarray(out)
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
    require(
        _close(out.reshape(x.shape), expected),
        "the result differs from standardising all rows together. The global std is "
        "sqrt(mean(x**2) - mean(x)**2) with both means taken over every row (pmean of the "
        "block means); the mean of the block stds is not the std.",
    )


@exercise_checker("A data-parallel gradient with shard_map")
def check_sharded_grad(sharded_grad, mesh: Mesh) -> None:
    """`sharded_grad(params, x, y)` takes replicated `LinearParams` and `x`, `y` sharded by rows
    over `mesh` (axis "data"), and returns the gradient of `mse_loss` over all rows.
    """
    n_devices = mesh.shape[parallel.AXIS]
    x, y = parallel.make_regression(16 * n_devices, key=jax.random.key(3))
    params = parallel.LinearParams(jnp.array([0.5, 0.0, -1.0]), jnp.array(0.2))
    expected = jax.grad(parallel.mse_loss)(params, x, y)
    rows = NamedSharding(mesh, P(parallel.AXIS))
    grads = sharded_grad(params, jax.device_put(x, rows), jax.device_put(y, rows))
    require(grads is not None, "your function returned None: return the gradient.")
    require(
        isinstance(grads, parallel.LinearParams),
        f"return the gradient as LinearParams (what jax.grad of mse_loss gives), got {type(grads).__name__}.",
    )
    ratio = float(grads.weights[0] / expected.weights[0])
    require(
        not np.isclose(ratio, n_devices, rtol=1e-3),
        f"your gradient is {n_devices} times too large (one factor per device). Inside "
        "shard_map the gradient of a replicated parameter is already summed over devices; "
        "differentiate the global loss (lax.pmean of the block loss) and do not reduce the "
        "gradient again.",
    )
    first_block = jax.grad(parallel.mse_loss)(params, x[: x.shape[0] // n_devices], y[: y.shape[0] // n_devices])
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


def _profiled_elbo_with_block_coef(data, variational, n_devices: int) -> jax.Array:
    """The typical mistake: each device fits B on its own block only."""
    n_block = data.n_samples // n_devices
    totals = None
    for k in range(n_devices):
        block = slice(k * n_block, (k + 1) * n_block)
        data_k = pln.PLNData(*(a[block] for a in data))
        var_k = pln.Variational(*(a[block] for a in variational))
        stats = pln.elbo_statistics(data_k, var_k, pln.closed_form_coef(data_k.covariates, var_k.latent_mean))
        totals = stats if totals is None else jax.tree.map(jnp.add, totals, stats)
    return pln.elbo_from_statistics(totals, totals.scatter / totals.n_samples)


@exercise_checker("The profiled PLN ELBO, data-parallel")
def check_sharded_profiled_elbo(sharded_profiled_elbo, mesh: Mesh) -> None:
    """`sharded_profiled_elbo(data, variational, mesh)` returns `pln.profiled_elbo(data, variational)`
    with the samples split over the "data" axis of `mesh`.
    """
    n_devices = mesh.shape[parallel.AXIS]
    sim = pln.simulate(6 * n_devices, 5, key=jax.random.key(11), n_covariates=2)
    data = sim.data
    start = pln.init_variational(data)
    variational = pln.Variational(
        start.latent_mean + 0.3 * jax.random.normal(jax.random.key(12), start.latent_mean.shape),
        start.latent_sqrt_var,
    )
    expected = float(pln.profiled_elbo(data, variational))
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
    require(
        np.isclose(float(value), expected, rtol=1e-4),
        f"got {float(value):.4f}, expected {expected:.4f} (pln.profiled_elbo). Sigma is the "
        "total scatter divided by the total number of samples, both after the psum.",
    )
