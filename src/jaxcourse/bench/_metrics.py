"""The benchmark's measures, as named numbers: P1, P2, P3 and the final-ELBO check.

No thresholds here: whether a number is good enough is for the reporting layer to say.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ._run import MethodRun

TARGET_SLACK_ULPS = 4
"""A curve counts as reaching the target ELBO within this many float32 rounding steps of it.

The curves are float32 sums of about a million terms; their rounding (a few parts in 1e7) is
below what matters here but above zero, and would otherwise decide ties. Final ELBOs are
compared in float64, without slack."""

P3_GAP_NATS = 0.5
"""P3 times how long a method takes to come within this many nats of the best known ELBO."""


class Metrics(NamedTuple):
    """The measures of one benchmark (None where undefined, e.g. without a reference run).

    Attributes:
        fastest: the level that first reaches the reference's final ELBO.
        P1: time for `fastest` to reach the reference's final ELBO over the time the reference
            took to reach it (compile excluded).
        P2: time per iteration of `P2_level` over the floor measured around its fit.
        P2_level: `fastest`, or the level with the cheapest iteration if none reached the target.
        P2_cheapest: the same ratio for the level with the cheapest iteration,
        P2_cheapest_level: that level.
        P3: time for the fastest level to come within `P3_GAP_NATS` of the best known ELBO,
            over the reference's time to do so.
        final_elbo_fastest: `fastest`'s final ELBO (float64).
        final_elbo_reference: the reference's final ELBO (float64).
        fastest_final_at_least_reference: whether the first is at least the second.
        first_call_ratio: the plain first call (`PLAIN_CALL` in a fresh process, compilation
            included) over the reference's first fit in its own fresh process, end to end
            (medians over the fresh processes of one run); set by `run_pln_benchmark`.
        first_call_ratio_cached: the same, with `PLAIN_CALL` reading a persistent
            compilation cache filled by an earlier process.
    """

    fastest: str | None = None
    P1: float | None = None
    P2: float | None = None
    P2_level: str | None = None
    P2_cheapest: float | None = None
    P2_cheapest_level: str | None = None
    P3: float | None = None
    final_elbo_fastest: float | None = None
    final_elbo_reference: float | None = None
    fastest_final_at_least_reference: bool | None = None
    first_call_ratio: float | None = None
    first_call_ratio_cached: float | None = None


def first_time_at_least(
    elbo: np.ndarray, times: np.ndarray, target: float, *, slack: float = 0.0
) -> float | None:
    """The first time at which `elbo` reaches `target - slack`, or None if it never does."""
    reached = np.flatnonzero(np.asarray(elbo) >= target - slack)
    return float(times[reached[0]]) if reached.size else None


def target_slack(target: float) -> float:
    """`TARGET_SLACK_ULPS` float32 rounding steps of `target`."""
    return TARGET_SLACK_ULPS * float(np.finfo(np.float32).eps) * abs(target)


def reference_run(runs: list[MethodRun]) -> MethodRun | None:
    """The reference method's run among `runs`, or None."""
    return next((run for run in runs if run.is_reference), None)


def with_time_to_target(runs: list[MethodRun], target: float) -> list[MethodRun]:
    """`runs`, each with the time its curve first came within `target_slack` of `target`."""
    slack = target_slack(target)
    return [
        run._replace(
            time_to_target_s=first_time_at_least(run.elbo, run.times_s, target, slack=slack)
        )
        for run in runs
    ]


def _per_floor(run: MethodRun, floor_s: float) -> float:
    return run.per_iteration_s / (run.floor_s or floor_s)


def compute_metrics(
    runs: list[MethodRun], floor_s: float, *, best_known_elbo: float | None = None
) -> Metrics:
    """P1-P3 and the final-ELBO check from the runs of one benchmark (see `Metrics`).

    Args:
        runs: the runs, with `time_to_target_s` set (`with_time_to_target`).
        floor_s: the floor for a run that carries none of its own (`MethodRun.floor_s`).
        best_known_elbo: the best ELBO known on these data, for P3 (None: no P3).
    """
    levels = [run for run in runs if not run.is_reference]
    reference = reference_run(runs)
    reached = [(run.time_to_target_s, run) for run in levels if run.time_to_target_s is not None]
    fastest_s, fastest = min(reached, key=lambda pair: pair[0]) if reached else (None, None)
    metrics = Metrics(fastest=None if fastest is None else fastest.name)
    if fastest_s is not None and reference and reference.time_to_target_s:
        metrics = metrics._replace(P1=fastest_s / reference.time_to_target_s)
    if levels:
        cheapest = min(levels, key=lambda run: run.per_iteration_s)
        judged = fastest or cheapest
        metrics = metrics._replace(
            P2=_per_floor(judged, floor_s),
            P2_level=judged.name,
            P2_cheapest=_per_floor(cheapest, floor_s),
            P2_cheapest_level=cheapest.name,
        )
    if best_known_elbo is not None and reference is not None:
        goal = best_known_elbo - P3_GAP_NATS
        times = [first_time_at_least(run.elbo, run.times_s, goal) for run in levels]
        ours = [t for t in times if t is not None]
        theirs = first_time_at_least(reference.elbo, reference.times_s, goal)
        if ours and theirs:
            metrics = metrics._replace(P3=min(ours) / theirs)
    if fastest is not None and reference is not None:
        metrics = metrics._replace(
            final_elbo_fastest=fastest.final_elbo,
            final_elbo_reference=reference.final_elbo,
            fastest_final_at_least_reference=bool(fastest.final_elbo >= reference.final_elbo),
        )
    return metrics
