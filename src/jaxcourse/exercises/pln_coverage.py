"""Checkers for the exercises of the chapter 'Do the intervals cover? The PLN fit in a simulation
study'."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ..checks import call_answer, close, describe, exercise_checker, require, require_callable
from ..pln.coverage import coverage, monte_carlo_error


def _cases() -> list[tuple[str, np.ndarray, np.ndarray, np.ndarray]]:
    """Intervals of 3 entries in 8 replicates, with ends that touch the truth and NaN intervals
    (entry 1 has none in 3 replicates), and a second case of 400 replicates of a (2, 3) array."""
    truth = np.array([0.0, 1.0, -2.0])
    centre = np.array(
        [[0.1, 0.9, -2.5], [0.8, 1.2, -2.1], [-0.3, 3.0, -1.9], [0.0, 1.0, -2.0]]
        + [[1.5, 0.2, -2.2], [-0.6, 1.1, -1.0], [0.2, -1.0, -2.05], [0.05, 1.6, -1.7]]
    )
    lower, upper = centre - 0.5, centre + 0.5
    lower[1, 0], upper[5, 0] = truth[0], truth[0]  # the truth on an end: held
    lower[[0, 3, 6], 1] = upper[[0, 3, 6], 1] = np.nan  # no interval in three replicates
    rng = np.random.default_rng(37)
    estimate = rng.normal(size=(400, 2, 3))
    width = np.abs(rng.normal(1.8, 0.3, size=(400, 2, 3)))
    return [
        ("8 replicates of 3 entries", lower, upper, truth),
        ("400 replicates of a (2, 3) array", estimate - width, estimate + width, np.zeros((2, 3))),
    ]


def _diagnose(name, share, error, lower, upper, truth) -> None:
    expected, counted = coverage(lower, upper, truth)
    present = np.isfinite(lower) & np.isfinite(upper)
    n_replicates = lower.shape[0]
    require(
        np.shape(share) == truth.shape and np.shape(error) == truth.shape,
        f"with {name}, coverage and error must have one value per entry, shape {truth.shape}; got "
        f"{describe(share)} and {describe(error)}: average over the replicates only (axis=0).",
    )
    share, error = np.asarray(share, np.float64), np.asarray(error, np.float64)
    strict = (present & (lower < truth) & (truth < upper)).sum(axis=0) / counted
    require(
        not (close(share, strict) and not close(share, expected)),
        f"with {name}, an interval whose end equals the truth holds it: use lower <= truth <= upper.",
    )
    over_all = (present & (lower <= truth) & (truth <= upper)).sum(axis=0) / n_replicates
    require(
        not (close(share, over_all) and not close(share, expected)),
        f"with {name}, a replicate with a NaN interval was counted as a miss: leave it out and "
        "divide by the replicates that have an interval, entry by entry.",
    )
    require(
        bool(np.all(np.isfinite(share))) and close(share, expected),
        f"with {name}, coverage {np.round(share, 3).tolist()} should be "
        f"{np.round(expected, 3).tolist()}: the share of replicates whose interval holds the truth.",
    )
    wanted = monte_carlo_error(expected, counted)
    require(
        not close(error, np.sqrt(expected * (1 - expected)) / counted),
        f"with {name}, the error is divided by R outside the square root: sqrt(c (1 - c) / R).",
    )
    require(
        not (close(error, monte_carlo_error(expected, n_replicates)) and not close(error, wanted)),
        f"with {name}, R is the number of replicates that have an interval for that entry "
        f"(here {counted.tolist()}), not all {n_replicates}.",
    )
    require(
        close(error, wanted),
        f"with {name}, error {np.round(error, 4).tolist()} should be "
        f"{np.round(wanted, 4).tolist()}: sqrt(c (1 - c) / R) with c the coverage you found.",
    )


@exercise_checker(
    hints=(
        "For each entry, count the replicates whose interval holds the truth "
        "(lower <= truth <= upper) and divide by the number of replicates; the Monte-Carlo "
        "error of a share c measured on R replicates is sqrt(c (1 - c) / R).",
        "Work along axis 0 (the replicates), so that each entry keeps its own coverage. A "
        "replicate whose interval is NaN has no interval: leave it out of both the count and "
        "R (np.isfinite(lower) & np.isfinite(upper)), and keep the interval's ends in it.",
    )
)
def check_coverage_and_error(coverage_and_error: Callable) -> None:
    """`coverage_and_error(lower, upper, truth)` must return `(coverage, error)`, each of
    `truth`'s shape: per entry, the share of the replicates (axis 0) whose interval holds the
    truth, ends included, NaN intervals left out, and sqrt(c (1 - c) / R) with R the replicates
    that have an interval."""
    require_callable(coverage_and_error, "coverage_and_error")
    for name, lower, upper, truth in _cases():
        result = call_answer(
            coverage_and_error,
            lower.copy(),
            upper.copy(),
            truth.copy(),
            what="coverage_and_error(lower, upper, truth)",
        )
        require(
            isinstance(result, tuple) and len(result) == 2,
            f"coverage_and_error must return a pair (coverage, error); got {describe(result)}.",
        )
        try:
            share, error = (np.asarray(part, dtype=np.float64) for part in result)
        except (TypeError, ValueError):
            require(False, f"coverage and error must be arrays of numbers; got {describe(result)}.")
        _diagnose(name, share, error, lower, upper, truth)
