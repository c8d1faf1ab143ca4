"""The profiled ELBO: the data prepared once, and one evaluation of J, its gradient and curvature.

Levels 0-4 differentiate the full ELBO with `jax.grad` and then recompute B and Sigma. Levels 5
and 6 profile B and Sigma out, as pyPLNmodels does: they are the closed forms of the current
(M, S) inside every evaluation. The envelope theorem then gives the gradient in closed form,

    dJ/dM = Y - A - (M - X B) Omega,        dJ/dS = 1/S - S * (A + diag(Omega)),

with A = exp(O + M + S^2/2) and Omega = Sigma^{-1}. One evaluation is one exp pass and two
`(n, p) x (p, p)` matrix products: (M - XB)'(M - XB) for Sigma, and (M - XB) Omega for the
gradient. Autodiff of the same function costs several more.

`evaluate` takes a `reduce` that sums per-sample sums over all samples: the identity on one
device, a `psum` when the rows are split over devices (level 6).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax.scipy.linalg import solve_triangular
from scipy.special import gammaln  # NumPy float64: the constant must not be rounded to float32

from ..pallas_kernels import pln_pass
from ..reductions import total
from ._data import PLNData
from ._model import ModelParams, Variational, scatter_matrix


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


PER_SAMPLE_FIELDS = ("counts", "offsets", "shifted_offsets", "covariates")
"""The fields of `Problem` with one row per sample: split over devices with the samples (level 6).
The others are small and replicated."""


def problem_layout(per_sample, replicated) -> Problem:
    """A `Problem` holding `per_sample` in its per-sample fields and `replicated` in the others:
    the shardings or partition specs of a problem whose rows are split over devices."""
    return Problem(
        **{
            name: per_sample if name in PER_SAMPLE_FIELDS else replicated
            for name in Problem._fields
        }
    )


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


def prepare(data: PLNData, zero_rate: np.ndarray | None = None) -> Problem:
    """The `Problem` for concrete `data` (not under `jit`: the constant is summed in NumPy).

    Args:
        data: the data.
        zero_rate: optional `(n, p)` bool, True on zero counts whose rate is to be held at 0:
            the entries a quasi-separation drives there (`separation.find_separation`). Their
            offset becomes -inf, so A = exp(O + M + S^2/2) is exactly 0 and they add only
            log|S| to the Poisson sum: the supremum of the ELBO, at no cost per iteration.
    """
    counts = data.counts
    covariates = np.asarray(data.covariates, dtype=np.float64)
    dtype = np.dtype(counts.dtype)
    if zero_rate is not None:
        zero_rate = np.asarray(zero_rate, dtype=bool)
        if zero_rate.shape != counts.shape or np.any(np.asarray(counts)[zero_rate] != 0):
            raise ValueError(
                "zero_rate must be an (n, p) bool mask that is True only on zero counts."
            )
    offsets, shifted_offsets = _prepared_offsets(data, zero_rate)
    # Everything but the data is computed by NumPy and only copied to the device: jnp.asarray
    # or a jnp operation would compile a program of its own, at every first call of a fit.
    return Problem(
        counts=counts,
        offsets=offsets,
        shifted_offsets=shifted_offsets,
        covariates=data.covariates,
        gram_inverse=jax.device_put(np.linalg.inv(covariates.T @ covariates).astype(dtype)),
        log_factorial_constant=jax.device_put(np.asarray(log_factorial_constant(counts), dtype)),
        n_samples=jax.device_put(np.asarray(counts.shape[0], dtype)),
    )


def _prepared_offsets(data: PLNData, zero_rate: np.ndarray | None) -> tuple[jax.Array, jax.Array]:
    """O and O - log Y (O where Y = 0) for `Problem`, by NumPy: run by JAX op by op, each
    operation would compile a program of its own at a fit's first call on a new shape. The
    shifted O is computed in float64 and rounded once, so that each entry is as close as its
    dtype allows (the Poisson sum multiplies its error by Y). Where `zero_rate` (None or an
    `(n, p)` bool mask) is True, O is -inf and the shifted O is 0: Y = 0 there, so Y (M + 0) = 0."""
    counts, offsets = np.asarray(data.counts), np.asarray(data.offsets)
    log_counts = np.log(np.where(counts > 0, counts, 1).astype(np.float64))
    shifted_offsets = (offsets.astype(np.float64) - log_counts).astype(offsets.dtype)
    if zero_rate is None:
        return data.offsets, jax.device_put(shifted_offsets)
    held_offsets = np.where(zero_rate, -np.inf, offsets).astype(offsets.dtype)
    held_shifted = np.where(zero_rate, 0, shifted_offsets).astype(offsets.dtype)
    return jax.device_put(held_offsets), jax.device_put(held_shifted)


class Evaluation(NamedTuple):
    """One evaluation of the profiled ELBO J at (M, S).

    Attributes:
        elbo: scalar J.
        grad: dJ/dM and dJ/dS, each `(n, p)`, as a `Variational`.
        curvature: `(n, p)` each, minus the diagonal of the Hessian of the ELBO in (M, S)
            with B and Sigma held fixed: A + diag(Omega) and 1/S^2 + A(1 + S^2) + diag(Omega).
            Positive; a per-entry Newton step is grad / curvature.
        params: the closed-form B `(d, p)` and Sigma `(p, p)` at (M, S).
        decrement: scalar, the Newton decrement sum(grad^2 / curvature) / 2 over every entry
            (`newton_decrement`): the ELBO gain a full per-entry Newton step would make if J
            were its diagonal quadratic model. NaN wherever `elbo` is.
    """

    elbo: jax.Array
    grad: Variational
    curvature: Variational
    params: ModelParams
    decrement: jax.Array


def poisson_sum(problem: Problem, variational: Variational) -> jax.Array:
    """The Poisson part of the ELBO without its data constant, over the rows of `problem`:

        sum [Y (M + O - log Y) + Y - A + log|S|],    A = exp(O + M + S^2/2),

    whose terms are small near the optimum (add `problem.log_factorial_constant` for the
    whole Poisson part; see `Problem`)."""
    mean, sqrt_var = variational
    rate = jnp.exp(problem.offsets + mean + 0.5 * jnp.square(sqrt_var))
    return _poisson_sum(problem.counts, problem.shifted_offsets, mean, rate, sqrt_var)


def _poisson_sum(counts, shifted_offsets, mean, rate, sqrt_var):
    """`poisson_sum` from its parts, so that `evaluate` reuses its rate A."""
    # log|S|, not 0.5 * log(S^2): on a CPU, jax 0.12 compiles this sum into a YNNPACK fusion,
    # which takes the constant 0.5 as an (n, p) array written to memory at every iteration
    # (`jaxcourse.hlo.intermediate_arrays` shows it; tests/test_level5.py checks it is gone).
    return total(counts * (mean + shifted_offsets) + counts - rate + jnp.log(jnp.abs(sqrt_var)))


def no_reduction(tree):
    """The `reduce` of one device: the sums over its rows are already the sums over all samples."""
    return tree


def decrement_sum(grad: Variational, curvature: Variational) -> jax.Array:
    """sum(g^2 / c) over every entry of M and S, over the rows of this device: twice the Newton
    decrement before `reduce` (`newton_decrement`)."""
    mean_terms, sqrt_var_terms = (
        total(jnp.square(g) / c) for g, c in zip(jax.tree.leaves(grad), jax.tree.leaves(curvature))
    )
    return mean_terms + sqrt_var_terms


def newton_decrement(evaluation: Evaluation, reduce: Callable = no_reduction) -> jax.Array:
    """sum(g^2 / c) / 2 over every entry of (M, S) of an `Evaluation` (g its gradient, c its
    curvature): the ELBO gain the diagonal Newton model still predicts there. A sum of small
    non-negative terms, so float32 resolves it far below the rounding step of J itself, and
    zero exactly at a stationary point. `evaluate` computes it with the ELBO as `decrement`."""
    return 0.5 * reduce(decrement_sum(evaluation.grad, evaluation.curvature))


def _gradient(counts, rate, scaled_residuals, sqrt_var, inverse, diag_precision) -> Variational:
    """dJ/dM = Y - A - (M - XB) Omega and dJ/dS = 1/S - S (A + diag Omega), from their parts
    (`inverse` is 1/S)."""
    return Variational(
        counts - rate - scaled_residuals, inverse - sqrt_var * (rate + diag_precision)
    )


def _curvature(rate, sqrt_var, inverse, diag_precision) -> Variational:
    """A + diag Omega and 1/S^2 + A (1 + S^2) + diag Omega, from their parts. Written with
    1/S 1/S and S (A S), not S^2: see `evaluate`."""
    return Variational(
        rate + diag_precision,
        inverse * inverse + rate + sqrt_var * (rate * sqrt_var) + diag_precision,
    )


def _monitored_sums(
    counts, shifted_offsets, mean, rate, sqrt_var, scaled_residuals, diag_precision
):
    """(the Poisson sum, `decrement_sum`) over this device's rows: what only the watching needs
    (the ELBO's value and the stopping rule), computed where `with_elbo` asks for it."""
    inverse = 1.0 / sqrt_var
    grad = _gradient(counts, rate, scaled_residuals, sqrt_var, inverse, diag_precision)
    curvature = _curvature(rate, sqrt_var, inverse, diag_precision)
    poisson = _poisson_sum(counts, shifted_offsets, mean, rate, sqrt_var)
    return poisson, decrement_sum(grad, curvature)


def _no_monitored_sums(counts, *_):
    """NaN in place of `_monitored_sums`: scalars derived from `counts`, so that inside
    `shard_map` they vary over devices as the real sums do (`lax.cond` needs both branches
    alike)."""
    nan = jnp.full_like(counts[0, 0], jnp.nan)
    return nan, nan


def cholesky_and_precision(covariance: jax.Array) -> tuple[jax.Array, jax.Array]:
    """The lower Cholesky factor L of `covariance` and its inverse Omega = L^-T L^-1.

    One triangular solve and a small product: cheaper than the two triangular solves of
    `cho_solve(L, I)`, and symmetric by construction. On a CPU both steps are LAPACK calls.
    """
    chol = jnp.linalg.cholesky(covariance)
    identity = jnp.eye(covariance.shape[0], dtype=covariance.dtype)
    chol_inverse = solve_triangular(chol, identity, lower=True)
    return chol, chol_inverse.T @ chol_inverse


KERNELS = ("xla", "pallas")
"""The ways `evaluate` computes its elementwise work: "xla", the jnp expressions that XLA
compiles and fuses as it sees fit, or "pallas", one Pallas kernel over (n, p) blocks
(`pallas_kernels.pln_pass`)."""


def check_kernel(kernel) -> None:
    """Raises `ValueError` unless `kernel` is one of `KERNELS`."""
    if not isinstance(kernel, str) or kernel not in KERNELS:
        raise ValueError(f"kernel must be one of {KERNELS}, got {kernel!r}.")


def _elbo(poisson, problem: Problem, chol) -> jax.Array:
    # -n/2 log det Sigma - 1/2 tr(Omega * n Sigma) + n p / 2 = -n/2 log det Sigma exactly.
    return (
        poisson
        + problem.log_factorial_constant
        - problem.n_samples * jnp.sum(jnp.log(jnp.diagonal(chol)))
    )


def evaluate(
    problem: Problem,
    variational: Variational,
    reduce: Callable = no_reduction,
    *,
    with_elbo=True,
    kernel: str = "xla",
) -> Evaluation:
    """The profiled ELBO, its analytic gradient and a diagonal curvature, in one pass.

    Args:
        problem: the prepared data (`prepare`), `(n, p)` blocks.
        variational: M and S, `(n, p)` each.
        reduce: sums a pytree of per-sample sums over all the samples. The identity on one
            device; `lax.psum` over the sample axis when the rows are split over devices
            (level 6), which is why only sums over samples pass through it.
        with_elbo: True, or a traced boolean: where it is false, `lax.cond` skips the Poisson
            sum and the Newton decrement, and `elbo` and `decrement` are NaN (the gradient and
            curvature do not need them).
        kernel: "xla" (the default) or "pallas", which computes the rates, the Poisson sum,
            the gradient and the curvature in one Pallas kernel (`pallas_kernels.pln_pass`);
            it computes the Poisson sum always (one more sum in a pass that reads its terms
            anyway), and `elbo` is NaN where `with_elbo` is false, as with "xla".

    Returns:
        An `Evaluation`; equal to `profiled_elbo` and `jax.grad(profiled_elbo)`.
    """
    check_kernel(kernel)
    if kernel == "pallas":
        return _evaluate_with_kernel(problem, variational, reduce, with_elbo)
    counts, covariates = problem.counts, problem.covariates
    mean, sqrt_var = variational
    rate = jnp.exp(problem.offsets + mean + 0.5 * jnp.square(sqrt_var))
    coef = problem.gram_inverse @ reduce(covariates.T @ mean)
    residuals = mean - covariates @ coef
    # S^2 for the column sums of the scatter matrix is squared from S behind an optimization
    # barrier, and the curvature is written S (A S) and 1/S 1/S: so S^2 is not one value that
    # XLA's CSE shares between them and the rate, which made XLA write S^2 to memory for those
    # column sums (a YNNPACK reduction on a CPU) at every iteration. The numbers are the same;
    # tests/test_pln_costs.py checks it is not written.
    barred_variance = jnp.square(jax.lax.optimization_barrier(sqrt_var))
    scatter = reduce(scatter_matrix(residuals, barred_variance))
    covariance = scatter / problem.n_samples
    chol, precision = cholesky_and_precision(covariance)
    diag_precision = jnp.diagonal(precision)
    scaled_residuals = residuals @ precision
    # The ELBO's value and the decrement are for watching the fit: under a lax.cond where
    # with_elbo is traced. Its operands are arrays in memory, so it takes the parts the step
    # writes anyway (A, the product (M - XB) Omega) and S, not S^2, nor the gradient and the
    # curvature, which the step need not write; the branch recomputes them as it reads.
    terms = (
        counts,
        problem.shifted_offsets,
        mean,
        rate,
        sqrt_var,
        scaled_residuals,
        diag_precision,
    )
    if with_elbo is True:
        local_sums = _monitored_sums(*terms)
    else:
        local_sums = jax.lax.cond(with_elbo, _monitored_sums, _no_monitored_sums, *terms)
    poisson, twice_decrement = reduce(local_sums)
    inverse = 1.0 / sqrt_var
    return Evaluation(
        _elbo(poisson, problem, chol),
        _gradient(counts, rate, scaled_residuals, sqrt_var, inverse, diag_precision),
        _curvature(rate, sqrt_var, inverse, diag_precision),
        ModelParams(coef, covariance),
        0.5 * twice_decrement,
    )


def _evaluate_with_kernel(problem: Problem, variational: Variational, reduce, with_elbo):
    """`evaluate` with its elementwise work in one Pallas kernel: the matrix products, the
    column sums of S^2 and the small (p, p) algebra first, since the gradient needs Omega."""
    mean, sqrt_var = variational
    coef = problem.gram_inverse @ reduce(problem.covariates.T @ mean)
    residuals = mean - problem.covariates @ coef
    scatter = reduce(scatter_matrix(residuals, jnp.square(sqrt_var)))
    covariance = scatter / problem.n_samples
    chol, precision = cholesky_and_precision(covariance)
    fused = pln_pass(
        problem.counts,
        problem.offsets,
        problem.shifted_offsets,
        mean,
        sqrt_var,
        residuals @ precision,
        jnp.diagonal(precision),
    )
    grad = Variational(fused.grad_mean, fused.grad_sqrt_var)
    curvature = Variational(fused.curvature_mean, fused.curvature_sqrt_var)
    poisson, twice_decrement = reduce(
        (total(fused.poisson_partials), decrement_sum(grad, curvature))
    )
    elbo, decrement = _elbo(poisson, problem, chol), 0.5 * twice_decrement
    if with_elbo is not True:
        elbo, decrement = (jnp.where(with_elbo, value, jnp.nan) for value in (elbo, decrement))
    return Evaluation(elbo, grad, curvature, ModelParams(coef, covariance), decrement)


def profiled_elbo_and_grad(
    data: PLNData, variational: Variational
) -> tuple[jax.Array, Variational]:
    """(J, dJ/d(M, S)) at `variational`: the level-5 evaluation, for checks and exercises."""
    evaluation = evaluate(prepare(data), variational)
    return evaluation.elbo, evaluation.grad
