"""The convergence loop of the profiled-ELBO levels: evaluate, test the tolerance, step.

`run_loop` is traced inside `jit` by level 5, inside `shard_map` by level 6 (with a `psum` as
`reduce`) and under `vmap` by `level6.fit_many`; it is the whole iteration of those levels.

The stopping rule reads one iterate, not a difference of two ELBOs: the *Newton decrement*
sum(g^2 / c) / 2 over every entry of (M, S), g the gradient and c the diagonal curvature, is the
ELBO gain that a full per-entry Newton step from x_k would make if J were its diagonal quadratic
model. It is a sum of small non-negative terms, so float32 resolves it down to far below the
rounding step of J itself (about 6e-8 of |J|), and it needs no earlier value of J: it can be
tested at any iteration where J is computed, however sparse.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import optax

from ._algorithm import CONVERGED, DIVERGED, ITERATION_LIMIT, FitResult
from ._model import ModelParams, Variational
from .profiled import Problem, evaluate, no_reduction

DEFAULT_TOL = 1e-9
"""Stop once the Newton decrement (`profiled.newton_decrement`) is below `tol * |ELBO|`. The decrement
underestimates what is left, since the diagonal model misses the slow directions that couple
the species (`optim.newton_momentum` explains them), so the default is well below float32's
resolution of J (about 6e-8). On oaks, oaks with the `tree` covariate and simulated data, Newton
momentum then stops at the ELBO where the window rule this replaced (the ELBO change over 50
iterations below 50 tol |ELBO|) stopped, to within 1e-7 of |ELBO|, in fewer iterations
(tests/test_convergence.py)."""


DEFAULT_MONITOR_EVERY = 10
"""Levels 5 and 6 compute the ELBO and the decrement at every 10th iteration by default: on oaks
x 100 that saves about a third of the time per iteration against computing them at every one
(the benchmark chapter measures it). Near the end they compute them at every iteration
(`CLOSE_FACTOR`), so the tolerance test does not wait for the next multiple of 10. Pass 1 for
a complete trace."""

CLOSE_FACTOR = 10.0
"""Once a monitored decrement is below `CLOSE_FACTOR` times the stopping threshold (tol |J|), the
fit is close to stopping, and `run_loop` monitors every later iteration: a sparse fit then stops
at the first iterate that passes the test, as a fully monitored one does, instead of at the next
multiple of `monitor_every`. Over the 10 iterations between two monitored iterates, the decrement
of a Newton momentum fit on oaks x 100 falls by a factor of 2 to 10 near the end, so the switch
comes before the test passes (tests/test_convergence.py checks the stop on three data sets). Were
the decrement to fall below the threshold itself between two monitored iterates, the fit would
stop at the next one, as it does without the switch."""


class LoopState(NamedTuple):
    """The carry of `run_loop`: the current iterate x_k, its optimizer state, and what the
    tolerance test needs."""

    variational: Variational
    opt_state: optax.OptState
    trace: jax.Array
    step: jax.Array
    elbo: jax.Array
    done: jax.Array
    status: jax.Array
    close: jax.Array


def run_loop(
    problem: Problem,
    variational: Variational,
    tol: jax.Array,
    *,
    n_iter: int,
    optimizer: optax.GradientTransformation,
    reduce: Callable = no_reduction,
    monitor_every: int = 1,
    step_limit: jax.Array | None = None,
    kernel: str = "xla",
) -> FitResult:
    """The convergence loop, for use under `jit` (and, with `reduce`, inside `shard_map`).

    Iteration k evaluates J at x_k and writes it to `trace[k]`. It stops there if the Newton
    decrement at x_k is below tol |J_k| (`profiled.newton_decrement`) or k = n_iter (the budget of
    `n_iter` steps is spent), and otherwise takes the optimizer's step to x_{k+1}. So `n_iter` counts
    steps, as in every level: at most `n_iter` steps and `n_iter + 1` evaluations. The
    optimizer minimises -J; it gets `value=-J`, `curvature=` and `reduce=` (for its own sums
    over samples) as extra arguments, which plain optax transformations ignore.

    With `monitor_every=m` > 1, J and the decrement are computed only at iterations k that are
    multiples of m, at the last two, k = n_iter - 1 and n_iter (the step needs the gradient,
    not these values), and at every iteration after a monitored decrement fell below
    `CLOSE_FACTOR` tol |J| (the fit is then close to stopping), each under a `lax.cond`, so the
    others do not run them: `trace[k]` and `value` are NaN there, and the tolerance test runs
    at the computed ones only. The iterates are those of m = 1, up to rounding, and so is,
    almost always, the iterate where the fit stops.

    The loop also stops at the first iterate whose ELBO (where computed) is not finite, with status `DIVERGED`; a non-finite value never ends it as if it had converged.
    `step_limit` (traced, at most `n_iter`) stops it after that many steps: a diverged fit is
    replayed with it to recover its last finite iterate (`_algorithm.report_divergence`).
    `kernel` chooses how each evaluation computes its elementwise work (`profiled.KERNELS`).

    Returns:
        A `FitResult`: the `(n_iter,)` trace of the ELBO before each step, whose entries from
        `n_steps` on repeat the ELBO of the returned parameters; the last evaluated (M, S) and
        its closed-form (B, Sigma); `n_steps`, the steps taken; and `status`: `CONVERGED`
        (tolerance), `ITERATION_LIMIT` (`n_iter` or `step_limit` steps) or `DIVERGED`.
    """
    limit = n_iter if step_limit is None else jnp.minimum(step_limit, n_iter)
    transform = optax.with_extra_args_support(optimizer)
    n_species = problem.counts.shape[1]
    dtype = problem.counts.dtype
    empty_params = ModelParams(
        jnp.zeros((problem.covariates.shape[1], n_species), dtype),
        jnp.zeros((n_species, n_species), dtype),
    )

    def body(carry):
        state, _ = carry
        last = state.step >= limit
        # The last two iterates are always monitored: trace[-1] of a fit that spends its budget
        # is J before its last step, as with m = 1, and the returned iterate's J is computed.
        monitored = (
            True
            if monitor_every == 1
            else (state.step % monitor_every == 0) | (state.step >= limit - 1) | state.close
        )
        evaluation = evaluate(
            problem, state.variational, reduce, with_elbo=monitored, kernel=kernel
        )
        elbo = evaluation.elbo
        trace = state.trace.at[state.step].set(elbo, mode="drop")  # no entry for k = n_iter
        decrement = evaluation.decrement  # NaN where not monitored
        threshold = tol * jnp.abs(elbo)
        converged = monitored & (decrement < threshold)  # False where NaN
        close = state.close | (monitored & (decrement < CLOSE_FACTOR * threshold))
        # A finite J implies finite A, S, Omega and so a finite gradient: J alone is checked.
        diverged = monitored & ~jnp.isfinite(elbo)
        done = converged | last | diverged
        status = jnp.where(diverged, DIVERGED, jnp.where(converged, CONVERGED, ITERATION_LIMIT))
        descent = jax.tree.map(jnp.negative, evaluation.grad)
        updates, opt_state = transform.update(
            descent,
            state.opt_state,
            state.variational,
            value=-elbo,
            curvature=evaluation.curvature,
            reduce=reduce,
        )
        # The last evaluated point is returned, so that its ELBO and parameters belong together.
        variational = jax.tree.map(
            lambda x, u: jnp.where(done, x, x + u), state.variational, updates
        )
        step = state.step + jnp.where(done, 0, 1)
        return LoopState(
            variational, opt_state, trace, step, elbo, done, status.astype(jnp.int32), close
        ), evaluation.params

    initial = LoopState(
        variational=variational,
        opt_state=transform.init(variational),
        trace=jnp.zeros((n_iter,), dtype),
        step=jnp.zeros((), jnp.int32),
        elbo=jnp.zeros((), dtype),
        done=jnp.zeros((), bool),
        status=jnp.asarray(ITERATION_LIMIT, jnp.int32),
        close=jnp.zeros((), bool),
    )
    final, params = jax.lax.while_loop(lambda carry: ~carry[0].done, body, (initial, empty_params))
    trace = jnp.where(jnp.arange(n_iter) < final.step, final.trace, final.elbo)
    # J depends on S only through S^2 and log|S|, so a step may cross to negative S without
    # harm; |S| is the same optimum, reported as the positive square root of the variance.
    mean, sqrt_var = final.variational
    return FitResult(trace, Variational(mean, jnp.abs(sqrt_var)), params, final.step, final.status)


def check_tol(tol) -> None:
    """Raises for a tolerance that is not a non-negative number."""
    if isinstance(tol, bool) or not isinstance(tol, (int, float, np.floating)):
        raise TypeError(f"tol must be a number, got {type(tol).__name__}.")
    if not tol >= 0:
        raise ValueError(f"tol must be non-negative (0 runs all n_iter iterations), got {tol}.")


def check_monitor_every(monitor_every) -> None:
    """Raises unless `monitor_every` is a positive int."""
    if isinstance(monitor_every, bool) or not isinstance(monitor_every, (int, np.integer)):
        raise TypeError(f"monitor_every must be an int, got {type(monitor_every).__name__}.")
    if monitor_every < 1:
        raise ValueError(
            "monitor_every must be at least 1 (1 computes the ELBO at every iteration), "
            f"got {monitor_every}."
        )
