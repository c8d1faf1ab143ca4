"""Level 5: the profiled ELBO with hand-derived gradients, one fused pass per iteration, and a
`lax.while_loop` that stops once a Newton step would gain almost nothing.

The maths lives in `profiled` (the prepared `Problem` and `evaluate`: J, its gradient and a
diagonal curvature in one pass) and the loop in `convergence` (`run_loop`); this module
compiles them into a fit with the common level signature. Its defaults are the fast path:
BLAS/LAPACK run one thread during the fit (`BLAS_THREADS`), which on a CPU is what makes a
plain call as fast as the benchmark's.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np
import optax

from ..config import check_thread_limit, limit_blas_threads
from ..optim import newton_momentum, newton_rprop, rprop
from ._algorithm import (
    DIVERGED,
    FitResult,
    check_fit_arguments,
    device_array,
    numpy_start,
    report_divergence,
)
from ._data import PLNData
from ._model import Variational
from .convergence import (
    DEFAULT_MONITOR_EVERY,
    DEFAULT_TOL,
    check_monitor_every,
    check_tol,
    run_loop,
)
from .profiled import Problem, check_kernel, prepare
from .separation import (
    Separation,
    find_separation,
    mark_separated,
    no_separation,
    push_to_limit,
    warn_separation,
)

RPROP = rprop(0.1, step_sizes=(1e-10, 50.0))
"""Level 5's default optimizer: torch-exact Rprop on (M, S), pyPLNmodels' step bounds, a
larger first step (0.1, not 0.01): our start is already close, and the steps then need fewer
doublings to reach their scale."""

NEWTON_RPROP = newton_rprop()
"""The faster alternative: per-entry Newton steps on (M, S), lengthened or shortened by
Rprop's rule (`optim.newton_rprop`); created once so that fits reuse its compiled loop."""

SLOPE_OVER_M = Variational(latent_mean=True, latent_sqrt_var=False)  # type: ignore[arg-type]
"""`NEWTON_MOMENTUM`'s `slope_mask`: a bool in place of each array, the restart's slope over M."""

NEWTON_MOMENTUM = newton_momentum(1.0, momentum=0.9, slope_mask=SLOPE_OVER_M)
"""The fastest option: full per-entry Newton steps on (M, S) plus heavy-ball momentum that
restarts when it points uphill in M (`optim.newton_momentum`, its `slope_mask`); created
once, like `NEWTON_RPROP`."""

BLAS_THREADS = 1
"""BLAS/LAPACK threads during a fit by default: the loop factorises a small matrix at every
iteration, and idle OpenBLAS threads spinning after each call take the core XLA needs
(`config.limit_blas_threads` explains it; the benchmark chapter measures it). The limit holds
from the preparation on: its NumPy products (X'X, the separation test) call NumPy's own
OpenBLAS, whose threads otherwise spin through the loop's first iterations."""


@partial(jax.jit, static_argnames=("n_iter", "optimizer", "monitor_every", "kernel"))
def fit_compiled(
    problem, variational, tol, step_limit=None, *, n_iter, optimizer, monitor_every, kernel="xla"
) -> FitResult:
    """The compiled program behind `fit`: `run_loop` under `jit`; `n_iter`, `optimizer`,
    `monitor_every` and `kernel` are static (a new value compiles anew), `tol` and `step_limit`
    are traced."""
    return run_loop(
        problem,
        variational,
        tol,
        n_iter=n_iter,
        optimizer=optimizer,
        monitor_every=monitor_every,
        step_limit=step_limit,
        kernel=kernel,
    )


def prepare_checked(
    data: PLNData, separation_limit: bool, *, stacklevel: int = 4
) -> tuple[Problem, Separation, Separation]:
    """`prepare(data)`, after looking for quasi-separation: warns if there is any
    (`SeparationWarning`) and, with `separation_limit`, holds those rates at 0 (see `fit`).

    Returns:
        The prepared problem, the separation it holds (none without `separation_limit`), and
        the separation found (which marks the result's coefficients either way).
    """
    found = find_separation(data)
    warn_separation(data, found, stacklevel=stacklevel)
    held = found if separation_limit else no_separation(data)
    return prepare(data, held.mask if held.any else None), held, found


def check_level_options(tol, monitor_every, blas_threads) -> None:
    """Raises `TypeError`/`ValueError` for options of levels 5 and 6 that cannot work."""
    check_tol(tol)
    check_monitor_every(monitor_every)
    check_thread_limit(blas_threads)


def check_flag(name: str, value) -> None:
    """Raises `TypeError` unless `value` is a bool."""
    if not isinstance(value, bool):
        raise TypeError(f"{name} must be True or False, got {type(value).__name__}.")


def check_start(data: PLNData, start) -> None:
    """Raises unless `start` is a `Variational` whose M and S have the shape of the counts."""
    if not isinstance(start, Variational):
        raise TypeError(f"start must be a Variational (M, S), got {type(start).__name__}.")
    for name, array in zip(start._fields, start):
        if jnp.shape(array) != data.counts.shape:
            raise ValueError(
                f"start.{name} must have the counts' shape {data.counts.shape}, got {jnp.shape(array)}."
            )


