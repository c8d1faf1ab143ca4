"""Level 5: the profiled ELBO with hand-derived gradients, one fused pass per iteration, and a
`lax.while_loop` that stops once the ELBO stops changing.

Levels 0-4 differentiate the full ELBO with `jax.grad` and then recompute B and Sigma. Here B
and Sigma are profiled out, as pyPLNmodels does: they are the closed forms of the current
(M, S) inside every evaluation. The envelope theorem then gives the gradient in closed form,

    dJ/dM = Y - A - (M - X B) Omega,        dJ/dS = 1/S - S * (A + diag(Omega)),

with A = exp(O + M + S^2/2) and Omega = Sigma^{-1}. One evaluation is one exp pass and two
`(n, p) x (p, p)` matrix products: (M - XB)'(M - XB) for Sigma, and (M - XB) Omega for the
gradient. Autodiff of the same function costs several more.
"""

from __future__ import annotations

from functools import partial
from typing import Callable, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import optax
from jax.scipy.linalg import solve_triangular
from scipy.special import gammaln  # NumPy float64: the constant must not be rounded to float32

from ..optim import newton_momentum, newton_rprop, rprop
from ..reductions import column_sums, total
from ._algorithm import FitResult, check_fit_arguments, init_variational
from ._data import PLNData
from ._model import ModelParams, Variational

DEFAULT_OPTIMIZER = rprop(0.1, step_sizes=(1e-10, 50.0))
"""torch-exact Rprop on (M, S), pyPLNmodels' step bounds, a larger first step (0.1, not 0.01):
our start is already close, and the steps then need fewer doublings to reach their scale."""

NEWTON_RPROP = newton_rprop()
"""The faster alternative: per-entry Newton steps on (M, S), lengthened or shortened by
Rprop's rule (`optim.newton_rprop`); created once so that fits reuse its compiled loop."""

NEWTON_MOMENTUM = newton_momentum(1.0, momentum=0.9)
"""The fastest option: full per-entry Newton steps on (M, S) plus heavy-ball momentum that
restarts when it points uphill (`optim.newton_momentum`); created once, like `NEWTON_RPROP`."""

DEFAULT_TOL = 1e-9
"""Stop once the ELBO gains less than `tol * |ELBO|` per iteration, averaged over the last
`TOL_WINDOW` iterations: 50 iterations that together gain less than one float32 rounding
step of the ELBO (about 6e-8 of it). On oaks that ends the fit about where pyPLNmodels ends."""

TOL_WINDOW = 50
"""Iterations the convergence test averages over. One float32 ELBO difference is too noisy:
two consecutive values can round to the same number long before the fit has converged, and
Rprop's ELBO wobbles by more than its trend near the end."""


class Problem(NamedTuple):
    """The data in the form the iteration reads it, prepared once per data set.

    Attributes:
        counts: `(n, p)` Y.
        offsets: `(n, p)` O.
        shifted_offsets: `(n, p)` O - log Y where Y > 0, and O where Y = 0.
        covariates: `(n, d)` X.
        gram_inverse: `(d, d)` (X'X)^{-1}.
        log_factorial_constant: scalar sum(Y log Y - Y - log Y!), summed in float64.
        n_samples: scalar n (of the whole data set, also when the rows are split over devices).

    The Poisson part of the ELBO is written as

        sum [Y (M + O - log Y) + Y - A + log|S|] + sum [Y log Y - Y - log Y!].

    Near the optimum, Y(O + M) and log Y! are both large and nearly cancel, and float32
    loses about half a nat on oaks; the first sum above is small term by term, and the second
    is a constant computed once in float64.
    """

    counts: jax.Array
    offsets: jax.Array
    shifted_offsets: jax.Array
    covariates: jax.Array
    gram_inverse: jax.Array
    log_factorial_constant: jax.Array
    n_samples: jax.Array


def log_factorial_constant(counts) -> float:
    """sum(Y log Y - Y - log Y!) over all entries of the whole-number `counts`, in float64.

    Summed over the distinct count values, each term times how often it occurs (a histogram
    of the counts), rather than entry by entry: the same float64 sum, about ten times faster
    at oaks x 100 size. Entry by entry when the largest count is too large for a histogram.
    """
    counts = np.asarray(counts)
    if counts.size and counts.max() <= max(counts.size, 1024):
        occurrences = np.bincount(counts.astype(np.int64).ravel())
        values = np.arange(occurrences.size, dtype=np.float64)
    else:
        values = counts.astype(np.float64).ravel()
        occurrences = np.ones_like(values)
    log_values = np.log(np.maximum(values, 1.0))  # Y log Y is 0 at Y = 0
    return float(occurrences @ (values * log_values - values - gammaln(values + 1.0)))


