"""Running one method of the benchmark: timing, its ELBO curve, and its final ELBO in float64."""

from __future__ import annotations

from typing import NamedTuple

import jax
import numpy as np

from ..pln import PLNData, Variational, as_float64, profiled_elbo
from ..tracecount import count_compilations
from ._methods import Method
from ..timing import time_call

EAGER_MAX_ITER_LARGE = 20
"""An eager method (level 0) runs JAX op by op; above `LARGE_N_SAMPLES` samples it runs only
this many iterations."""

LARGE_N_SAMPLES = 1000


class MethodRun(NamedTuple):
    """One method's benchmark run.

    Attributes:
        name: the method's name ("level 5", "pyPLNmodels", ...).
        description: the call that ran, every setting included (`Method.describe`); for the
            reference, the optimizer it reports.
        n_iter: the iteration budget it was given.
        n_steps: iterations it ran (fewer when it stopped on its tolerance).
        compile_s: seconds JAX spent tracing, lowering and compiling during the first call
            (its own monitoring events), from empty caches; None for the reference.
        run_s: median wall time of one complete fit after the warm-up (compile excluded).
        per_iteration_s: `run_s / n_steps`.
        times_s: `(k,)` wall time at which each ELBO of the curve was reached.
        elbo: `(k,)` the ELBO curve (exact convention; only the ELBOs the fit computed).
        final_elbo: the ELBO of the returned parameters, re-evaluated in float64.
        time_to_target_s: time at which the curve first reached the target ELBO, or None.
        note: anything a reader must know (e.g. fewer iterations).
        floor_s: the floor measured around this run (the mean of the medians just before and
            just after it), for P2; None for the reference.
        is_reference: whether this is the reference method's run (`Method.is_reference`).
    """

    name: str
    description: str
    n_iter: int
    n_steps: int
    compile_s: float | None
    run_s: float
    per_iteration_s: float
    times_s: np.ndarray
    elbo: np.ndarray
    final_elbo: float
    time_to_target_s: float | None = None
    note: str = ""
    floor_s: float | None = None
    is_reference: bool = False


def float64_profiled_elbo(data: PLNData, variational) -> float:
    """The profiled ELBO (exact convention) of `variational`, evaluated in float64."""
    with jax.enable_x64(True):  # any pair (M, S), e.g. pyPLNmodels' as a tuple
        return float(profiled_elbo(as_float64(data), Variational(*as_float64(tuple(variational)))))


def iteration_budget(method: Method, data: PLNData, n_iter: int, eager_max_iter: int | None) -> tuple[int, str]:
    """The iterations `method` runs and a note when it gets fewer than `n_iter`: an eager
    method gets at most `eager_max_iter` (by default `EAGER_MAX_ITER_LARGE` on large data)."""
    if not method.eager:
        return n_iter, ""
    cap = eager_max_iter or (EAGER_MAX_ITER_LARGE if data.n_samples > LARGE_N_SAMPLES else n_iter)
    if n_iter <= cap:
        return n_iter, ""
    return cap, f"eager and slow: only {cap} iterations"


def run_method(method: Method, data: PLNData, n_iter: int, *, repeat: int = 1, eager_max_iter: int | None = None) -> MethodRun:
    """Runs `method` on `data` and returns what it measured (no floor, no time to target yet).

    A level is timed with `time_call` (one warm-up, then the median of `repeat` fits) from
    empty compilation caches, and called once more for its trace. The reference fits once and
    reports the times it recorded itself.
    """
    if method.is_reference:
        return _run_reference(method, data)
    budget, note = iteration_budget(method, data, n_iter, eager_max_iter)
    options, adapted_note = method.adapt(data) if method.adapt else ({}, "")
    options = {**method.options, **options}
    # A fit compiled earlier in this process (by a page, or by another method with the same
    # settings) would otherwise be a cache hit and report a compile time of zero.
    jax.clear_caches()
    with count_compilations() as clock:
        timing = time_call(method.fit, data, budget, repeat=repeat, warmup=1, name=method.name, **options)
    result = method.fit(data, budget, **options)
    n_steps = int(result.n_steps)
    # trace[k] is the ELBO before step k; a fit that stopped early (n_steps < budget) also
    # evaluated the point it returns, trace[n_steps], which then belongs on the curve.
    n_points = min(n_steps + 1, budget)
    trace = np.asarray(result.elbo_trace, dtype=np.float64)[:n_points]
    per_iteration = timing.median_s / n_steps
    # A compiled loop runs each iteration at the same cost, so the k-th ELBO is reached at
    # (k + 1) / n_points of the measured run time. ELBOs the fit did not compute (NaN, see
    # `monitor_every`) are left out of the curve.
    times = timing.median_s / n_points * np.arange(1, n_points + 1)
    computed = np.isfinite(trace)
    return MethodRun(
        name=method.name,
        description=method.describe(options),
        n_iter=budget,
        n_steps=n_steps,
        compile_s=clock.seconds,
        run_s=timing.median_s,
        per_iteration_s=per_iteration,
        times_s=times[computed],
        elbo=trace[computed],
        final_elbo=float64_profiled_elbo(data, result.variational),
        note="; ".join(text for text in (note, adapted_note) if text),
    )


def _run_reference(method: Method, data: PLNData) -> MethodRun:
    trace = method.fit(data, **method.options)
    n_steps = len(trace.elbo)
    return MethodRun(
        name=method.name,
        description=trace.optimizer,
        n_iter=method.settings()["maxiter"],
        n_steps=n_steps,
        compile_s=None,
        run_s=trace.seconds,
        per_iteration_s=trace.seconds / n_steps,
        times_s=trace.times_s,
        elbo=trace.elbo,
        final_elbo=float64_profiled_elbo(data, trace.variational),
        note=f"times recorded by {method.name} itself (initialisation included)",
        is_reference=True,
    )
