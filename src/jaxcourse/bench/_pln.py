"""The PLN benchmark: every fitting level and pyPLNmodels on the same data, in one process.

`run_pln_benchmark` returns plain data (ELBO-versus-time curves, per-iteration and compile
times, the measured floor, the environment) and prints nothing; `python -m jaxcourse.bench
pln` prints and saves it. ELBOs are in the exact log-factorial convention unless a field
says `stirling` (pyPLNmodels' convention: exact + `stirling_correction(counts)`).
"""

from __future__ import annotations

import contextlib
import csv
import math
from importlib import metadata
from typing import Any, Callable, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from ..config import blas_threads as current_blas_threads
from ..config import limit_blas_threads
from ._environment import environment
from ..tracecount import count_compilations
from ._timing import time_call

SIZES = {"tiny": None, "oaks": 1, "oaks100": 100}
"""Benchmark sizes: copies of oaks stacked (`tiny` is a small simulated data set, for tests)."""

BEST_KNOWN_ELBO_OAKS = -32026.02
"""The best ELBO known on oaks (exact convention; -31456.36 in pyPLNmodels' Stirling one)."""

LEVEL0_MAX_ITER_LARGE = 20
"""Level 0 runs JAX op by op; above `LARGE_N_SAMPLES` samples it runs only this many iterations."""

LARGE_N_SAMPLES = 1000

TARGET_SLACK_ULPS = 4
"""A trace counts as reaching the target ELBO within this many float32 rounding steps of it.

The traces are float32 sums of about a million terms; their rounding (a few parts in 1e7) is
below what matters here but above zero, and would otherwise decide ties. Final ELBOs are
compared in float64, without slack."""


class MethodRun(NamedTuple):
    """One method's benchmark run.

    Attributes:
        name: the label ("level 5", "pyPLNmodels", ...).
        optimizer: a description of the optimizer it ran.
        n_iter: the iteration budget it was given.
        n_steps: iterations it ran (fewer when it stopped on its tolerance).
        compile_s: seconds JAX spent tracing, lowering and compiling during the first call
            (its own monitoring events), from empty caches; None for pyPLNmodels.
        run_s: median wall time of one complete fit after the warm-up (compile excluded).
        per_iteration_s: `run_s / n_steps`.
        times_s: `(n_steps,)` wall time at which each ELBO of the trace was reached.
        elbo: `(n_steps,)` the ELBO trace (exact convention).
        final_elbo: the ELBO of the returned parameters, re-evaluated in float64.
        time_to_target_s: time at which the trace first reached the target ELBO, or None.
        note: anything a reader must know (e.g. fewer iterations).
        floor_s: the floor measured around this method's timing (the mean of the medians
            measured just before and just after it), for P2; None for pyPLNmodels.
    """

    name: str
    optimizer: str
    n_iter: int
    n_steps: int
    compile_s: float | None
    run_s: float
    per_iteration_s: float
    times_s: np.ndarray
    elbo: np.ndarray
    final_elbo: float
    time_to_target_s: float | None
    note: str
    floor_s: float | None = None


def _versions() -> dict[str, str]:
    versions = {}
    for package in ("jax", "jaxlib", "optax", "torch", "pyPLNmodels", "numpy"):
        try:
            versions[package] = metadata.version(package)
        except metadata.PackageNotFoundError:
            versions[package] = "not installed"
    return versions


def load_size(size: str):
    """The `PLNData` of a benchmark size: `tiny`, `oaks` or `oaks100`."""
    from ..pln import load_oaks, simulate

    if size not in SIZES:
        raise ValueError(f"size must be one of {sorted(SIZES)}, got {size!r}.")
    if size == "tiny":
        return simulate(40, 6, key=jax.random.key(0)).data
    return load_oaks(SIZES[size])


def float64_profiled_elbo(data, variational) -> float:
    """The profiled ELBO (exact convention) of `variational`, evaluated in float64."""
    from ..pln import Variational, as_float64, profiled_elbo

    with jax.enable_x64(True):  # any pair (M, S), e.g. pyPLNmodels' as a tuple
        return float(profiled_elbo(as_float64(data), Variational(*as_float64(tuple(variational)))))


