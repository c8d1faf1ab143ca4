"""Checkers for the exercises of the sharding chapter (shard_map, the data-parallel PLN ELBO).

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
from ..checks import (
    call_answer,
    close,
    exercise_checker,
    require,
    require_array,
    require_callable,
)
from ._jaxpr import equations, primitive_names, traced_program


def _close(a, b) -> bool:
    """The sharding checkers' tolerance: float32 sums split over devices round differently."""
    return close(a, b, rtol=1e-4, atol=1e-5)


def _require_unlike(value, candidates: list[tuple[object, str]]) -> None:
    """Fails with the hint of the first known wrong answer that `value` equals, so that the hint
    names what the answer did."""
    for candidate, hint in candidates:
        require(not _close(value, candidate), hint)


_COLLECTIVES = ("psum", "pmax", "pmin", "all_gather", "ppermute", "all_to_all", "reduce_scatter")

_SHARDED_INPUT_HINTS = (
    (
        ValueError,
        "out_specs which require replication",
        "your shard_map returns a value that differs from device to device where out_specs=P() "
        "asks for one value shared by all: something computed from the block alone was never "
        "combined over devices. Combine it with a collective (lax.psum of sums, lax.pmean of "
        "equal-sized means) before returning it",
    ),
    (
        Exception,
        "sharded",
        "the arrays are split over the mesh, and plain jax.numpy code on them needs an explicit "
        "output sharding: compute per device with jax.shard_map and combine with a collective",
    ),
)


def _require_per_device_program(
    answer, args: tuple, hint: str, what: str, static_argnums=()
) -> None:
    """Fails with `hint` unless the answer's program maps over devices (shard_map, or pmap, which
    also shows as `shard_map` in the jaxpr) and combines the devices' results with a collective."""
    jaxpr = traced_program(
        answer, *args, what=what, hints=_SHARDED_INPUT_HINTS, static_argnums=static_argnums
    )
    names = primitive_names(jaxpr)
    require("shard_map" in names and any(n.startswith(_COLLECTIVES) for n in names), hint)


def _require_rows_not_gathered(answer, mesh: Mesh, what: str) -> None:
    """Fails unless the answer's program keeps every device's rows on that device: an
    `all_gather` of an operand with one axis per row of the block moves the whole data set to
    every device, which data parallelism exists to avoid (statistics, one value per column, may
    be gathered)."""
    n_devices, rows_per_device, columns = mesh.shape[parallel.AXIS], 5, 3
    x = jax.device_put(
        jnp.ones((rows_per_device * n_devices, columns)), NamedSharding(mesh, P(parallel.AXIS))
    )
    jaxpr = traced_program(answer, x, what=what, hints=_SHARDED_INPUT_HINTS)
    gathered_rows = [
        eqn
        for eqn in equations(jaxpr)
        if eqn.primitive.name.startswith("all_gather")
        and any(rows_per_device in getattr(v.aval, "shape", ()) for v in eqn.invars)
    ]
    require(
        not gathered_rows,
        "the values are right, but your program all_gathers the rows: every device then holds "
        "the whole data set, which is what data parallelism avoids. Keep each block where it is, "
        "reduce it to per-column statistics (means of x and of x**2) and combine those with "
        "lax.pmean over 'data'.",
    )


