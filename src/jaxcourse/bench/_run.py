"""Running one method of the benchmark: timing, its ELBO curve, and its final ELBO in float64."""

from __future__ import annotations

from typing import NamedTuple

import jax
import numpy as np

from ..pln import PLNData, Variational, as_float64, profiled_elbo
from ..timing import time_call
from ..tracecount import clear_compiled, count_compilations
from ._fresh import run_fresh
from ._methods import Method

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
        warm_s: wall time of every warm fit (the repeats behind `run_s`).
        cold_s: wall time of the first fit in each fresh process (`_fresh.run_fresh`):
            compilation, or torch's first-call costs, included; empty if not measured.
        import_s: seconds a fresh process took to start and import what it ran, if measured.
        device: where it computed: JAX's backend and device, or torch's device and threads.
        variational: the final `(n, p)` M and S as NumPy arrays (left out of the JSON).
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
    warm_s: tuple[float, ...] = ()
    cold_s: tuple[float, ...] = ()
    import_s: float | None = None
    device: str = ""
    variational: tuple | None = None


_compiled_profiled_elbo = jax.jit(profiled_elbo)


def float64_profiled_elbo(data: PLNData, variational) -> float:
    """The profiled ELBO (exact convention) of `variational`, evaluated in float64, as one
    compiled program per shape (op by op, a first call compiles every operation on its own:
    about three times the time)."""
    with jax.enable_x64(True):  # any pair (M, S), e.g. pyPLNmodels' as a tuple
        return float(
            _compiled_profiled_elbo(as_float64(data), Variational(*as_float64(tuple(variational))))
        )


def iteration_budget(
    method: Method, data: PLNData, n_iter: int, eager_max_iter: int | None
) -> tuple[int, str]:
    """The iterations `method` runs and a note when it gets fewer than `n_iter`: an eager
    method gets at most `eager_max_iter` (by default `EAGER_MAX_ITER_LARGE` on large data)."""
    if not method.eager:
        return n_iter, ""
    cap = eager_max_iter or (EAGER_MAX_ITER_LARGE if data.n_samples > LARGE_N_SAMPLES else n_iter)
    if n_iter <= cap:
        return n_iter, ""
    return cap, f"eager and slow: only {cap} iterations"


def run_method(
    method: Method,
    data: PLNData,
    n_iter: int,
    *,
    repeat: int = 1,
    eager_max_iter: int | None = None,
    cold_repeat: int = 0,
) -> MethodRun:
    """Runs `method` on `data` and returns what it measured (no floor, no time to target yet).

    A level is timed with `time_call` (one warm-up, then the median of `repeat` fits), its
    programs compiled afresh (`tracecount.clear_compiled`), and called once more for its
    trace; with `cold_repeat`, its first call is also timed in that many fresh processes. The
    reference runs in fresh processes only (`run_reference`).
    """
    if method.is_reference:
        return run_reference(method, data, repeat=repeat, cold_repeat=max(cold_repeat, 1))
    budget, note = iteration_budget(method, data, n_iter, eager_max_iter)
    options, adapted_note = method.adapt(data) if method.adapt else ({}, "")
    options = {**method.options, **options}
    # A fit compiled earlier in this process (by a page, or by another method with the same
    # settings) would otherwise be a cache hit and report a compile time of zero. Only the
    # levels' programs are emptied: jax.clear_caches() would empty the page's too.
    clear_compiled("jaxcourse.pln")
    with count_compilations() as clock:
        timing = time_call(
            method.fit, data, budget, repeat=repeat, warmup=1, name=method.name, **options
        )
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
    cold = [run_fresh("jax", [data], n_iter=budget, method=method.name) for _ in range(cold_repeat)]
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
        warm_s=timing.times_s,
        cold_s=tuple(run.fits[0].times_s[0] for run in cold),
        import_s=float(np.median([run.import_s for run in cold])) if cold else None,
        device=environment_device(),
        variational=tuple(np.asarray(a) for a in result.variational),
    )


def environment_device() -> str:
    """`jax cpu (cpu)`: JAX's backend and the kind of its first device, as `_fresh` records it."""
    device = jax.devices()[0]
    return f"jax {jax.default_backend()} ({getattr(device, 'device_kind', str(device))})"


def run_reference(
    method: Method,
    data: PLNData,
    *,
    repeat: int = 1,
    cold_repeat: int = 1,
    torch_threads: int | None = None,
) -> MethodRun:
    """Runs the reference (pyPLNmodels) in `cold_repeat` fresh processes: the first fits
    `1 + repeat` times (its first fit cold, the others warm), the others once (cold).

    Times are end to end (building the model and fitting it); the curve is the trace and
    times pyPLNmodels recorded itself during its last fit in the first process. `torch_threads`
    goes to `run_fresh`.
    """
    maxiter = method.settings()["maxiter"]
    runs = [
        run_fresh(
            "reference",
            [data],
            n_iter=maxiter,
            repeat=1 + repeat if k == 0 else 1,
            torch_threads=torch_threads,
        )
        for k in range(cold_repeat)
    ]
    first = runs[0].fits[0]
    if first.trace_times_s is None or first.trace_elbo is None:
        raise RuntimeError("the reference's process recorded no ELBO trace of its fit.")
    warm = first.times_s[1:]
    return MethodRun(
        name=method.name,
        description=runs[0].description,
        n_iter=maxiter,
        n_steps=first.n_steps,
        compile_s=None,
        run_s=float(np.median(warm)),
        per_iteration_s=float(np.median(warm)) / first.n_steps,
        times_s=first.trace_times_s,
        elbo=first.trace_elbo,
        final_elbo=float64_profiled_elbo(data, first.variational),
        note=f"in its own process; curve times recorded by {method.name} itself",
        is_reference=True,
        warm_s=tuple(warm),
        cold_s=tuple(run.fits[0].times_s[0] for run in runs),
        import_s=float(np.median([run.import_s for run in runs])),
        device=runs[0].device,
        variational=first.variational,
    )
