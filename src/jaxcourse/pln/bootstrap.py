"""A parametric bootstrap of B's standard errors: simulate data sets from a fitted PLN model, refit
them all in one `vmap`ped program (`level6.fit_many`), and take the spread of the refitted B.

The bootstrap keeps the design: every simulated data set has the covariates X and offsets O of the
data it was fitted to; only the counts are drawn again, Z_i ~ N(X_i B, Sigma) and
Y_ij ~ Poisson(exp(O_ij + Z_ij)).

Rare species break it. A species with mostly zero counts is simulated with mostly zeros too, so
in some draws it has only zeros in a group of samples (quasi-separation, `separation`): the
refit sends some of its coefficients to +-infinity and returns a finite limit point of tens or
hundreds, and one such draw inflates the standard deviation far beyond the spread of the
estimates (on scRNA, a gene with 98% zeros that the data do not separate got 19.1 against a
median of 0.09). A species separated in the data is simulated from its limit point, so every draw
separates it. `bootstrap_coef` therefore re-runs the separation check on every draw, counts per
coefficient the draws that separated it (`Bootstrap.n_separated`) and gives no standard error
(NaN) to a coefficient separated in any draw, unless asked (`allow_separated=True`).
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
            draws (ddof=1): the bootstrap standard error of each entry of B; NaN where
            `n_separated` is not 0, unless `bootstrap_coef` was called with `allow_separated=True`.
        n_converged: how many of the refits stopped on their tolerance.
        fits: the `FitResult` of `level6.fit_many`, one entry per draw (`level6.fit_at` picks one).
        n_separated: `(n_covariates, n_species)` int, in how many draws each coefficient was
            separated (sent to +-infinity, `FitResult.separated`): its refits there are limit
            points, not estimates.
    """

    coefs: np.ndarray
    standard_errors: np.ndarray
    n_converged: int
    fits: FitResult
    n_separated: np.ndarray


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
    allow_separated: bool = False,
) -> Bootstrap:
    """The parametric bootstrap of B: `simulate_from_fit`, then all the refits in one
    `level6.fit_many` call, then the standard deviation of the refitted B over the draws.

    It assumes the fitted model is true (it draws from it) and measures the spread of the
    variational estimator, not its bias. Rare species need care: a draw in which a species has
    only zeros in a group of samples separates some of its coefficients, whose refits are then
    limit points of tens or hundreds, not estimates, and inflate the spread. So every draw is
    checked for separation (`fit_many` does it), `n_separated` counts the draws that separated
    each coefficient, and a coefficient separated in at least one draw gets a NaN standard error.
    A species separated in the data itself (`params` at its limit point) is separated in every
    draw. A rare species that no draw separates keeps its standard error, but its interval
    B +- 2 SE is on the log scale of a rate estimated from a few non-zero counts: wide, and
    symmetric only as far as the refits are.

    Args:
        data: the data the model was fitted to (its X and O are kept).
        params: the fitted B and Sigma (a fit's `.params`).
        key: a JAX PRNG key; n_draws: the number of simulated data sets R (at least 2).
        n_iter, optimizer, tol: passed to `level6.fit_many`.
        allow_separated: True to take the standard deviation over all draws even for
            coefficients that some draws separated (their limit points included).

    Raises:
        TypeError/ValueError: as `simulate_from_fit`, or `allow_separated` is not a bool.
    """
    if not isinstance(allow_separated, bool):
        raise TypeError(
            f"allow_separated must be True or False, got {type(allow_separated).__name__}."
        )
    datasets = simulate_from_fit(data, params, key=key, n_draws=n_draws)
    fits = level6.fit_many(datasets, n_iter, optimizer=optimizer, tol=tol)
    coefs = np.asarray(fits.params.coef, dtype=np.float64)
    n_converged = int(np.sum(np.asarray(fits.status) == CONVERGED))
    standard_errors, n_separated = spread(coefs, fits.separated, allow_separated=allow_separated)
    return Bootstrap(coefs, standard_errors, n_converged, fits, n_separated)


def spread(
    coefs, separated, *, axis: int = 0, allow_separated: bool = False
) -> tuple[np.ndarray, np.ndarray]:
    """`(standard_errors, n_separated)` of refitted B: the standard deviation over the draws
    (`axis`, ddof=1) and, per coefficient, how many draws separated it (`separated`, a bool
    array of `coefs`' shape); the standard error is NaN where that count is not 0, unless
    `allow_separated`."""
    coefs = np.asarray(coefs, dtype=np.float64)
    n_separated = np.asarray(separated).sum(axis=axis).astype(np.int64)
    standard_errors = coefs.std(axis=axis, ddof=1)
    if not allow_separated:
        standard_errors = np.where(n_separated > 0, np.nan, standard_errors)
    return standard_errors, n_separated


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