def prepare(data: PLNData) -> Problem:
    """The `Problem` for concrete `data` (not under `jit`: the constant is summed in NumPy)."""
    counts = data.counts
    covariates = np.asarray(data.covariates, dtype=np.float64)
    dtype = counts.dtype
    return Problem(
        counts=counts,
        offsets=data.offsets,
        shifted_offsets=data.offsets - jnp.log(jnp.where(counts > 0, counts, 1.0)),
        covariates=data.covariates,
        gram_inverse=jnp.asarray(np.linalg.inv(covariates.T @ covariates), dtype),
        log_factorial_constant=jnp.asarray(log_factorial_constant(counts), dtype),
        n_samples=jnp.asarray(counts.shape[0], dtype),
    )


class Evaluation(NamedTuple):
    """One evaluation of the profiled ELBO J at (M, S).

    Attributes:
        elbo: scalar J.
        grad: dJ/dM and dJ/dS, each `(n, p)`, as a `Variational`.
        curvature: `(n, p)` each, minus the diagonal of the Hessian of the ELBO in (M, S)
            with B and Sigma held fixed: A + diag(Omega) and 1/S^2 + A(1 + S^2) + diag(Omega).
            Positive; a per-entry Newton step is grad / curvature.
        params: the closed-form B `(d, p)` and Sigma `(p, p)` at (M, S).
    """

    elbo: jax.Array
    grad: Variational
    curvature: Variational
    params: ModelParams


def poisson_sum(problem: Problem, variational: Variational) -> jax.Array:
    """The Poisson part of the ELBO without its data constant, over the rows of `problem`:

        sum [Y (M + O - log Y) + Y - A + log|S|],    A = exp(O + M + S^2/2),

    whose terms are small near the optimum (add `problem.log_factorial_constant` for the
    whole Poisson part; see `Problem`)."""
    counts, offsets, shifted_offsets = problem[:3]
    mean, sqrt_var = variational
    variance = jnp.square(sqrt_var)
    rate = jnp.exp(offsets + mean + 0.5 * variance)
    return _poisson_sum(counts, shifted_offsets, mean, rate, sqrt_var)


def _poisson_sum(counts, shifted_offsets, mean, rate, sqrt_var):
    """`poisson_sum` from its parts, so that `evaluate` reuses its rate A."""
    # log|S|, not 0.5 * log(S^2): on a CPU, jax 0.12 compiles this sum into a YNNPACK fusion,
    # which takes the constant 0.5 as an (n, p) array written to memory at every iteration
    # (`jaxcourse.hlo.intermediate_arrays` shows it; tests/test_level5.py checks it is gone).
    return total(counts * (mean + shifted_offsets) + counts - rate + jnp.log(jnp.abs(sqrt_var)))


def cholesky_and_precision(covariance: jax.Array) -> tuple[jax.Array, jax.Array]:
    """The lower Cholesky factor L of `covariance` and its inverse Omega = L^-T L^-1.

    One triangular solve and a small product: cheaper than the two triangular solves of
    `cho_solve(L, I)`, and symmetric by construction. On a CPU both steps are LAPACK calls.
    """
    chol = jnp.linalg.cholesky(covariance)
    identity = jnp.eye(covariance.shape[0], dtype=covariance.dtype)
    chol_inverse = solve_triangular(chol, identity, lower=True)
    return chol, chol_inverse.T @ chol_inverse


def _no_reduction(tree):
    return tree


