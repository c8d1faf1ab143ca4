"""Do the intervals cover? Simulate many data sets from a known PLN model, fit them all in one
`vmap`ped program (`level6.fit_many`), build each coefficient's interval by the sandwich and by
a parametric bootstrap of each fit, and count how often the intervals hold the true values.

The sandwich is Batardiere, Chiquet and Mariadassou's corrected variational sandwich for B, the
formula of pyPLNmodels' `SandwichPln` (`bootstrap.pyplnmodels_sandwich` calls that one), written
here in JAX so that it runs on a whole batch of fits at once, in float64. The bootstrap draws
`n_boot` data sets from each replicate's fit (`draw_datasets`: the model of
`bootstrap.draw_counts`, drawn with NumPy), refits them all, and gives B and Fisher's z of each
correlation of Sigma a Student-t interval from their spread.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import optax

from ..config import by_device
from . import level5, level6
from ._algorithm import CONVERGED, FitResult
from ._data import PLNData, as_float64, make_data
from ._model import ModelParams
from .bootstrap import spread
from .convergence import DEFAULT_TOL


class StudySizes(NamedTuple):
    """The sizes of the coverage page: `species`, the p of each study (at n = 116, oaks' n);
    `n_replicates`, the data sets R fitted per study; `n_boot`, the bootstrap draws per replicate."""

    species: tuple[int, ...]
    n_replicates: int
    n_boot: int


def study_sizes() -> StudySizes:
    """Small on a CPU (the page runs in about two minutes), larger on a GPU. p stays at most
    38: the sandwich needs n >= d p, 116 >= 3 p with an intercept and two covariates."""
    return by_device(
        cpu=StudySizes(species=(5, 20), n_replicates=200, n_boot=5),
        accelerator=StudySizes(species=(5, 35), n_replicates=1000, n_boot=20),
    )


class KnownModel(NamedTuple):
    """A PLN model to simulate from: the design (`data`'s X and O; its counts are zeros) and the
    true B and Sigma (`params`)."""

    data: PLNData
    params: ModelParams


def known_model(
    n_samples: int,
    n_species: int,
    *,
    rng: np.random.Generator,
    n_covariates: int = 3,
    variance: float = 0.5,
    correlation: float = 0.6,
) -> KnownModel:
    """An intercept and `n_covariates - 1` standard normal covariates; intercepts from 0.5 to
    2.5 (common species: at least a few counts in most samples), slopes N(0, 0.3^2), no offsets,
    and Sigma_jk = variance * correlation^|j - k|."""
    if n_samples < 1 or n_species < 2 or n_covariates < 1:
        raise ValueError("need n_samples >= 1, n_species >= 2 and n_covariates >= 1.")
    if not -1.0 < correlation < 1.0 or variance <= 0:
        raise ValueError(
            f"need -1 < correlation < 1 and variance > 0, got {correlation}, {variance}."
        )
    slopes = rng.standard_normal((n_samples, n_covariates - 1))
    covariates = np.column_stack([np.ones(n_samples), slopes])
    coef = np.vstack(
        [
            np.linspace(0.5, 2.5, n_species),
            0.3 * rng.standard_normal((n_covariates - 1, n_species)),
        ]
    )
    lags = np.abs(np.subtract.outer(np.arange(n_species), np.arange(n_species)))
    design = make_data(np.zeros((n_samples, n_species)), None, covariates)
    params = ModelParams(
        jnp.asarray(coef, design.counts.dtype),
        jnp.asarray(variance * correlation**lags, design.counts.dtype),
    )
    return KnownModel(design, params)


def draw_datasets(
    design: PLNData, params: ModelParams, *, rng: np.random.Generator, n_draws: int
) -> list:
    """`n_draws` data sets from each of the R models `params` (arrays with a leading axis of R)
    on `design`'s X and O, round by round (the first R are one data set from each model):
    Z_i ~ N(X_i B, Sigma), Y_ij ~ Poisson(exp(O_ij + Z_ij)), as `bootstrap.draw_counts`, but
    with NumPy's generator: JAX's Poisson sampler runs a loop per entry, which on a CPU cost
    as much as the fits of this study when it was tried."""
    coef = np.asarray(params.coef, np.float64)
    covariance = np.asarray(params.covariance, np.float64)
    offsets, covariates = np.asarray(design.offsets), np.asarray(design.covariates)
    mean = covariates @ coef  # (R, n, p)
    jitter = 1e-6 * np.mean(np.diagonal(covariance, axis1=1, axis2=2), axis=1)[:, None, None]
    factor = np.linalg.cholesky(covariance + jitter * np.eye(covariance.shape[-1]))
    datasets = []
    for _ in range(n_draws):
        latent = mean + rng.standard_normal(mean.shape) @ np.swapaxes(factor, 1, 2)
        counts = rng.poisson(np.exp(offsets + latent))
        datasets += [make_data(table, offsets, covariates) for table in counts]
    return datasets


def fit_in_batches(
    datasets: list, batch: int, n_iter: int, optimizer: optax.GradientTransformation, tol: float
) -> FitResult:
    """`level6.fit_many` on `batch` data sets at a time (one compiled program for all batches),
    the results joined along the leading axis. `len(datasets)` must be a multiple of `batch`."""
    if batch < 1 or len(datasets) % batch:
        raise ValueError(f"{len(datasets)} data sets do not split into batches of {batch}.")
    parts = [
        level6.fit_many(datasets[start : start + batch], n_iter, optimizer=optimizer, tol=tol)
        for start in range(0, len(datasets), batch)
    ]
    return jax.tree.map(lambda *leaves: np.concatenate([np.asarray(x) for x in leaves]), *parts)


def _sandwich_one(counts, covariates, offsets, latent_mean, latent_sqrt_var, covariance):
    n_samples, n_species = counts.shape
    rate = jnp.exp(offsets + latent_mean + 0.5 * latent_sqrt_var**2)
    # D_n = mean over samples of kron(r r', x x') = u u', with u = kron(r, x): species-major
    scores = ((counts - rate)[:, :, None] * covariates[:, None, :]).reshape(n_samples, -1)
    d_n = scores.T @ scores / n_samples
    precision_diag = jnp.diag(jnp.linalg.inv(covariance))
    s2 = latent_sqrt_var**2
    extra = 1 / rate + s2**2 / (1 + s2 * (rate + precision_diag))
    blocks = jnp.linalg.inv(covariance + jax.vmap(jnp.diag)(extra))  # (n, p, p)
    # C_n = -mean over samples of kron(block_i, x_i x_i'): entry (j d + k, l d + m)
    c_n = -jnp.einsum("ijl,ik,im->jklm", blocks, covariates, covariates) / n_samples
    c_n = c_n.reshape(scores.shape[1], scores.shape[1])
    c_inv = jnp.linalg.inv(c_n)
    variance = jnp.diag(c_inv @ d_n @ c_inv) / n_samples
    return variance.reshape(n_species, -1).T


_sandwich_each = jax.jit(jax.vmap(_sandwich_one))


def sandwich_variance(datasets: list, fits: FitResult) -> np.ndarray:
    """`(R, n_covariates, n_species)` the sandwich variance of B at each fit of `fit_many`
    (fit r on `datasets[r]`), in float64: the formula of pyPLNmodels' `SandwichPln`, read by
    coefficient (`bootstrap.pyplnmodels_sandwich(...).by_coef`), vmapped over the fits.

    Raises:
        ValueError: not one fit per data set, or fewer samples than coefficients (n < d p).
    """
    n_fits = np.shape(fits.params.coef)[0]
    if not datasets or len(datasets) != n_fits:
        raise ValueError(
            f"need one fit per data set, got {len(datasets)} data sets and {n_fits} fits."
        )
    n_samples, n_coef = datasets[0].n_samples, datasets[0].n_covariates * datasets[0].n_species
    if n_coef > n_samples:
        raise ValueError(f"the sandwich needs n >= d p, got n = {n_samples} and d p = {n_coef}.")
    stacked = PLNData(*(jnp.stack([jnp.asarray(d[i]) for d in datasets]) for i in range(3)))
    with jax.enable_x64(True):
        data, variational, covariance = as_float64(
            (stacked, fits.variational, fits.params.covariance)
        )
        variance = _sandwich_each(
            data.counts, data.covariates, data.offsets, *variational, covariance
        )
        return np.asarray(variance)


def wald_interval(estimate, standard_error, *, level: float = 0.95, df: float | None = None):
    """`(lower, upper)`: estimate -+ q * standard_error, q the normal quantile of `level`, or
    Student's t with `df` degrees of freedom (for a standard error estimated from df + 1 draws)."""
    if not 0 < level < 1:
        raise ValueError(f"level must lie in (0, 1), got {level}.")
    from scipy import stats  # here: scipy.stats takes a third of a second to import

    tail = 0.5 + level / 2
    quantile = stats.norm.ppf(tail) if df is None else stats.t.ppf(tail, df)
    estimate, standard_error = np.asarray(estimate), np.asarray(standard_error)
    return estimate - quantile * standard_error, estimate + quantile * standard_error


def correlations(covariance) -> np.ndarray:
    """The correlations above the diagonal of each covariance matrix: `(..., p (p - 1) / 2)`."""
    covariance = np.asarray(covariance, dtype=np.float64)
    scale = np.sqrt(np.diagonal(covariance, axis1=-2, axis2=-1))
    matrix = covariance / (scale[..., :, None] * scale[..., None, :])
    rows, cols = np.triu_indices(covariance.shape[-1], k=1)
    return matrix[..., rows, cols]


def coverage(lower, upper, truth) -> tuple[np.ndarray, np.ndarray]:
    """How often the intervals hold the truth, entry by entry.

    Args:
        lower, upper: `(R, ...)` the interval of each entry in each of R replicates; NaN where a
            replicate has no interval for that entry (such as a separated coefficient).
        truth: `(...)` the true value of each entry.

    Returns:
        `(coverage, n_intervals)`, each of shape `(...)`: the share of the replicates whose
        interval holds the truth, and how many replicates had an interval.

    Raises:
        ValueError: shapes that do not match, an interval whose lower end is above its upper
            end, or an entry with no interval in any replicate.
    """
    lower, upper, truth = (np.asarray(a, dtype=np.float64) for a in (lower, upper, truth))
    if lower.ndim < 1 or lower.shape != upper.shape or lower.shape[1:] != truth.shape:
        raise ValueError(
            f"lower and upper must be (R, ...) and truth (...), got {lower.shape}, {upper.shape}, {truth.shape}."
        )
    if np.any(lower > upper):
        raise ValueError("an interval has its lower end above its upper end.")
    present = np.isfinite(lower) & np.isfinite(upper)
    n_intervals = present.sum(axis=0)
    if np.any(n_intervals == 0):
        raise ValueError("an entry has no interval in any replicate.")
    held = present & (lower <= truth) & (truth <= upper)
    return held.sum(axis=0) / n_intervals, n_intervals


def monte_carlo_error(share, n_replicates) -> np.ndarray:
    """The standard error sqrt(c (1 - c) / R) of a coverage c measured on R replicates."""
    share, n_replicates = np.asarray(share, dtype=np.float64), np.asarray(n_replicates)
    if np.any((share < 0) | (share > 1)):
        raise ValueError("a coverage must lie in [0, 1].")
    if np.any(n_replicates < 1):
        raise ValueError("the number of replicates must be at least 1.")
    return np.sqrt(share * (1 - share) / n_replicates)


def pooled_coverage(lower, upper, truth) -> tuple[float, float]:
    """`(coverage, error)` of all the entries together: the share of all intervals that hold
    the truth, and its Monte-Carlo error from the spread of each replicate's share over the
    replicates (std / sqrt(R)), which counts the entries' dependence (they share replicates).
    Same arguments and errors as `coverage`."""
    coverage(lower, upper, truth)  # validates
    lower, upper, truth = (np.asarray(a, dtype=np.float64) for a in (lower, upper, truth))
    entries = tuple(range(1, lower.ndim))
    present = np.isfinite(lower) & np.isfinite(upper)
    held = present & (lower <= truth) & (truth <= upper)
    per_replicate = held.sum(axis=entries) / np.maximum(present.sum(axis=entries), 1)
    error = (
        per_replicate.std(ddof=1) / np.sqrt(len(per_replicate))
        if len(per_replicate) > 1
        else np.nan
    )
    return float(held.sum() / present.sum()), float(error)


class Intervals(NamedTuple):
    """The intervals of one study, each `(lower, upper)` with a leading axis of R replicates:
    `coef_sandwich` and `coef_bootstrap` `(R, d, p)`, `corr_bootstrap` `(R, p (p - 1) / 2)`;
    `corr_estimates`, each replicate fit's correlations `(R, p (p - 1) / 2)`;
    `replicates`, the R simulated data sets; `converged`, how many replicate fits and how many
    bootstrap refits converged, and how many refits there were; `n_separated`, the replicates'
    separated coefficients (no interval)."""

    coef_sandwich: tuple
    coef_bootstrap: tuple
    corr_bootstrap: tuple
    corr_estimates: np.ndarray
    replicates: list
    converged: tuple
    n_separated: int


def intervals(
    model: KnownModel,
    *,
    rng: np.random.Generator,
    n_replicates: int,
    n_boot: int,
    level: float = 0.95,
    n_iter: int = 2000,
    optimizer: optax.GradientTransformation = level5.NEWTON_MOMENTUM,
    tol: float = DEFAULT_TOL,
) -> Intervals:
    """Draw `n_replicates` data sets from `model`, fit them in one `fit_many`, and give each B
    an interval by the sandwich (normal quantile) and by a bootstrap of `n_boot` draws per
    replicate (Student's t, n_boot - 1 degrees of freedom), and each correlation of Sigma a
    bootstrap interval on Fisher's z scale. Separated coefficients get no interval (NaN)."""
    if n_replicates < 2 or n_boot < 2:
        raise ValueError(f"need n_replicates >= 2 and n_boot >= 2, got {n_replicates}, {n_boot}.")
    truths = jax.tree.map(lambda a: jnp.broadcast_to(a, (n_replicates, *a.shape)), model.params)
    datasets = draw_datasets(model.data, truths, rng=rng, n_draws=1)
    fits = fit_in_batches(datasets, n_replicates, n_iter, optimizer, tol)
    separated = np.asarray(fits.separated, dtype=bool)  # fit_many always marks it
    coef = np.where(separated, np.nan, np.asarray(fits.params.coef, np.float64))
    sandwich = wald_interval(coef, np.sqrt(sandwich_variance(datasets, fits)), level=level)
    draws = draw_datasets(model.data, fits.params, rng=rng, n_draws=n_boot)
    refits = fit_in_batches(draws, n_replicates, n_iter, optimizer, tol)
    shape = (n_boot, n_replicates)  # draws come round by round: one from each replicate's fit
    refit_coef = np.asarray(refits.params.coef, np.float64).reshape(*shape, *coef.shape[1:])
    boot_se, _ = spread(refit_coef, np.asarray(refits.separated, bool).reshape(refit_coef.shape))
    boot = wald_interval(coef, boot_se, level=level, df=n_boot - 1)
    corr_fit = correlations(fits.params.covariance)
    z_fit = np.arctanh(corr_fit)
    z_refit = np.arctanh(correlations(refits.params.covariance)).reshape(*shape, -1)
    z_lower, z_upper = wald_interval(z_fit, z_refit.std(axis=0, ddof=1), level=level, df=n_boot - 1)
    converged = [int(np.sum(np.asarray(f.status) == CONVERGED)) for f in (fits, refits)]
    return Intervals(
        sandwich,
        boot,
        (np.tanh(z_lower), np.tanh(z_upper)),
        corr_fit,
        datasets,
        (*converged, len(draws)),
        int(np.sum(separated)),
    )


def coverage_rows(name: str, intervals: Intervals, model: KnownModel) -> list[dict]:
    """The rows of the coverage table for one study: B's intercepts and slopes by each method,
    and Sigma's correlations by the bootstrap; each row's coverage is the share of all its
    intervals that hold the truth, with the Monte-Carlo error of that mean (`pooled_coverage`)
    and that of one entry at that coverage, and the range of the entries' coverages."""
    coef = np.asarray(model.params.coef, np.float64)
    corr = correlations(model.params.covariance)
    cases = [
        ("B intercepts", "sandwich", intervals.coef_sandwich, coef, slice(0, 1)),
        ("B intercepts", "bootstrap", intervals.coef_bootstrap, coef, slice(0, 1)),
        ("B slopes", "sandwich", intervals.coef_sandwich, coef, slice(1, None)),
        ("B slopes", "bootstrap", intervals.coef_bootstrap, coef, slice(1, None)),
        ("Sigma correlations", "bootstrap", intervals.corr_bootstrap, corr, slice(None)),
    ]
    rows = []
    for what, method, (lower, upper), truth, entries in cases:
        share, counted = coverage(lower[:, entries], upper[:, entries], truth[entries])
        mean, mean_error = pooled_coverage(lower[:, entries], upper[:, entries], truth[entries])
        rows.append(
            {
                "study": name,
                "parameter": what,
                "interval": method,
                "entries": share.size,
                "coverage": mean,
                "MC error (mean)": mean_error,
                "MC error (one entry)": float(monte_carlo_error(mean, int(counted.min()))),
                "lowest": float(share.min()),
                "highest": float(share.max()),
            }
        )
    return rows
