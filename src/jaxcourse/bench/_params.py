"""B and the correlations of Sigma compared between fits: how far apart, where, and why there.

Two fits whose ELBOs agree to a fraction of a nat can still differ in B: along flat directions
of the ELBO (species with many zeros, whose rates the data barely pin down) the parameters move
a lot for a tiny change of the ELBO. Every fit's B and Sigma are recomputed here in float64 by
the same closed forms, from its final (M, S), so only the fits differ, not the arithmetic.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import jax
import numpy as np

if TYPE_CHECKING:
    import pandas

from ..pln import PLNData, Variational, as_float64, closed_form_params
from ..pln.separation import coefficient_mask, find_separation

MANY_ZEROS = 0.8
"""A species counts as mostly zeros when at least this fraction of its counts are 0."""


def params_float64(data: PLNData, variational) -> tuple[np.ndarray, np.ndarray]:
    """The closed-form `(d, p)` B and `(p, p)` Sigma of `variational` (any (M, S) pair), in float64."""
    with jax.enable_x64(True):
        params = closed_form_params(as_float64(data), Variational(*as_float64(tuple(variational))))
        return np.asarray(params.coef), np.asarray(params.covariance)


def correlation(covariance: np.ndarray) -> np.ndarray:
    """The correlation matrix of a covariance matrix."""
    scale = np.sqrt(np.diag(covariance))
    return covariance / np.outer(scale, scale)


def zero_fractions(data: PLNData) -> np.ndarray:
    """`(p,)` the fraction of zero counts of each species."""
    return np.mean(np.asarray(data.counts) == 0, axis=0)


def species_gaps(gaps: np.ndarray, separated: np.ndarray) -> np.ndarray:
    """`(p,)` the largest of each species' `(d, p)` |differences| in B over its coefficients that
    are not `separated`; NaN for a species whose every coefficient is."""
    kept = np.where(separated, -np.inf, gaps).max(axis=0)
    return np.where(np.isfinite(kept), kept, np.nan)


def nan_mean(values: np.ndarray) -> float:
    """The mean of the values that are not NaN; NaN if none is."""
    finite = values[~np.isnan(values)]
    return float(finite.mean()) if finite.size else float("nan")


def compare_params(data: PLNData, fits: dict[str, Any], against: str) -> pandas.DataFrame:
    """One row per fit of `fits` (name -> final (M, S)) other than `against`: how its B and the
    correlations of its Sigma differ from those of `fits[against]`.

    Columns: the largest |difference| in B, the species where it is (its index and fraction of
    zeros), the mean |difference| in B over species with at least `MANY_ZEROS` zeros and over
    the others, and the largest |difference| between correlations with its pair of species.
    Coefficients that quasi-separation sends to +-infinity (`separation.coefficient_mask`) are
    left out of the B columns, since their values are limit points, not estimates; the column
    "separated B (left out)" says how many (a species with every coefficient separated gets NaN).
    """
    import pandas as pd

    if against not in fits:
        raise ValueError(f"against must name one of the fits {sorted(fits)}, got {against!r}.")
    zeros = zero_fractions(data)
    many = zeros >= MANY_ZEROS
    separated = coefficient_mask(find_separation(data))
    coef_0, cov_0 = params_float64(data, fits[against])
    corr_0 = correlation(cov_0)
    rows = []
    for name, variational in fits.items():
        if name == against:
            continue
        coef, cov = params_float64(data, variational)
        gap_b = species_gaps(np.abs(coef - coef_0), separated)
        gap_corr = np.abs(correlation(cov) - corr_0)
        worst = int(np.nanargmax(gap_b)) if np.isfinite(gap_b).any() else 0
        pair = np.unravel_index(int(np.argmax(gap_corr)), gap_corr.shape)
        rows.append(
            {
                "fit": name,
                "against": against,
                "max |dB|": float(gap_b[worst]),
                "at species": worst,
                "its zeros": float(zeros[worst]),
                f"mean |dB|, >= {MANY_ZEROS:.0%} zeros": nan_mean(gap_b[many]),
                f"mean |dB|, < {MANY_ZEROS:.0%} zeros": nan_mean(gap_b[~many]),
                "separated B (left out)": int(separated.sum()),
                "max |d corr|": float(gap_corr[pair]),
                "at species pair": f"{pair[0]}, {pair[1]}",
            }
        )
    return pd.DataFrame(rows).set_index("fit")