def evaluate(
    problem: Problem, variational: Variational, reduce: Callable = _no_reduction, *, with_elbo=True
) -> Evaluation:
    """The profiled ELBO, its analytic gradient and a diagonal curvature, in one pass.

    Args:
        problem: the prepared data (`prepare`), `(n, p)` blocks.
        variational: M and S, `(n, p)` each.
        reduce: sums a pytree of per-sample sums over all the samples. The identity on one
            device; `lax.psum` over the sample axis when the rows are split over devices
            (level 6), which is why only sums over samples pass through it.
        with_elbo: True, or a traced boolean: where it is false, `lax.cond` skips the Poisson
            sum and `elbo` is NaN (the gradient and curvature do not need it).

    Returns:
        An `Evaluation`; equal to `profiled_elbo` and `jax.grad(profiled_elbo)`.
    """
    counts, offsets, shifted_offsets, covariates = problem[:4]
    mean, sqrt_var = variational
    variance = jnp.square(sqrt_var)
    rate = jnp.exp(offsets + mean + 0.5 * variance)
    coef = problem.gram_inverse @ reduce(covariates.T @ mean)
    residuals = mean - covariates @ coef
    # S, not S^2: the operands of a lax.cond are arrays in memory, and S^2 need not be one.
    terms = (counts, shifted_offsets, mean, rate, sqrt_var)
    if with_elbo is True:
        local_poisson = _poisson_sum(*terms)
    else:
        local_poisson = jax.lax.cond(with_elbo, _poisson_sum, lambda *_: jnp.full((), jnp.nan, mean.dtype), *terms)
    poisson, scatter = reduce((local_poisson, residuals.T @ residuals + jnp.diag(column_sums(variance))))
    n_samples = problem.n_samples
    covariance = scatter / n_samples
    chol, precision = cholesky_and_precision(covariance)
    # -n/2 log det Sigma - 1/2 tr(Omega * n Sigma) + n p / 2 = -n/2 log det Sigma exactly.
    elbo = poisson + problem.log_factorial_constant - n_samples * jnp.sum(jnp.log(jnp.diagonal(chol)))
    diag_precision = jnp.diagonal(precision)
    grad = Variational(
        counts - rate - residuals @ precision,
        1.0 / sqrt_var - sqrt_var * (rate + diag_precision),
    )
    curvature = Variational(
        rate + diag_precision,
        1.0 / variance + rate * (1.0 + variance) + diag_precision,
    )
    return Evaluation(elbo, grad, curvature, ModelParams(coef, covariance))


def profiled_elbo_and_grad(data: PLNData, variational: Variational) -> tuple[jax.Array, Variational]:
    """(J, dJ/d(M, S)) at `variational`: the level-5 evaluation, for checks and exercises."""
    evaluation = evaluate(prepare(data), variational)
    return evaluation.elbo, evaluation.grad


class _LoopState(NamedTuple):
    variational: Variational
    opt_state: optax.OptState
    trace: jax.Array
    step: jax.Array
    elbo: jax.Array
    done: jax.Array


def run_loop(
    problem: Problem,
    variational: Variational,
    tol: jax.Array,
    *,
    n_iter: int,
    optimizer: optax.GradientTransformation,
    reduce: Callable = _no_reduction,
    monitor_every: int = 1,
) -> tuple[Variational, ModelParams, jax.Array, jax.Array]:
    """The convergence loop, for use under `jit` (and, with `reduce`, inside `shard_map`).

    Iteration k evaluates J at x_k, writes it to `trace[k]`, stops if
    |J_k - J_{k-w}| < w tol |J_k| (w = `TOL_WINDOW`) or k = n_iter - 1, and otherwise takes
    the optimizer's step to x_{k+1}. The optimizer minimises -J; it gets `value=-J`, `curvature=` and
    `reduce=` (for its own sums over samples) as extra arguments, which plain optax
    transformations ignore.

    With `monitor_every=m` > 1, J itself is computed only at iterations k that are multiples
    of m and at k = n_iter - 1 (the step needs the gradient, not the value): `trace[k]` and
    `value` are NaN at the others, and the tolerance test runs at the computed ones (m divides
    `TOL_WINDOW`, so J_{k-w} is computed too). The iterates are the same as with m = 1.

    Returns:
        The last evaluated (M, S) and its closed-form (B, Sigma); the `(n_iter,)` trace, whose
        entries past the stop repeat the last ELBO (the ELBO of the returned parameters); and
        the number of evaluations run, `n_steps`.
    """
    transform = optax.with_extra_args_support(optimizer)
    n_species = problem.counts.shape[1]
    dtype = problem.counts.dtype
    empty_params = ModelParams(
        jnp.zeros((problem.covariates.shape[1], n_species), dtype), jnp.zeros((n_species, n_species), dtype)
    )

    def body(carry):
        state, _ = carry
        last = state.step + 1 >= n_iter
        monitored = True if monitor_every == 1 else (state.step % monitor_every == 0) | last
        evaluation = evaluate(problem, state.variational, reduce, with_elbo=monitored)
        elbo = evaluation.elbo
        trace = state.trace.at[state.step].set(elbo)
        earlier = trace[jnp.maximum(state.step - TOL_WINDOW, 0)]
        converged = (state.step >= TOL_WINDOW) & (
            jnp.abs(elbo - earlier) < TOL_WINDOW * tol * jnp.abs(elbo)
        )
        done = converged | last | (monitored & ~jnp.isfinite(elbo))
        descent = jax.tree.map(jnp.negative, evaluation.grad)
        updates, opt_state = transform.update(
            descent, state.opt_state, state.variational, value=-elbo, curvature=evaluation.curvature, reduce=reduce
        )
        # The last evaluated point is returned, so that trace[-1] is its ELBO.
        variational = jax.tree.map(
            lambda x, u: jnp.where(done, x, x + u), state.variational, updates
        )
        new_state = _LoopState(variational, opt_state, trace, state.step + 1, elbo, done)
        return new_state, evaluation.params

    initial = _LoopState(
        variational=variational,
        opt_state=transform.init(variational),
        trace=jnp.zeros((n_iter,), dtype),
        step=jnp.zeros((), jnp.int32),
        elbo=jnp.zeros((), dtype),
        done=jnp.zeros((), bool),
    )
    final, params = jax.lax.while_loop(lambda carry: ~carry[0].done, body, (initial, empty_params))
    trace = jnp.where(jnp.arange(n_iter) < final.step, final.trace, final.elbo)
    # J depends on S only through S^2 and log|S|, so a step may cross to negative S without
    # harm; |S| is the same optimum, reported as the positive square root of the variance.
    mean, sqrt_var = final.variational
    return Variational(mean, jnp.abs(sqrt_var)), params, trace, final.step


