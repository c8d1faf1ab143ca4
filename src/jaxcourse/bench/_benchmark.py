"""The PLN benchmark: every method of `METHODS` on the same data, in one process.

`run_pln_benchmark` returns plain data (ELBO-versus-time curves, per-iteration and compile
times, the measured floor, the environment, the measures P1-P3) and prints nothing;
`python -m jaxcourse.bench pln` prints and saves it. ELBOs are in the exact log-factorial
convention unless a field says `stirling` (pyPLNmodels' convention: exact +
`stirling_correction(counts)`).
"""

from __future__ import annotations

import contextlib
from typing import Any, Callable

from ..config import blas_threads as current_blas_threads
from ..config import limit_blas_threads
from ..pln import PLNData, stirling_correction
from ..environment import environment, versions
from ._floor import combine_floors, measure_floor
from ._methods import Method, select_methods
from ._metrics import compute_metrics, reference_run, with_time_to_target
from ._run import MethodRun, run_method
from ._sizes import SIZES, best_known_elbo, load_size


def run_pln_benchmark(
    size: str = "oaks",
    *,
    n_iter: int = 600,
    repeat: int = 1,
    methods: list[str] | None = None,
    level0_max_iter: int | None = None,
    blas_threads: int | None = 1,
    progress: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """Runs the methods of `METHODS` on one data set and returns everything measured.

    Each method is the call `Method.describe` spells out; the reference (pyPLNmodels) runs
    its default fit, whose final ELBO is the target of the others.

    Args:
        size: `tiny`, `oaks` (n = 116) or `oaks100` (n = 11600).
        n_iter: the iteration budget of the levels (a maximum for those that stop on a
            tolerance; the eager level 0 gets at most `EAGER_MAX_ITER_LARGE` above
            `LARGE_N_SAMPLES` samples).
        repeat: timed fits per method after one warm-up (the median is reported).
        methods: names from `method_names()` (all by default).
        level0_max_iter: at most this many iterations for the eager level 0.
        blas_threads: the most threads BLAS and LAPACK may use while the benchmark runs
            (`config.limit_blas_threads`; pyPLNmodels' torch uses its own libraries), or None
            to leave the process as it is.
        progress: called with a short message as each method starts (e.g. print to stderr).

    Returns:
        A JSON-ready dict: `environment`, `versions`, `blas_threads` (per library), sizes,
        `floor`, `target_elbo`, `runs` (one dict per method, with `times_s` and `elbo`
        lists), and `metrics` (`Metrics` as a dict).
    """
    selected = select_methods(methods)
    if repeat < 1 or n_iter < 1:
        raise ValueError("repeat and n_iter must be at least 1.")
    data = load_size(size)
    say = progress or (lambda message: None)
    limit = contextlib.nullcontext() if blas_threads is None else limit_blas_threads(blas_threads)
    with limit:
        say(f"floor ({size}: n={data.n_samples}, p={data.n_species})")
        runs, floors = _run_all(selected, data, n_iter, repeat, level0_max_iter, say)
        return _results(size, data, n_iter, repeat, runs, combine_floors(floors))


def _run_all(selected: tuple[Method, ...], data: PLNData, n_iter, repeat, eager_max_iter, say):
    floors = [measure_floor(data)]
    runs: list[MethodRun] = []
    for method in selected:
        say(method.name)
        if method.is_reference:  # not JAX: no floor to compare it with
            runs.append(run_method(method, data, n_iter))
            continue
        # The machine's speed drifts over a run; P2 compares each fit with the floor measured
        # around it, in the same conditions.
        before = measure_floor(data)
        run = run_method(method, data, n_iter, repeat=repeat, eager_max_iter=eager_max_iter)
        after = measure_floor(data)
        floors += [before, after]
        runs.append(run._replace(floor_s=0.5 * (before["median_s"] + after["median_s"])))
    return runs, floors


def _results(size, data, n_iter, repeat, runs, floor) -> dict[str, Any]:
    correction = stirling_correction(data.counts)
    reference = reference_run(runs)
    target = None if reference is None else reference.final_elbo
    if target is not None:
        runs = with_time_to_target(runs, target)
    # P3 on oaks itself only: on stacked copies, 0.5 nats is below float32's resolution of the ELBO.
    p3_best = best_known_elbo(size) if SIZES[size] == 1 else None
    metrics = compute_metrics(runs, floor["median_s"], best_known_elbo=p3_best)
    return {
        "size": size,
        "n_samples": data.n_samples,
        "n_species": data.n_species,
        "n_iter": n_iter,
        "repeat": repeat,
        "convention": "ELBOs use exact log-factorials; *_stirling fields add stirling_correction "
        "(pyPLNmodels' convention)",
        "stirling_correction": correction,
        "target_elbo": target,
        "target_elbo_stirling": None if target is None else target + correction,
        "best_known_elbo": best_known_elbo(size),
        "floor": floor,
        "environment": environment(),
        "versions": versions(),
        "blas_threads": current_blas_threads(),
        "runs": [_run_as_dict(run, correction) for run in runs],
        "metrics": metrics._asdict(),
    }


def _run_as_dict(run: MethodRun, correction: float) -> dict[str, Any]:
    row = run._asdict()
    row["times_s"] = [float(t) for t in run.times_s]
    row["elbo"] = [float(e) for e in run.elbo]
    row["final_elbo_stirling"] = run.final_elbo + correction
    row["final_trace_elbo"] = float(run.elbo[-1])
    return row
