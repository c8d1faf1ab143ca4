"""The PLN benchmark: every method of `METHODS` on the same data, in one process.

`run_pln_benchmark` returns plain data (ELBO-versus-time curves, per-iteration and compile
times, the measured floor, the environment, the measures P1-P3) and prints nothing;
`python -m jaxcourse.bench pln` prints and saves it. ELBOs are in the exact log-factorial
convention unless a field says `stirling` (pyPLNmodels' convention: exact +
`stirling_correction(counts)`).
"""

from __future__ import annotations

import contextlib
import tempfile
from collections.abc import Callable
from typing import Any

import numpy as np

from ..config import blas_threads as current_blas_threads
from ..config import limit_blas_threads
from ..environment import environment, versions
from ..pln import PLNData, stirling_correction
from ._floor import combine_floors, measure_floor
from ._fresh import run_fresh
from ._methods import METHODS, PLAIN_CALL, Method, method_card, select_methods
from ._metrics import compute_metrics, reference_run, with_time_to_target
from ._run import MethodRun, run_method, run_reference
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
    cold_repeat: int = 1,
    cold_methods: list[str] | None = None,
    reference_repeat: int | None = None,
    reference_cold_repeat: int | None = None,
    first_call_cache: bool = True,
    torch_threads: int | None = None,
) -> dict[str, Any]:
    """Runs the methods of `METHODS` on one data set and returns everything measured.

    Each method is the call `Method.describe` spells out; the reference (pyPLNmodels) runs
    its default fit, whose final ELBO is the target of the others.

    Args:
        size: `tiny`, `oaks` (n = 116), `oaks100` (n = 11600) or `microcosm` (n = 921, p = 1209).
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
        cold_repeat: fresh processes in which the first call of each method of
            `cold_methods` is timed (compilation included), and in which the reference runs.
        cold_methods: the JAX methods timed cold (all by default; `[]` for none).
        reference_repeat: warm fits of the reference after its cold one (`repeat` by default).
        reference_cold_repeat: fresh processes the reference runs in (`cold_repeat` by
            default, at least 1).
        first_call_cache: also time `PLAIN_CALL`'s first call in two fresh processes that
            share a new persistent compilation cache (the first fills it, the second reads it).
        torch_threads: torch's threads in the reference's processes (by default the cores
            this process may use, as JAX's CPU backend does); recorded in the run's `device`.

    Returns:
        A JSON-ready dict: `environment`, `versions`, `blas_threads` (per library), sizes,
        `floor`, `target_elbo`, `runs` (one dict per method, with `times_s` and `elbo`
        lists), `metrics` (`Metrics` as a dict), `methods` (`method_card` and device of
        every method of `METHODS`, "not run" for those not selected) and `fits` (name -> final (M, S) as NumPy arrays; not JSON, the CLI drops it).
    """
    selected = select_methods(methods)
    if repeat < 1 or n_iter < 1 or cold_repeat < 0:
        raise ValueError("repeat and n_iter must be at least 1, and cold_repeat at least 0.")
    cold = {
        m.name for m in (selected if cold_methods is None else select_methods(list(cold_methods)))
    }
    data = load_size(size)
    say = progress or (lambda message: None)
    limit = contextlib.nullcontext() if blas_threads is None else limit_blas_threads(blas_threads)
    with limit:
        say(f"floor ({size}: n={data.n_samples}, p={data.n_species})")
        plan = {
            "cold": cold,
            "cold_repeat": cold_repeat,
            "reference_repeat": reference_repeat or repeat,
            "reference_cold_repeat": max(
                cold_repeat if reference_cold_repeat is None else reference_cold_repeat, 1
            ),
            "torch_threads": torch_threads,
        }
        runs, floors = _run_all(selected, data, n_iter, repeat, level0_max_iter, say, plan)
        results = _results(size, data, n_iter, repeat, runs, combine_floors(floors))
        devices = {run.name: run.device for run in runs}
        results["methods"] = [
            {**method_card(m), "device": devices.get(m.name, "not run")} for m in METHODS
        ]
        results["fits"] = {run.name: run.variational for run in runs}
    if first_call_cache and PLAIN_CALL in {m.name for m in selected}:
        say(f"{PLAIN_CALL}: first calls with a persistent compilation cache")
        results["first_call_cached_s"] = cached_first_calls(data, PLAIN_CALL, n_iter)
    results["metrics"].update(first_call_ratios(results))
    return results


def cached_first_calls(data: PLNData, method: str, n_iter: int) -> dict[str, float]:
    """The first call of `method` in two fresh processes sharing a new, empty persistent
    compilation cache: `fill_s` (it compiles and writes the cache) and `hit_s` (it reads it)."""
    with tempfile.TemporaryDirectory(prefix="jaxcourse-cache-") as folder:
        fill, hit = (
            run_fresh("jax", [data], n_iter=n_iter, method=method, cache_dir=folder)
            for _ in range(2)
        )
    return {"fill_s": fill.fits[0].times_s[0], "hit_s": hit.fits[0].times_s[0]}


def first_call_ratios(results: dict[str, Any]) -> dict[str, float | None]:
    """`first_call_ratio`: the median cold first call of `PLAIN_CALL` over the median cold
    (first, end-to-end) fit of the reference, both from fresh processes of this run; and
    `first_call_ratio_cached`, the same with `PLAIN_CALL` reading a persistent cache."""
    runs = {run["name"]: run for run in results["runs"]}
    plain, reference = (
        runs.get(PLAIN_CALL),
        next((r for r in results["runs"] if r["is_reference"]), None),
    )
    if not plain or not reference or not plain["cold_s"] or not reference["cold_s"]:
        return {"first_call_ratio": None, "first_call_ratio_cached": None}
    theirs = float(np.median(reference["cold_s"]))
    cached = results.get("first_call_cached_s")
    return {
        "first_call_ratio": float(np.median(plain["cold_s"])) / theirs,
        "first_call_ratio_cached": None if cached is None else cached["hit_s"] / theirs,
    }


def _run_all(
    selected: tuple[Method, ...], data: PLNData, n_iter, repeat, eager_max_iter, say, plan
):
    floors = [measure_floor(data)]
    runs: list[MethodRun] = []
    for method in selected:
        say(method.name)
        if method.is_reference:  # not JAX: no floor to compare it with
            runs.append(
                run_reference(
                    method,
                    data,
                    repeat=plan["reference_repeat"],
                    cold_repeat=plan["reference_cold_repeat"],
                    torch_threads=plan["torch_threads"],
                )
            )
            continue
        # The machine's speed drifts over a run; P2 compares each fit with the floor measured
        # around it, in the same conditions.
        before = measure_floor(data)
        cold_repeat = plan["cold_repeat"] if method.name in plan["cold"] else 0
        run = run_method(
            method,
            data,
            n_iter,
            repeat=repeat,
            eager_max_iter=eager_max_iter,
            cold_repeat=cold_repeat,
        )
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
    del row["variational"]  # arrays: kept in results["fits"], not in the JSON
    row["times_s"] = [float(t) for t in run.times_s]
    row["warm_s"], row["cold_s"] = list(run.warm_s), list(run.cold_s)
    row["elbo"] = [float(e) for e in run.elbo]
    row["final_elbo_stirling"] = run.final_elbo + correction
    row["final_trace_elbo"] = float(run.elbo[-1])
    return row
