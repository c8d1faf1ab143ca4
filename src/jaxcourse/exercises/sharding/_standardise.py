"""Checker of the sharding chapter's exercise on standardising the columns of row-sharded data with
shard_map."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh, NamedSharding
from jax.sharding import PartitionSpec as P

from ... import parallel
from ...checks import call_answer, exercise_checker, require, require_array, require_callable
from ._common import (
    SHARDED_INPUT_HINTS,
    close_enough,
    require_per_device_program,
    require_rows_not_gathered,
    require_unlike,
)


@exercise_checker(
    hints=(
        "Inside shard_map each device sees only its block of rows. Compute what you can on the "
        "block (a mean per column), then combine the devices with a collective over 'data'.",
        "Equal blocks: the global mean is lax.pmean of the block means, and so is the global mean "
        "of x**2. The population std (np.std, divide by n, not n - 1) is "
        "sqrt(mean(x**2) - mean(x)**2) from those two global means; the block's own std, or the "
        "mean of the block stds or variances, is not it. Subtract the mean, divide by the std.",
    )
)
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
                standardise, jax.device_put(x, rows), what="standardise", hints=SHARDED_INPUT_HINTS
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
            not close_enough(out, local),
            "each device used the mean and std of its own block; average over devices with "
            "lax.pmean(..., 'data') (the mesh axis of shard_map).",
        )
        expected = (x - x.mean(axis=0)) / x.std(axis=0)
        mean, std, variance = x.mean(axis=0), x.std(axis=0), x.var(axis=0)
        block_std = np.repeat(blocks.std(axis=1), rows_per_device, axis=0)
        require_unlike(
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
            close_enough(out, expected),
            f"with {rows_per_device} rows per device, the result differs from standardising all rows "
            "together, (x - mean) / std with the mean and the population std of all n rows: the "
            "pmean of the block means of x and of x**2 gives both.",
        )
    require_per_device_program(
        standardise,
        (jax.device_put(jnp.ones((2 * n_devices, 3)), rows),),
        "the values are right, but your function is not a shard_map with collectives: it computed the "
        "statistics of the whole array at once. Decorate it with jax.shard_map(mesh=mesh, "
        "in_specs=P('data'), out_specs=P('data')) and combine the block statistics with lax.pmean.",
        what="standardise",
    )
    require_rows_not_gathered(standardise, mesh, what="standardise")
