"""The mathematics of the PLN model: log-factorials, the ELBO, and the closed-form M-step.

Notation (the chapter explains it): Y counts, O offsets, X covariates, B `coef`,
Sigma `covariance`, M `latent_mean`, S `latent_sqrt_var` (S**2 is the variational variance).
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax.scipy.linalg import cho_solve
from jax.scipy.special import gammaln

from ..reductions import column_sums
from ._data import PLNData


class Variational(NamedTuple):
    """Variational parameters: q(Z_i) = N(M_i, diag(S_i**2)).

    Attributes:
        latent_mean: `(n_samples, n_species)` means M.
        latent_sqrt_var: `(n_samples, n_species)` square roots S of the variances.
    """

    latent_mean: jax.Array
    latent_sqrt_var: jax.Array


class ModelParams(NamedTuple):
    """Model parameters of the PLN model.

    Attributes:
        coef: `(n_covariates, n_species)` regression coefficients B.
        covariance: `(n_species, n_species)` latent covariance Sigma.
    """

    coef: jax.Array
    covariance: jax.Array


def log_factorial(counts: jax.Array) -> jax.Array:
    """Exact log(y!) = gammaln(y + 1), elementwise; same shape as `counts`."""
    return gammaln(counts + 1.0)


def log_factorial_stirling(counts: jax.Array) -> jax.Array:
    """pyPLNmodels' Stirling approximation of log(y!), elementwise, with 0 treated as 1.

    It is off by about 0.081 at y = 0 and y = 1; use it only to compare with pyPLNmodels.
    """
    safe = jnp.where(counts == 0, 1.0, counts)
    return 0.5 * jnp.log(2.0 * jnp.pi * safe) + safe * (jnp.log(safe) - 1.0)


def stirling_correction(counts) -> float:
    """The number to add to our (exact) ELBO to get pyPLNmodels' Stirling-convention ELBO.

    `elbo_stirling = elbo_exact + stirling_correction(counts)`, for concrete `(n, p)` counts.
    It is a constant of the data, summed in float64: in float32 the sum over oaks loses
    more than one nat.
    """
    with jax.enable_x64(True):
        counts = jnp.asarray(np.asarray(counts), dtype=jnp.float64)
        return float(jnp.sum(log_factorial(counts)) - jnp.sum(log_factorial_stirling(counts)))


def log_det_spd(matrix: jax.Array) -> jax.Array:
    """log det of a symmetric positive-definite `(p, p)` matrix, via its Cholesky factor.

    `log(det(matrix))` overflows in float32 once det exceeds ~3e38, which happens at p = 114;
    the sum of log-diagonal entries of the Cholesky factor does not.
    """
    return log_det_from_cholesky(jnp.linalg.cholesky(matrix))


def log_det_from_cholesky(chol: jax.Array) -> jax.Array:
    """log det(L L') from the lower Cholesky factor L `(p, p)`: 2 sum_j log L_jj."""
    return 2.0 * jnp.sum(jnp.log(jnp.diagonal(chol)))


def closed_form_coef(covariates: jax.Array, latent_mean: jax.Array) -> jax.Array:
    """Least-squares B = (X'X)^{-1} X'M: `(n, d)`, `(n, p)` -> `(d, p)`."""
    return jnp.linalg.solve(covariates.T @ covariates, covariates.T @ latent_mean)


def scatter_matrix(residuals: jax.Array, variance: jax.Array) -> jax.Array:
    """(M - XB)'(M - XB) + diag(sum_i S_i^2), `(p, p)`, from the `(n, p)` residuals M - XB and
    variances S^2: n Sigma at the closed form, and the sum over samples that the ELBO's trace
    term needs (a sum of per-sample terms, so shards of samples can add theirs up)."""
    return residuals.T @ residuals + jnp.diag(column_sums(variance))


def closed_form_covariance(
    covariates: jax.Array, variational: Variational, coef: jax.Array
) -> jax.Array:
    """Sigma = ((M - XB)'(M - XB) + diag(sum_i S_i**2)) / n, a `(p, p)` matrix."""
    residuals = variational.latent_mean - covariates @ coef
    return scatter_matrix(residuals, jnp.square(variational.latent_sqrt_var)) / residuals.shape[0]


def closed_form_params(data: PLNData, variational: Variational) -> ModelParams:
    """The M-step: the B and Sigma that maximise the ELBO for fixed variational parameters."""
    coef = closed_form_coef(data.covariates, variational.latent_mean)
    return ModelParams(coef, closed_form_covariance(data.covariates, variational, coef))


class ElboStatistics(NamedTuple):
    """The sums over samples that the ELBO needs; each is a sum of per-sample terms.

    Because they are sums, a data-parallel ELBO computes them on each shard of samples and
    adds them up (`psum`) before `elbo_from_statistics`.

    Attributes:
        poisson: scalar sum_ij [Y(O + M) - exp(O + M + S^2/2) + log S - log Y!].
        scatter: `(p, p)` matrix (M - XB)'(M - XB) + diag(sum_i S_i^2).
        n_samples: number of samples summed (a scalar array, so it can be summed too).
    """

    poisson: jax.Array
    scatter: jax.Array
    n_samples: jax.Array


def elbo_statistics(data: PLNData, variational: Variational, coef: jax.Array) -> ElboStatistics:
    """The per-data sums of the ELBO for `(n, p)` data, M, S and a `(d, p)` coef."""
    counts, offsets, covariates = data
    mean, sqrt_var = variational
    variance = jnp.square(sqrt_var)
    log_rate = offsets + mean
    poisson = jnp.sum(
        counts * log_rate
        - jnp.exp(log_rate + 0.5 * variance)
        + 0.5 * jnp.log(variance)
        - log_factorial(counts)
    )
    scatter = scatter_matrix(mean - covariates @ coef, variance)
    return ElboStatistics(poisson, scatter, jnp.asarray(counts.shape[0], dtype=poisson.dtype))


def elbo_from_statistics(stats: ElboStatistics, covariance: jax.Array) -> jax.Array:
    """Completes the ELBO from its sums and the `(p, p)` covariance Sigma (scalar)."""
    chol = jnp.linalg.cholesky(covariance)
    n_species = covariance.shape[0]
    trace = jnp.trace(cho_solve((chol, True), stats.scatter))
    return (
        stats.poisson
        - 0.5 * stats.n_samples * log_det_from_cholesky(chol)
        - 0.5 * trace
        + 0.5 * stats.n_samples * n_species
    )


def elbo(data: PLNData, variational: Variational, params: ModelParams) -> jax.Array:
    """The evidence lower bound of the PLN model, with exact log-factorials.

    ELBO = sum_ij [ Y(O + M) - exp(O + M + S^2/2) + log S - log Y! ]
           - n/2 log det Sigma - 1/2 tr(Sigma^{-1} [(M - XB)'(M - XB) + diag(sum_i S_i^2)])
           + n p / 2

    (0.5 log S^2 = log S: the entropy of q up to a constant that cancels with n p / 2.)

    Args:
        data: counts and offsets `(n, p)`, covariates `(n, d)`.
        variational: M and S, each `(n, p)`.
        params: B `(d, p)` and Sigma `(p, p)`.

    Returns:
        A scalar (float32 unless x64 is enabled).
    """
    return elbo_from_statistics(elbo_statistics(data, variational, params.coef), params.covariance)


def profiled_elbo(data: PLNData, variational: Variational) -> jax.Array:
    """The ELBO with B and Sigma replaced by their closed forms (what pyPLNmodels optimises)."""
    return elbo(data, variational, closed_form_params(data, variational))