@partial(jax.jit, static_argnames=("n_iter", "optimizer", "monitor_every"))
def fit_compiled(problem, variational, tol, *, n_iter, optimizer, monitor_every=1) -> FitResult:
    """The compiled program behind `fit`: `run_loop` under `jit`; `n_iter`, `optimizer` and
    `monitor_every` are static (a new value compiles anew), `tol` is traced."""
    variational, params, trace, n_steps = run_loop(
        problem, variational, tol, n_iter=n_iter, optimizer=optimizer, monitor_every=monitor_every
    )
    return FitResult(trace, variational, params, n_steps)


def check_tol(tol) -> None:
    """Raises for a tolerance that is not a non-negative number."""
    if isinstance(tol, bool) or not isinstance(tol, (int, float, np.floating)):
        raise TypeError(f"tol must be a number, got {type(tol).__name__}.")
    if not tol >= 0:
        raise ValueError(f"tol must be non-negative (0 runs all n_iter iterations), got {tol}.")


def check_monitor_every(monitor_every) -> None:
    """Raises unless `monitor_every` is a positive int that divides `TOL_WINDOW`."""
    if isinstance(monitor_every, bool) or not isinstance(monitor_every, (int, np.integer)):
        raise TypeError(f"monitor_every must be an int, got {type(monitor_every).__name__}.")
    if monitor_every < 1 or TOL_WINDOW % monitor_every:
        raise ValueError(
            f"monitor_every must be a positive divisor of TOL_WINDOW = {TOL_WINDOW}, so that the "
            f"tolerance test compares two computed ELBOs; got {monitor_every}."
        )


def fit_from(
    data: PLNData,
    variational: Variational,
    n_iter: int,
    *,
    optimizer: optax.GradientTransformation = DEFAULT_OPTIMIZER,
    tol: float = DEFAULT_TOL,
    monitor_every: int = 1,
) -> FitResult:
    """`fit`, starting from the given `(n, p)` M and S instead of `init_variational(data)`."""
    check_fit_arguments(data, n_iter)
    check_tol(tol)
    check_monitor_every(monitor_every)
    tol = jnp.asarray(tol, data.counts.dtype)  # traced: a new tol does not recompile
    return fit_compiled(
        prepare(data), variational, tol, n_iter=n_iter, optimizer=optimizer, monitor_every=int(monitor_every)
    )


def fit(
    data: PLNData,
    n_iter: int,
    *,
    optimizer: optax.GradientTransformation = DEFAULT_OPTIMIZER,
    tol: float = DEFAULT_TOL,
    monitor_every: int = 1,
) -> FitResult:
    """Fits the PLN model by at most `n_iter` iterations on the profiled ELBO.

    Args:
        data: the data (`make_data`, `load_oaks`).
        n_iter: the maximum number of iterations (static: a new value compiles anew).
        optimizer: any optax transformation, applied to the gradient of -J in (M, S).
            Those built with `optax.GradientTransformationExtraArgs` also get `curvature=`
            (see `Evaluation`), `value=` and `reduce=` (see `run_loop`).
        tol: stop when the ELBO changes by less than `tol` times its size per iteration,
            on average over the last `TOL_WINDOW` iterations; 0 runs all `n_iter`.
        monitor_every: compute the ELBO only every this many iterations (a divisor of
            `TOL_WINDOW`; static), to save its pass over the data; see `run_loop`.

    Returns:
        A `FitResult`: `elbo_trace[k]` is the ELBO at the k-th iterate (NaN where it was not
        computed), and entries from `n_steps` on repeat the last one; `variational` is the
        last iterate, whose ELBO is `elbo_trace[-1]`; `params` its closed-form B and Sigma.
    """
    return fit_from(data, init_variational(data), n_iter, optimizer=optimizer, tol=tol, monitor_every=monitor_every)