def run_fit(
    run: Callable[[int, int], FitResult],
    n_iter: int,
    monitor_every: int,
    data: PLNData,
    held: Separation,
    found: Separation,
) -> FitResult:
    """What levels 5 and 6 return from `run(step_limit, monitor_every)`, one call of their
    compiled loop: `run(n_iter, monitor_every)` as `report_divergence` returns it (a fit that
    diverged is replayed up to its last finite iterate), pushed to the limit where `held`
    holds rates at 0 (`push_to_limit`), its coefficients marked where `found` (`mark_separated`),
    and waited for, so that the caller's BLAS thread limit holds until it is computed.

    A sparse trace can hide the first non-finite ELBO among the skipped iterations, so a fit
    monitored every `monitor_every` > 1 iterations that diverged is run again, monitored at
    every one, before its last finite iterate is looked for.
    """
    result = run(n_iter, monitor_every)
    if int(result.status) == DIVERGED and monitor_every > 1:
        monitor_every = 1
        result = run(n_iter, monitor_every)
    result = report_divergence(result, lambda steps: run(steps, monitor_every), stacklevel=4)
    return jax.block_until_ready(mark_separated(push_to_limit(result, data.offsets, held), found))


def fit(
    data: PLNData,
    n_iter: int,
    *,
    optimizer: optax.GradientTransformation = RPROP,
    tol: float = DEFAULT_TOL,
    monitor_every: int = DEFAULT_MONITOR_EVERY,
    blas_threads: int | None = BLAS_THREADS,
    start: Variational | None = None,
    separation_limit: bool = True,
    kernel: str = "xla",
) -> FitResult:
    """Fits the PLN model by at most `n_iter` steps on the profiled ELBO.

    Where level 5 differs from levels 0-4: it stops early once a Newton step would gain
    almost nothing (`tol`), so `n_steps` can be below `n_iter`; it can compute the ELBO's value only every
    `monitor_every` iterations; it can start from a given point (`start`); and it waits for its
    result (to hold its BLAS thread limit).

    Args:
        data: the data (`make_data`, `load_oaks`).
        n_iter: the most steps to take (static: a new value compiles anew).
        optimizer: any optax transformation, applied to the gradient of -J in (M, S).
            Those built with `optax.GradientTransformationExtraArgs` also get `curvature=`
            (see `profiled.Evaluation`), `value=` and `reduce=` (see `convergence.run_loop`).
        tol: stop when the ELBO gain a per-entry Newton step still predicts (the Newton
            decrement, `profiled.newton_decrement`) is below `tol` times the ELBO's size;
            0 runs all `n_iter` steps.
        monitor_every: compute the ELBO and the decrement only every this many iterations
            (`convergence.DEFAULT_MONITOR_EVERY`; static): 1 for a complete trace; see
            `convergence.run_loop`. A fit that diverges is replayed with 1, to find its last
            finite iterate.
        blas_threads: the most BLAS/LAPACK threads during the fit (`BLAS_THREADS`), or None
            to leave the process as it is.
        start: the `(n, p)` M and S to start from; `init_variational(data)` by default.
        separation_limit: where some species have only zero counts in a group of samples the
            covariates single out (quasi-separation, `separation.find_separation`; always
            reported by a `SeparationWarning`), fit the limit the ELBO rises towards, those
            rates held at 0, and return a point where they are numerically 0
            (`separation.push_to_limit`; True), or fit the data as given, whose ELBO then
            creeps up for thousands of iterations as their coefficients drift (False).
        kernel: how each iteration computes its elementwise work (`profiled.KERNELS`, static):
            "xla", the jnp expressions that XLA fuses, or "pallas", one Pallas kernel over
            `(n, p)` blocks (`pallas_kernels.pln_pass`), in interpret mode on a CPU.

    Returns:
        A `FitResult`: `elbo_trace[k]` is the ELBO at the k-th iterate, before step k (NaN
        where it was not computed), and entries from `n_steps` on repeat the ELBO of the
        returned parameters; `variational` is the last iterate and `params` its closed-form
        B and Sigma; `status` says whether it converged, hit `n_iter` or diverged; `separated`
        marks the coefficients of B that separation sends to +-infinity (with or without
        `separation_limit`), and `coef` is B with NaN there. A fit that
        diverges warns (`FitDivergedWarning`) and returns its last iterate with a finite ELBO.
    """
    check_fit_arguments(
        data, n_iter, warn_on_separation=False
    )  # before init_variational reads data
    check_level_options(tol, monitor_every, blas_threads)
    check_flag("separation_limit", separation_limit)
    check_kernel(kernel)
    with limit_blas_threads(blas_threads):  # from the preparation on (`BLAS_THREADS`)
        start = numpy_start(data) if start is None else start
        check_start(data, start)
        problem, held, found = prepare_checked(data, separation_limit)
        traced_tol = device_array(tol, data.counts.dtype)

        def run(step_limit, every):
            return fit_compiled(
                problem,
                start,
                traced_tol,
                device_array(step_limit, np.int32),
                n_iter=n_iter,
                optimizer=optimizer,
                monitor_every=every,
                kernel=kernel,
            )

        return run_fit(run, n_iter, int(monitor_every), data, held, found)