def first_time_at_least(
    elbo: np.ndarray, times: np.ndarray, target: float, *, slack: float = 0.0
) -> float | None:
    """The first time at which `elbo` reaches `target - slack`, or None if it never does."""
    reached = np.flatnonzero(np.asarray(elbo) >= target - slack)
    return float(times[reached[0]]) if reached.size else None


def measure_floor(data, *, repeat: int | None = None, seconds: float = 0.25) -> dict[str, float]:
    """Times the unavoidable work of one ELBO evaluation: two `(n, p) x (p, p)` products and
    one exp pass over `(n, p)`, as one jitted call (median and best of `repeat`, seconds).

    By default `repeat` is chosen so that the timed calls last about `seconds` (10 to 500
    calls): a median over a few milliseconds of a noisy machine is itself noise.
    """
    n_species = data.n_species
    mean = jnp.log1p(data.counts) - data.offsets
    sqrt_var = jnp.full_like(mean, 0.5)
    weights = jnp.eye(n_species, dtype=mean.dtype)

    @jax.jit
    def floor_work(offsets, mean, sqrt_var, weights):
        rate = jnp.exp(offsets + mean + 0.5 * sqrt_var * sqrt_var)
        return mean.T @ mean, mean @ weights, rate

    arguments = (data.offsets, mean, sqrt_var, weights)
    if repeat is None:
        first = time_call(floor_work, *arguments, repeat=3, name="floor")
        repeat = int(np.clip(np.ceil(seconds / max(first.median_s, 1e-9)), 10, 500))
    timing = time_call(floor_work, *arguments, repeat=repeat, name="floor")
    return {"median_s": timing.median_s, "min_s": timing.min_s, "repeats": repeat}


def _run_level(name, fit, data, n_iter, *, repeat, optimizer_name, note="", **kwargs) -> MethodRun:
    with count_compilations() as clock:
        timing = time_call(fit, data, n_iter, repeat=repeat, warmup=1, name=name, **kwargs)
    result = fit(data, n_iter, **kwargs)
    n_steps = n_iter if result.n_steps is None else int(result.n_steps)
    trace = np.asarray(result.elbo_trace, dtype=np.float64)[:n_steps]
    run_s = timing.median_s
    per_iteration = run_s / n_steps
    # A compiled loop runs each iteration at the same cost, so the k-th ELBO is reached
    # at (k + 1) / n_steps of the measured run time. Iterations whose ELBO was not computed
    # (`monitor_every`) are left out of the curve.
    times = per_iteration * np.arange(1, n_steps + 1)
    computed = np.isfinite(trace)
    times, trace = times[computed], trace[computed]
    compile_s = clock.seconds
    return MethodRun(
        name=name,
        optimizer=optimizer_name,
        n_iter=n_iter,
        n_steps=n_steps,
        compile_s=compile_s,
        run_s=run_s,
        per_iteration_s=per_iteration,
        times_s=times,
        elbo=trace,
        final_elbo=float64_profiled_elbo(data, result.variational),
        time_to_target_s=None,
        note=note,
    )


def _run_pyplnmodels(data, n_iter: int, correction: float) -> MethodRun:
    from ..pln import fit_pyplnmodels

    reference = fit_pyplnmodels(data, maxiter=n_iter)
    model, run_s = reference.model, reference.seconds
    monitor = model._elbo_criterion_monitor  # its recorded trace: ELBO before each step
    elbo_stirling = np.array([float(value) for value in monitor.elbo_list])
    times = np.asarray(model._time_recorder.running_times, dtype=np.float64)
    variational = (model._latent_mean.detach().numpy(), model._latent_sqrt_variance.detach().numpy())
    return MethodRun(
        name="pyPLNmodels",
        optimizer="torch.optim.Rprop(lr=0.01, step_sizes=(1e-10, 50)), float32",
        n_iter=n_iter,
        n_steps=len(elbo_stirling),
        compile_s=None,
        run_s=run_s,
        per_iteration_s=run_s / len(elbo_stirling),
        times_s=times,
        elbo=elbo_stirling - correction,
        final_elbo=float64_profiled_elbo(data, variational),
        time_to_target_s=None,
        note="times recorded by pyPLNmodels itself (initialisation included)",
    )