@exercise_checker("Standardise columns with shard_map")
def check_global_standardise(standardise, mesh: Mesh) -> None:
    """`standardise(x)` takes `(n, d)` data whose rows are split over the "data" axis of `mesh`
    and returns it standardised column by column with the mean and std of all n rows, computed
    per device with shard_map and collectives.
    """
    require_callable(standardise, "standardise")
    n_devices = mesh.shape[parallel.AXIS]
    rows = NamedSharding(mesh, P(parallel.AXIS))
    rng = np.random.default_rng(7)
    for rows_per_device in (8, 3):
        x = (3.0 + 2.0 * rng.standard_normal((rows_per_device * n_devices, 3))).astype(np.float32)
        x[:rows_per_device] += 5.0  # the blocks differ, so block statistics give a different answer
        out = require_array(
            call_answer(
                standardise, jax.device_put(x, rows), what="standardise", hints=_SHARDED_INPUT_HINTS
            ),
            x.shape,
            what="standardise",
            expected="(rows, columns), like its input",
        )
        blocks = x.reshape(n_devices, rows_per_device, 3)
        local = (
            (blocks - blocks.mean(axis=1, keepdims=True)) / blocks.std(axis=1, keepdims=True)
        ).reshape(x.shape)
        require(
            not _close(out, local),
            "each device used the mean and std of its own block; average over devices with "
            "lax.pmean(..., 'data') (the mesh axis of shard_map).",
        )
        expected = (x - x.mean(axis=0)) / x.std(axis=0)
        mean, std, variance = x.mean(axis=0), x.std(axis=0), x.var(axis=0)
        block_std = np.repeat(blocks.std(axis=1), rows_per_device, axis=0)
        _require_unlike(
            out,
            [
                (
                    (x - mean) / block_std,
                    "the mean is global, but each device divided by the std of its own block: "
                    "the std needs the pmean of the block means of x**2 as well, "
                    "sqrt(mean(x**2) - mean(x)**2) over every row.",
                ),
                (
                    (x - mean) / blocks.std(axis=1).mean(axis=0),
                    "you averaged the block stds: the mean of the block stds is not the std. Take "
                    "the pmean of the block means of x and of x**2, then "
                    "sqrt(mean(x**2) - mean(x)**2).",
                ),
                (
                    (x - mean) / np.sqrt(blocks.var(axis=1).mean(axis=0)),
                    "you averaged the block variances: that misses the spread between the block "
                    "means. Take the pmean of the block means of x and of x**2, then "
                    "mean(x**2) - mean(x)**2.",
                ),
                (
                    (x - mean) / x.std(axis=0, ddof=1),
                    "you divided by the sample std (ddof=1, n - 1): the exercise asks for the "
                    "population std of np.std, which divides by n.",
                ),
                (
                    (x - n_devices * mean) / std,
                    "you subtracted the psum of the block means, n_devices times the mean: average "
                    "them with lax.pmean instead.",
                ),
                (
                    x / std,
                    "the columns are divided by the std, but you did not subtract the mean first.",
                ),
                (
                    (x - mean) / variance,
                    "you divided by the variance: divide by its square root, the std.",
                ),
            ],
        )
        require(
            _close(out, expected),
            f"with {rows_per_device} rows per device, the result differs from standardising all rows "
            "together, (x - mean) / std with the mean and the population std of all n rows: the "
            "pmean of the block means of x and of x**2 gives both.",
        )
    _require_per_device_program(
        standardise,
        (jax.device_put(jnp.ones((2 * n_devices, 3)), rows),),
        "the values are right, but your function is not a shard_map with collectives: it computed the "
        "statistics of the whole array at once. Decorate it with jax.shard_map(mesh=mesh, "
        "in_specs=P('data'), out_specs=P('data')) and combine the block statistics with lax.pmean.",
        what="standardise",
    )
    _require_rows_not_gathered(standardise, mesh, what="standardise")


@jax.jit
def _mse_grad(params, x, y):
    return jax.grad(parallel.mse_loss)(params, x, y)


def _linear_problem(n_rows: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n_rows, 3)).astype(np.float32)
    y = (x @ np.array([1.0, -2.0, 3.0]) + 0.5 + 0.1 * rng.standard_normal(n_rows)).astype(
        np.float32
    )
    return x, y


def _require_global_gradient(grads, params, x, y, n_devices: int) -> None:
    """The gradient over all rows; the typical wrong ones get the hint naming their mistake."""
    require(
        isinstance(grads, parallel.LinearParams),
        f"return the gradient as LinearParams (what jax.grad of mse_loss gives), got {type(grads).__name__}.",
    )
    for leaf, reference in zip(grads, params):
        require_array(
            leaf,
            np.shape(reference),
            what="each field of the gradient",
            expected="the shape of params",
        )
    expected = _mse_grad(params, x, y)
    require(
        not (
            _close(grads.weights, n_devices * expected.weights)
            and _close(grads.bias, n_devices * expected.bias)
        ),
        f"your gradient is {n_devices} times too large (one factor per device). Either you "
        "differentiated the psum of the block losses (each block holds an equal share of the "
        "rows, so the global mean loss is their pmean), or you reduced a gradient that is "
        "already summed: inside shard_map the gradient of a replicated parameter is already "
        "summed over devices. Differentiate lax.pmean of the block loss and do not reduce the "
        "gradient again.",
    )
    n_block = x.shape[0] // n_devices
    first_block = _mse_grad(params, x[:n_block], y[:n_block])
    require(
        not _close(grads.weights, first_block.weights),
        "this is the gradient of the first device's block only: the devices never combined "
        "their results. With check_vma=False, nothing sums the gradient over devices, not even a "
        "pmean inside the loss, and nothing warns you.",
    )
    _require_unlike(
        grads,
        [
            (
                jax.tree.map(lambda p, g: p - parallel.LEARNING_RATE * g, params, expected),
                "you returned the updated parameters, params - learning rate x gradient: return "
                "the gradient itself.",
            ),
            (
                jax.tree.map(np.negative, expected),
                "the sign is flipped: return the gradient of the loss (what jax.grad gives), not "
                "the descent direction.",
            ),
            (
                jax.tree.map(lambda g: x.shape[0] * g, expected),
                f"your gradient is {x.shape[0]} times too large, the number of rows: you "
                "differentiated the sum of squared residuals, and mse_loss is their mean.",
            ),
        ],
    )
    require(
        _close(grads.weights, expected.weights) and _close(grads.bias, expected.bias),
        "the gradient differs from jax.grad(mse_loss) over all rows; each block holds an equal "
        "share of the rows, so the global loss is the pmean of the block losses.",
    )


