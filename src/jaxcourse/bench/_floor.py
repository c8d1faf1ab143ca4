"""The floor: the work no implementation of one ELBO evaluation can skip, timed on the data."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from ..pln import PLNData, init_variational
from ..timing import time_call


@jax.jit
def floor_work(offsets, mean, sqrt_var, weights):
    """Two `(n, p) x (p, p)` products and one exp pass over `(n, p)`: one ELBO's unavoidable work."""
    rate = jnp.exp(offsets + mean + 0.5 * sqrt_var * sqrt_var)
    return mean.T @ mean, mean @ weights, rate


def measure_floor(
    data: PLNData, *, repeat: int | None = None, seconds: float = 0.25
) -> dict[str, float]:
    """Times `floor_work` at the fits' starting point, as one jitted call (median and best of
    `repeat`, seconds).

    By default `repeat` is chosen so that the timed calls last about `seconds` (10 to 500
    calls): a median over a few milliseconds of a noisy machine is itself noise.
    """
    start = init_variational(data)
    weights = jnp.eye(data.n_species, dtype=start.latent_mean.dtype)
    arguments = (data.offsets, start.latent_mean, start.latent_sqrt_var, weights)
    if repeat is None:
        first = time_call(floor_work, *arguments, repeat=3, name="floor")
        repeat = int(np.clip(np.ceil(seconds / max(first.median_s, 1e-9)), 10, 500))
    timing = time_call(floor_work, *arguments, repeat=repeat, name="floor")
    return {"median_s": timing.median_s, "min_s": timing.min_s, "repeats": repeat}


def combine_floors(measurements: list[dict[str, float]]) -> dict[str, float]:
    """One floor from several `measure_floor` results: the median of their medians, the best
    of their bests, the calls timed, and how many measurements there were."""
    if not measurements:
        raise ValueError("combine_floors needs at least one measurement.")
    return {
        "median_s": float(np.median([m["median_s"] for m in measurements])),
        "min_s": float(min(m["min_s"] for m in measurements)),
        "repeats": sum(m["repeats"] for m in measurements),
        "measurements": len(measurements),
    }