def default_methods() -> list[str]:
    """Every method the benchmark can run, in order."""
    return ["level 0", "level 1", "level 2", "level 3", "level 4", "level 5", "level 5 + Newton-Rprop", "level 5 + Newton momentum", "level 6", "pyPLNmodels"]


MONITOR_EVERY = 5
"""How often the benchmark's Newton-momentum fit computes its ELBO (`level5.fit(monitor_every=)`).
The step never needs the ELBO's value, and its Poisson part is a pass over every entry with a
`log`; every 5 iterations keeps a dense curve at a fifth of that cost."""

PYPLNMODELS_MAXITER = 400
"""pyPLNmodels' default `maxiter`: its default fit defines the target ELBO."""


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
    """Runs the PLN levels and pyPLNmodels on one data set and returns everything measured.

    Levels 0-4 run pyPLNmodels' own algorithm (torch-exact Rprop, lr 0.01, on the same
    gradient), so they differ from it only in how the computation is organised. Levels 5
    and 6 run their defaults (Rprop on the analytic profiled gradient, stopping on their
    tolerance); "level 5 + Newton-Rprop" and "level 5 + Newton momentum" swap in
    `optim.newton_rprop` and `optim.newton_momentum`, and the latter computes its ELBO every
    `MONITOR_EVERY` iterations (its curve has a point at each of those).

    Args:
        size: `tiny`, `oaks` (n = 116) or `oaks100` (n = 11600).
        n_iter: the iteration budget of levels 0-6 (a maximum for levels 5 and 6, which stop
            on their tolerance; level 0 gets at most `LEVEL0_MAX_ITER_LARGE` above
            `LARGE_N_SAMPLES` samples). pyPLNmodels runs its default fit
            (`PYPLNMODELS_MAXITER` iterations), whose final ELBO is the target.
        repeat: timed fits per method after one warm-up (the median is reported).
        methods: a subset of `default_methods()`.
        level0_max_iter: at most this many iterations for the eager level 0 (by default
            `LEVEL0_MAX_ITER_LARGE` above `LARGE_N_SAMPLES` samples, else `n_iter`).
        blas_threads: the most threads BLAS and LAPACK may use while the benchmark runs
            (`config.limit_blas_threads`; pyPLNmodels' torch uses its own libraries), or None
            to leave the process as it is.
        progress: called with a short message as each method starts (e.g. print to stderr).

    Returns:
        A JSON-ready dict: `environment`, `versions`, `blas_threads` (per library), sizes,
        `floor`, `target_elbo`, `runs` (one dict per method, with `times_s` and `elbo`
        lists), and `ratios`.
    """
    limit = contextlib.nullcontext() if blas_threads is None else limit_blas_threads(blas_threads)
    with limit:
        return _run_pln_benchmark(size, n_iter, repeat, methods, level0_max_iter, progress)


