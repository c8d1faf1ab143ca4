"""Quasi-separation: species whose counts are all zero in a group of samples the covariates single out.

In a Poisson GLM, the coefficients of a species have no finite maximum-likelihood estimate when
some direction b of the coefficients leaves the fitted rate unchanged on every sample where the
species was seen (x_i'b = 0 where Y_ij > 0) and lowers it on some samples where it was not
(x_i'b < 0 where Y_ij = 0): the likelihood keeps rising as the coefficients move along b. With a
factor covariate this is a level (a group of samples) in which the species has only zeros. The
PLN ELBO inherits it: the latent means M_ij of those samples and the species' coefficients B
drift to -infinity together, the rates A_ij go to 0, and the ELBO creeps towards a finite
supremum without reaching it, so a fit never settles and gradient steps grow unstable.

`find_separation` finds, for every species, the samples on which the rate can be driven to 0
(one small linear program per species, after a rank test that clears most species at once).
The supremum of the ELBO is then the ELBO in which those entries contribute no Poisson term: their
rate is 0 in the limit and their count is 0. Levels 5 and 6 fit that limit directly (see
`profiled.prepare`), so they converge as on data without separation, and `warn_separation` says
which species and groups are affected.
"""

from __future__ import annotations

import warnings
from typing import NamedTuple

import numpy as np
from scipy.linalg import null_space
from scipy.optimize import linprog

from ._data import PLNData

TOLERANCE = 1e-9
"""Below this, x_i'b counts as zero (the directions b are scaled to at most 1 per entry)."""


class SeparationWarning(UserWarning):
    """Some species have only zero counts in a group of samples: their coefficients have no finite estimate."""


class Separation(NamedTuple):
    """Where the rate of a species can be driven to 0 without lowering the ELBO elsewhere.

    Attributes:
        mask: `(n_samples, n_species)` bool, True on the entries (all with zero counts) whose
            rate goes to 0 at the supremum of the ELBO.
        species: the indices of the separated species, in increasing order.
    """

    mask: np.ndarray
    species: tuple[int, ...]

    @property
    def any(self) -> bool:
        return bool(self.species)


def _unique_rows(matrix: np.ndarray) -> np.ndarray:
    return np.unique(matrix, axis=0) if matrix.size else matrix


def separating_rows(covariates: np.ndarray, seen: np.ndarray) -> np.ndarray:
    """The samples on which one species' rate can be driven to 0: `(n_samples,)` bool.

    Args:
        covariates: `(n_samples, n_covariates)` X, float64.
        seen: `(n_samples,)` bool, True where the species' count is positive.

    A direction b must keep x_i'b = 0 on the seen samples, so b = N c with N a basis of the
    null space of those rows; a linear program then finds c with x_i'N c <= 0 on the other
    samples, as many of them strictly negative as it can. Repeated until no new sample joins,
    since the union of separable sets is separable (the sum of their directions separates it).
    """
    basis = null_space(_unique_rows(covariates[seen])) if seen.any() else np.eye(covariates.shape[1])
    separated = np.zeros(covariates.shape[0], dtype=bool)
    if basis.shape[1] == 0:  # the seen samples pin every coefficient down
        return separated
    projected = covariates @ basis  # (n, r): x_i'N
    while True:
        open_rows = ~seen & ~separated
        if not open_rows.any():
            return separated
        # minimise the sum of x_i'N c over the open rows, with x_i'N c <= 0 on every unseen row
        constraints = _unique_rows(projected[~seen])
        result = linprog(
            projected[open_rows].sum(axis=0),
            A_ub=constraints,
            b_ub=np.zeros(len(constraints)),
            bounds=[(-1.0, 1.0)] * basis.shape[1],
            method="highs",
        )
        if result.status != 0 or result.fun > -TOLERANCE:
            return separated
        new = (projected @ result.x < -TOLERANCE) & ~seen
        if not (new & ~separated).any():
            return separated
        separated |= new


def find_separation(data: PLNData) -> Separation:
    """The entries whose rate goes to 0 at the supremum of the ELBO, for every species of `data`.

    Species seen on samples whose covariates span the whole covariate space cannot be separated
    and are cleared by that rank test alone; the others get `separating_rows`.
    """
    if not isinstance(data, PLNData):
        raise TypeError(f"data must be a PLNData (use jaxcourse.pln.make_data), got {type(data).__name__}.")
    counts = np.asarray(data.counts)
    covariates = np.asarray(data.covariates, dtype=np.float64)
    mask = np.zeros(counts.shape, dtype=bool)
    n_covariates = covariates.shape[1]
    for species in range(counts.shape[1]):
        seen = counts[:, species] > 0
        if seen.all():
            continue
        if seen.any() and np.linalg.matrix_rank(covariates[seen]) == n_covariates:
            continue
        mask[:, species] = separating_rows(covariates, seen)
    return Separation(mask, tuple(int(j) for j in np.flatnonzero(mask.any(axis=0))))


def describe_groups(covariates: np.ndarray, rows: np.ndarray, *, at_most: int = 3) -> str:
    """The samples `rows` in words: their covariate rows when they share a few (a factor level),
    otherwise how many samples they are."""
    distinct = _unique_rows(covariates[rows])
    count = int(rows.sum())
    if len(distinct) <= at_most:
        patterns = " or ".join("(" + ", ".join(f"{value:g}" for value in row) + ")" for row in distinct)
        return f"the {count} samples with covariates {patterns}"
    return f"{count} samples"


def separation_message(data: PLNData, separation: Separation, *, at_most: int = 8) -> str:
    """The warning text: how many species, and for the first `at_most` which samples."""
    covariates = np.asarray(data.covariates, dtype=np.float64)
    lines = [
        f"quasi-separation: {len(separation.species)} species have only zero counts in a group of samples "
        "that the covariates single out, so their coefficients in B have no finite estimate (the ELBO keeps "
        "rising as they go to -infinity). The fit treats those zero counts as that limit does (rate 0); "
        "the B it reports for them is not an estimate. Species (0-based column) and samples:"
    ]
    for species in separation.species[:at_most]:
        lines.append(f"  species {species}: {describe_groups(covariates, separation.mask[:, species])}")
    if len(separation.species) > at_most:
        lines.append(f"  ... and {len(separation.species) - at_most} more species (pln.find_separation lists all).")
    return "\n".join(lines)


def warn_separation(data: PLNData, separation: Separation, *, stacklevel: int = 3) -> None:
    """Issues a `SeparationWarning` naming the separated species and groups, if there are any."""
    if separation.any:
        warnings.warn(separation_message(data, separation), SeparationWarning, stacklevel=stacklevel)
