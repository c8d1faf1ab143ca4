"""A parametric bootstrap of B's standard errors: simulate data sets from a fitted PLN model, refit
them all in one `vmap`ped program (`level6.fit_many`), and take the spread of the refitted B.

The bootstrap keeps the design: every simulated data set has the covariates X and offsets O of the
data it was fitted to; only the counts are drawn again, Z_i ~ N(X_i B, Sigma) and
Y_ij ~ Poisson(exp(O_ij + Z_ij)).
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import optax

from . import level5, level6
from ._algorithm import CONVERGED, FitResult
from ._data import PLNData, make_data
from ._model import ModelParams

# pyPLNmodels' sandwich reads its private attributes, so it lives in _reference with the other such reads.
from ._reference import SandwichVariance as SandwichVariance
from ._reference import pyplnmodels_sandwich as pyplnmodels_sandwich
from .convergence import DEFAULT_TOL


class Bootstrap(NamedTuple):
    """The result of `bootstrap_coef`.

    Attributes:
        coefs: `(n_draws, n_covariates, n_species)` B refitted on each simulated data set.
        standard_errors: `(n_covariates, n_species)` the standard deviation of `coefs` over the
            draws (ddof=1): the bootstrap standard error of each entry of B.
        n_converged: how many of the refits stopped on their tolerance.
        fits: the `FitResult` of `level6.fit_many`, one entry per draw (`level6.fit_at` picks one).
    """

    coefs: np.ndarray
    standard_errors: np.ndarray
    n_converged: int
    fits: FitResult


def _check_params(data: PLNData, params) -> ModelParams:
    if not isinstance(params, ModelParams):
        raise TypeError(
            f"params must be a pln.ModelParams (a fit's .params), got {type(params).__name__}."
        )
    coef_shape = (data.n_covariates, data.n_species)
    if jnp.shape(params.coef) != coef_shape:
        raise ValueError(
            f"params.coef must have shape {coef_shape} (covariates x species), got {jnp.shape(params.coef)}."
        )
    if jnp.shape(params.covariance) != (data.n_species, data.n_species):
        raise ValueError(
            f"params.covariance must have shape {(data.n_species, data.n_species)}, got {jnp.shape(params.covariance)}."
        )
    if not (
        np.all(np.isfinite(np.asarray(params.coef)))
        and np.all(np.isfinite(np.asarray(params.covariance)))
    ):
        raise ValueError("params must be finite: bootstrap from a fit that did not diverge.")
    return params


def _check_draws(n_draws) -> int:
    if isinstance(n_draws, bool) or not isinstance(n_draws, (int, np.integer)):
        raise TypeError(f"n_draws must be an int, got {type(n_draws).__name__}.")
    if n_draws < 2:
        raise ValueError(
            f"n_draws must be at least 2 (a standard deviation needs two draws), got {n_draws}."
        )
    return int(n_draws)


@jax.jit
def draw_counts(key: jax.Array, data: PLNData, params: ModelParams) -> jax.Array:
    """One `(n_samples, n_species)` table of counts from the PLN model `params` on `data`'s X and O:
    Z_i ~ N(X_i B, Sigma), then Y_ij ~ Poisson(exp(O_ij + Z_ij))."""
    key_latent, key_counts = jax.random.split(key)
    mean = data.covariates @ params.coef
    # Sigma can be singular to rounding (p close to n): add a tiny ridge so that its Cholesky factor exists
    jitter = 1e-6 * jnp.mean(jnp.diag(params.covariance))
    covariance = params.covariance + jitter * jnp.eye(data.n_species, dtype=params.covariance.dtype)
    latent = jax.random.multivariate_normal(key_latent, mean, covariance, method="cholesky")
    return jax.random.poisson(key_counts, jnp.exp(data.offsets + latent)).astype(data.counts.dtype)


def simulate_from_fit(
    data: PLNData, params: ModelParams, *, key: jax.Array, n_draws: int
) -> list[PLNData]:
    """`n_draws` data sets drawn from the fitted model `params` (B, Sigma), each with `data`'s
    covariates and offsets and new counts (`draw_counts`, one key per draw).

    Raises:
        TypeError/ValueError: `data` is not a `PLNData`, `params` does not match it or is not
            finite, or `n_draws` is not an int of at least 2.
    """
    if not isinstance(data, PLNData):
        raise TypeError(
            f"data must be a PLNData (use jaxcourse.pln.make_data), got {type(data).__name__}."
        )
    params = _check_params(data, params)
    n_draws = _check_draws(n_draws)
    counts = np.asarray(
        jax.vmap(draw_counts, in_axes=(0, None, None))(jax.random.split(key, n_draws), data, params)
    )
    return [
        make_data(table, np.asarray(data.offsets), np.asarray(data.covariates)) for table in counts
    ]


def bootstrap_coef(
    data: PLNData,
    params: ModelParams,
    *,
    key: jax.Array,
    n_draws: int,
    n_iter: int = 2000,
    optimizer: optax.GradientTransformation = level5.NEWTON_MOMENTUM,
    tol: float = DEFAULT_TOL,
) -> Bootstrap:
    """The parametric bootstrap of B: `simulate_from_fit`, then all the refits in one
    `level6.fit_many` call, then the standard deviation of the refitted B over the draws.

    Args:
        data: the data the model was fitted to (its X and O are kept).
        params: the fitted B and Sigma (a fit's `.params`).
        key: a JAX PRNG key; n_draws: the number of simulated data sets R (at least 2).
        n_iter, optimizer, tol: passed to `level6.fit_many`.
    """
    datasets = simulate_from_fit(data, params, key=key, n_draws=n_draws)
    fits = level6.fit_many(datasets, n_iter, optimizer=optimizer, tol=tol)
    coefs = np.asarray(fits.params.coef, dtype=np.float64)
    n_converged = int(np.sum(np.asarray(fits.status) == CONVERGED))
    return Bootstrap(coefs, coefs.std(axis=0, ddof=1), n_converged, fits)


def loop_of_fits(
    datasets: list[PLNData],
    n_iter: int = 2000,
    *,
    optimizer: optax.GradientTransformation = level5.NEWTON_MOMENTUM,
    tol: float = DEFAULT_TOL,
) -> np.ndarray:
    """The refits of `bootstrap_coef` one at a time, with `level5.fit` in a Python loop:
    `(len(datasets), n_covariates, n_species)` B, the same numbers as `fit_many`'s."""
    if not datasets:
        raise ValueError("loop_of_fits needs at least one data set.")
    return np.stack(
        [
            np.asarray(level5.fit(d, n_iter, optimizer=optimizer, tol=tol).params.coef)
            for d in datasets
        ]
    )