def _run_pln_benchmark(size, n_iter, repeat, methods, level0_max_iter, progress) -> dict[str, Any]:
    from .. import optim
    from ..pln import level0, level1, level2, level3, level4, level5, level6, stirling_correction

    methods = default_methods() if methods is None else list(methods)
    unknown = set(methods) - set(default_methods())
    if unknown:
        raise ValueError(f"unknown methods {sorted(unknown)}; choose from {default_methods()}.")
    if repeat < 1 or n_iter < 1:
        raise ValueError("repeat and n_iter must be at least 1.")
    say = progress or (lambda message: None)
    data = load_size(size)
    correction = stirling_correction(data.counts)
    large = data.n_samples > LARGE_N_SAMPLES
    reference = optim.PYPLNMODELS_RPROP
    reference_name = "optim.rprop(0.01, step_sizes=(1e-10, 50)) (pyPLNmodels' settings)"
    plans = {
        "level 0": (level0.fit, {"optimizer": reference}, reference_name),
        "level 1": (level1.fit, {"optimizer": reference}, reference_name),
        "level 2": (level2.fit, {"optimizer": reference}, reference_name),
        "level 3": (level3.fit, {"optimizer": reference}, reference_name),
        "level 4": (level4.fit, {"optimizer": reference}, reference_name),
        "level 5": (level5.fit, {}, "level5.DEFAULT_OPTIMIZER: optim.rprop(0.1, step_sizes=(1e-10, 50))"),
        "level 5 + Newton-Rprop": (level5.fit, {"optimizer": level5.NEWTON_RPROP}, "optim.newton_rprop()"),
        "level 5 + Newton momentum": (
            level5.fit,
            {"optimizer": level5.NEWTON_MOMENTUM, "monitor_every": MONITOR_EVERY},
            f"optim.newton_momentum(1.0, momentum=0.9), ELBO every {MONITOR_EVERY} iterations",
        ),
        "level 6": (level6.fit, {}, f"as level 5, samples split over {jax.device_count()} device(s)"),
    }

    say(f"floor ({size}: n={data.n_samples}, p={data.n_species})")
    floors = [measure_floor(data)]
    runs: list[MethodRun] = []
    for name in methods:
        say(name)
        if name == "pyPLNmodels":
            runs.append(_run_pyplnmodels(data, PYPLNMODELS_MAXITER, correction))
            continue
        fit, kwargs, optimizer_name = plans[name]
        before = measure_floor(data)
        # A fit compiled earlier in this process (by a page, or by another method with the
        # same settings) would otherwise be a cache hit and report a compile time of zero.
        jax.clear_caches()
        budget, note = n_iter, ""
        level0_cap = level0_max_iter or (LEVEL0_MAX_ITER_LARGE if large else n_iter)
        if name == "level 0" and n_iter > level0_cap:
            budget = level0_cap
            note = f"eager and slow: only {budget} iterations"
        if name == "level 6" and data.n_samples % jax.device_count():
            kwargs = {**kwargs, "mesh": level6.sample_mesh(1)}
            note = "one device: the samples do not split evenly over all of them"
        run = _run_level(name, fit, data, budget, repeat=repeat, optimizer_name=optimizer_name, note=note, **kwargs)
        # The machine's speed drifts over a run; P2 compares each fit with the floor measured
        # around it, in the same conditions.
        after = measure_floor(data)
        floors += [before, after]
        runs.append(run._replace(floor_s=0.5 * (before["median_s"] + after["median_s"])))
    floor = {
        "median_s": float(np.median([f["median_s"] for f in floors])),
        "min_s": float(min(f["min_s"] for f in floors)),
        "repeats": sum(f["repeats"] for f in floors),
        "measurements": len(floors),
    }

    by_name = {run.name: run for run in runs}
    target = by_name["pyPLNmodels"].final_elbo if "pyPLNmodels" in by_name else None
    slack = TARGET_SLACK_ULPS * float(np.finfo(np.float32).eps) * abs(target) if target is not None else 0.0
    if target is not None:
        runs = [
            run._replace(time_to_target_s=first_time_at_least(run.elbo, run.times_s, target, slack=slack))
            for run in runs
        ]
        by_name = {run.name: run for run in runs}
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
        "target_slack": slack,
        "best_known_elbo": BEST_KNOWN_ELBO_OAKS * SIZES[size] if SIZES.get(size) else None,
        "floor": floor,
        "environment": environment(),
        "versions": _versions(),
        "blas_threads": current_blas_threads(),
        "runs": [_run_as_dict(run, correction) for run in runs],
        "ratios": compute_ratios(runs, floor, size=size, target=target),
    }


def _run_as_dict(run: MethodRun, correction: float) -> dict[str, Any]:
    row = run._asdict()
    row["times_s"] = [float(t) for t in run.times_s]
    row["elbo"] = [float(e) for e in run.elbo]
    row["final_elbo_stirling"] = run.final_elbo + correction
    row["final_trace_elbo"] = float(run.elbo[-1])
    return row