@exercise_checker("A data-parallel gradient with shard_map")
def check_sharded_grad(sharded_grad, mesh: Mesh) -> None:
    """`sharded_grad(params, x, y)` takes replicated `LinearParams` and `x`, `y` sharded by rows
    over `mesh` (axis "data"), and returns the gradient of `mse_loss` over all rows, computed
    per device with shard_map.
    """
    require_callable(sharded_grad, "sharded_grad")
    n_devices = mesh.shape[parallel.AXIS]
    rows = NamedSharding(mesh, P(parallel.AXIS))
    cases = [
        (
            parallel.LinearParams(jnp.array([0.5, 0.0, -1.0]), jnp.array(0.2)),
            _linear_problem(16 * n_devices, 3),
        ),
        (
            parallel.LinearParams(jnp.zeros(3), jnp.array(0.0)),
            _linear_problem(4 * n_devices, 4),
        ),  # zeros
    ]
    for params, (x, y) in cases:
        sharded = (params, jax.device_put(x, rows), jax.device_put(y, rows))
        grads = call_answer(sharded_grad, *sharded, what="sharded_grad", hints=_SHARDED_INPUT_HINTS)
        _require_global_gradient(grads, params, x, y, n_devices)
    _require_per_device_program(
        sharded_grad,
        sharded,
        "the gradient is right, but your function does not compute it per device: the exercise "
        "asks for jax.shard_map over the mesh, with in_specs=(P(), P('data'), P('data')), and a "
        "collective (lax.pmean of the block loss) that combines the devices.",
        what="sharded_grad",
    )


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


@exercise_checker("The profiled PLN ELBO, data-parallel")
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
            hints=_SHARDED_INPUT_HINTS,
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
        _require_unlike(
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
    _require_per_device_program(
        sharded_profiled_elbo,
        (data, variational, mesh),
        "the value is right, but your function ignores the mesh: it computed on one device. Split "
        "the samples over the mesh's 'data' axis with jax.shard_map (in_specs=P('data')) and psum "
        "the sufficient statistics across devices.",
        what="sharded_profiled_elbo",
        static_argnums=(2,),
    )


HINTS: dict[str, tuple[str, ...]] = {
    "check_global_standardise": (
        "Inside shard_map each device sees only its block of rows. Compute what you can on the "
        "block (a mean per column), then combine the devices with a collective over 'data'.",
        "Equal blocks: the global mean is lax.pmean of the block means, and so is the global mean "
        "of x**2. The population std (np.std, divide by n, not n - 1) is "
        "sqrt(mean(x**2) - mean(x)**2) from those two global means; the block's own std, or the "
        "mean of the block stds or variances, is not it. Subtract the mean, divide by the std.",
    ),
    "check_sharded_grad": (
        "Write the loss over all rows as seen from one device: the block's mse_loss, combined over "
        "the devices with a collective. Then differentiate that global loss inside shard_map.",
        "Each block holds an equal share of the rows, so the global loss is "
        "lax.pmean(mse_loss(params, x_block, y_block), 'data'); return jax.grad of it as it is. "
        "Do not pmean or psum the gradient afterwards (a replicated parameter's gradient is already "
        "summed over devices), do not psum the losses, and return the gradient, not an updated "
        "step.",
    ),
    "check_sharded_profiled_elbo": (
        "Every quantity the profiled ELBO needs is a sum over samples: compute each sum on a "
        "device's block, psum it over 'data', and only then finish the computation, the same on "
        "every device.",
        "Inside jax.shard_map with in_specs P('data') for data and variational: B = solve(psum of "
        "X'X, psum of X'M); then the statistics pln.elbo_statistics(block, block, B), psum'd (not "
        "pmean'd); Sigma = total scatter / total n_samples; pln.elbo_from_statistics gives the "
        "ELBO. Profiling each block on its own, or solving with a block's X'M, gives another value.",
    ),
}
"""Each checker's hint ladder (issue 28): a nudge before any attempt, then a more specific hint."""
