"""The fastest level against pyPLNmodels over sizes: simulated data with covariates, n and p varied."""

from __future__ import annotations

from typing import NamedTuple

import jax

from ..pln import PLNData, simulate
from ._fresh import run_fresh
from ._methods import PLAIN_CALL, select_methods
from ._metrics import first_time_at_least, target_slack
from ._run import float64_profiled_elbo, run_method


class SweepPoint(NamedTuple):
    """One size of the sweep.

    Attributes:
        n_samples, n_species, n_covariates: the size (the first covariate is the intercept).
        to_target_s: time the method (warm) took to reach pyPLNmodels' final ELBO, or None.
        fit_s: the method's whole fit (warm, median of the repeats).
        compile_s: the method's compilation at this size.
        reference_s: pyPLNmodels' fit, end to end, in its own process (after a warm-up fit).
        gap_nats: the method's final ELBO minus pyPLNmodels' (float64; positive: ours higher).
        gap_per_entry: `gap_nats / (n * p)`.
    """

    n_samples: int
    n_species: int
    n_covariates: int
    to_target_s: float | None
    fit_s: float
    compile_s: float | None
    reference_s: float
    gap_nats: float
    gap_per_entry: float


def sweep_data(sizes: list[tuple[int, int]], *, n_covariates: int, key: jax.Array) -> list[PLNData]:
    """Simulated PLN data sets (`pln.simulate`), one per `(n, p)` of `sizes`, each with its own key."""
    keys = jax.random.split(key, len(sizes))
    return [simulate(n, p, key=k, n_covariates=n_covariates).data for (n, p), k in zip(sizes, keys)]


def run_sweep(
    sizes: list[tuple[int, int]],
    *,
    n_covariates: int = 3,
    key: jax.Array,
    method: str = PLAIN_CALL,
    n_iter: int = 600,
    repeat: int = 1,
    torch_threads: int | None = None,
) -> list[SweepPoint]:
    """Fits `method` (in this process) and pyPLNmodels' default (in one fresh process, which
    first fits a small warm-up problem) to simulated data of each size.

    Args:
        sizes: `(n_samples, n_species)` pairs.
        n_covariates: columns of X, intercept included (at least 2: covariates, not only an intercept).
        key: the PRNG key the data are drawn from.
        method: a name of `bench.METHODS`.
        n_iter: the method's iteration budget.
        repeat: warm fits of the method per size.
        torch_threads: torch's threads in the reference's process (`run_fresh`'s default, the
            cores this process may use, if None).
    """
    if n_covariates < 2:
        raise ValueError(
            f"the sweep fits covariates: n_covariates must be at least 2, got {n_covariates}."
        )
    if not sizes:
        raise ValueError("sizes must list at least one (n_samples, n_species).")
    (chosen,) = select_methods([method])
    datasets = sweep_data(sizes, n_covariates=n_covariates, key=key)
    warm_up = simulate(20, 3, key=jax.random.key(0), n_covariates=n_covariates).data
    # The warm-up takes a few steps only: enough to pay torch's first-call costs.
    reference = run_fresh(
        "reference",
        [warm_up, *datasets],
        n_iter=400,
        maxiter=[5] + [None] * len(datasets),
        torch_threads=torch_threads,
    ).fits[1:]
    points = []
    for data, theirs in zip(datasets, reference):
        target = float64_profiled_elbo(data, theirs.variational)
        ours = run_method(chosen, data, n_iter, repeat=repeat)
        gap = ours.final_elbo - target
        n, p = data.counts.shape
        points.append(
            SweepPoint(
                n_samples=n,
                n_species=p,
                n_covariates=n_covariates,
                to_target_s=first_time_at_least(
                    ours.elbo, ours.times_s, target, slack=target_slack(target)
                ),
                fit_s=ours.run_s,
                compile_s=ours.compile_s,
                reference_s=theirs.times_s[0],
                gap_nats=gap,
                gap_per_entry=gap / (n * p),
            )
        )
    return points


def sweep_table(points: list[SweepPoint]):
    """A pandas DataFrame of a sweep, one row per size."""
    import pandas as pd

    return pd.DataFrame([point._asdict() for point in points]).set_index(["n_samples", "n_species"])