def compute_ratios(runs: list[MethodRun], floor: dict, *, size: str, target: float | None) -> dict[str, Any]:
    """P1-P3 and the final-ELBO check, from the runs of one benchmark (None where undefined).

    P1: time for the fastest level to reach pyPLNmodels' final ELBO, over the time
        pyPLNmodels took to reach it (compile excluded).
    P2: the time per iteration of the fastest level (the one that reaches pyPLNmodels' final
        ELBO first; the cheapest iteration if none does), over the floor measured around that
        level's fit (`MethodRun.floor_s`; `floor["median_s"]` for a run without one).
        `P2_cheapest` is the same ratio for the level with the cheapest iteration.
    P3 (oaks only): time to come within 0.5 nats of the best known ELBO, fastest level over
        pyPLNmodels.
    """
    levels = [run for run in runs if run.name != "pyPLNmodels"]
    reference = next((run for run in runs if run.name == "pyPLNmodels"), None)
    reached = [run for run in levels if run.time_to_target_s is not None]
    fastest = min(reached, key=lambda run: run.time_to_target_s) if reached else None
    ratios: dict[str, Any] = {"fastest": None if fastest is None else fastest.name}
    ratios["P1"] = (
        fastest.time_to_target_s / reference.time_to_target_s
        if fastest and reference and reference.time_to_target_s
        else None
    )
    if levels:
        cheapest = min(levels, key=lambda run: run.per_iteration_s)
        judged = fastest or cheapest
        ratios["P2"] = judged.per_iteration_s / (judged.floor_s or floor["median_s"])
        ratios["P2_level"] = judged.name
        ratios["P2_cheapest"] = cheapest.per_iteration_s / (cheapest.floor_s or floor["median_s"])
        ratios["P2_cheapest_level"] = cheapest.name
    ratios["P3"] = None
    if size == "oaks" and reference is not None:
        goal = BEST_KNOWN_ELBO_OAKS - 0.5
        ours = [first_time_at_least(run.elbo, run.times_s, goal) for run in levels]
        ours = [t for t in ours if t is not None]
        theirs = first_time_at_least(reference.elbo, reference.times_s, goal)
        if ours and theirs:
            ratios["P3"] = min(ours) / theirs
    if fastest is not None and reference is not None:
        ratios["final_elbo_fastest"] = fastest.final_elbo
        ratios["final_elbo_pyplnmodels"] = reference.final_elbo
        ratios["fastest_final_at_least_pyplnmodels"] = bool(fastest.final_elbo >= reference.final_elbo)
    return ratios


def summary_line(results: dict[str, Any]) -> str:
    """One line with P1-P3 and the final-ELBO check."""
    r = results["ratios"]

    def fmt(value):
        return "n/a" if value is None or (isinstance(value, float) and math.isnan(value)) else f"{value:.3f}"

    final = r.get("fastest_final_at_least_pyplnmodels")
    return (
        f"[{results['size']}] fastest={r.get('fastest')} P1={fmt(r.get('P1'))} (<=0.2) "
        f"P2={fmt(r.get('P2'))} ({r.get('P2_level')}, <=2) P3={fmt(r.get('P3'))} (<1) "
        f"final>=pyPLNmodels: {final}"
    )


def write_csv(results: dict[str, Any], path) -> None:
    """One row per method and iteration: name, iteration, time (s), ELBO exact and Stirling."""
    correction = results["stirling_correction"]
    with open(path, "w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["method", "iteration", "time_s", "elbo", "elbo_stirling"])
        for run in results["runs"]:
            for k, (t, e) in enumerate(zip(run["times_s"], run["elbo"])):
                writer.writerow([run["name"], k, f"{t:.6g}", f"{e:.10g}", f"{e + correction:.10g}"])


def runs_table(results: dict[str, Any]):
    """A pandas DataFrame: one row per method (times in ms, except time to target in s)."""
    import pandas as pd

    rows = []
    for run in results["runs"]:
        rows.append(
            {
                "method": run["name"],
                "iterations": run["n_steps"],
                "per iteration (ms)": 1e3 * run["per_iteration_s"],
                "compile (s)": run["compile_s"],
                "fit (s)": run["run_s"],
                "to pyPLNmodels' ELBO (s)": run["time_to_target_s"],
                "final ELBO (Stirling)": run["final_elbo_stirling"],
                "note": run["note"],
            }
        )
    return pd.DataFrame(rows).set_index("method")



def plot_elbo_vs_time(results: dict[str, Any], ax=None):
    """ELBO-versus-wall-time curves of every run, as the gap below the best ELBO any run reached.

    The gap is never negative (it is measured from the best value), so a log scale is safe;
    gaps under 1e-3 nats are drawn at 1e-3. Returns the matplotlib Axes.
    """
    import matplotlib.pyplot as plt

    if ax is None:
        _, ax = plt.subplots(figsize=(7.5, 4.5))
    best = max(max(run["elbo"]) for run in results["runs"])
    for run in results["runs"]:
        gap = np.maximum(best - np.asarray(run["elbo"]), 1e-3)
        style = {"color": "black", "linewidth": 2.5} if run["name"] == "pyPLNmodels" else {}
        ax.plot(run["times_s"], gap, label=run["name"], **style)
    if results["target_elbo"] is not None:
        ax.axhline(max(best - results["target_elbo"], 1e-3), color="grey", linestyle=":", label="pyPLNmodels' final ELBO")
    ax.set(xscale="log", yscale="log", xlabel="wall time (s, compilation excluded)", ylabel="nats below the best ELBO")
    ax.legend(fontsize=8, ncol=2)
    return ax


def summary_markdown(results: dict[str, Any]) -> str:
    """A paragraph for a page: the floor, P1-P2 and the final-ELBO check, all from `results`."""
    ratios, floor, env = results["ratios"], results["floor"], results["environment"]
    runs = {run["name"]: run for run in results["runs"]}
    parts = [
        f"The floor measured on this machine is {1e3 * floor['median_s']:.3g} ms "
        f"(the median of {floor['measurements']} measurements, around every fit)."
    ]
    if ratios.get("P2_level"):
        judged = runs[ratios["P2_level"]]
        sentence = (
            f"An iteration of {judged['name']} takes {1e3 * judged['per_iteration_s']:.3g} ms, "
            f"or {ratios['P2']:.2f} floors measured around that fit"
        )
        if ratios["P2_cheapest_level"] != judged["name"]:
            cheapest = runs[ratios["P2_cheapest_level"]]
            sentence += (
                f"; the cheapest iteration is {cheapest['name']}'s, "
                f"{1e3 * cheapest['per_iteration_s']:.3g} ms ({ratios['P2_cheapest']:.2f} floors)"
            )
        parts.append(sentence + ".")
    reference = runs.get("pyPLNmodels")
    fastest = runs.get(ratios.get("fastest"))
    if fastest is None:
        parts.append("No level reached pyPLNmodels' final ELBO within its iteration budget.")
    elif reference is not None:
        parts.append(
            f"The fastest to reach pyPLNmodels' final ELBO is {fastest['name']}, after "
            f"{fastest['time_to_target_s']:.3g} s, against {reference['time_to_target_s']:.3g} s for "
            f"pyPLNmodels itself ({ratios['P1']:.2f} of its time; compilation, "
            f"{fastest['compile_s']:.2g} s, apart)."
        )
        verdict = "at least" if ratios["fastest_final_at_least_pyplnmodels"] else "below"
        parts.append(
            f"Its final ELBO, {fastest['final_elbo_stirling']:.2f}, is {verdict} pyPLNmodels' "
            f"{reference['final_elbo_stirling']:.2f} (Stirling convention, both re-evaluated in float64)."
        )
    versions = ", ".join(f"{name} {version}" for name, version in results["versions"].items() if name != "jax")
    parts.append(f"Measured on {env['device']} ({env['backend']}) with jax {env['jax']}, {versions}.")
    return " ".join(parts)
