"""Quasi-separation: species whose counts are all zero in a group of samples the covariates single out.

In a Poisson GLM, the coefficients of a species have no finite maximum-likelihood estimate when
some direction b of the coefficients leaves the fitted rate unchanged on every sample where the
species was seen (x_i'b = 0 where Y_ij > 0), raises it on no sample where it was not
(x_i'b <= 0 where Y_ij = 0) and lowers it on some of those (x_i'b < 0): the likelihood keeps
rising as the coefficients move along b. With a
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

import jax.numpy as jnp
import numpy as np
import numpy.typing as npt

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
        directions: `(n_covariates, n_species)` for each species a direction b of its
            coefficients with x_i'b < 0 exactly on its masked samples and 0 on every other
            sample, those where it was seen included (zero for species that are not separated).
        slopes: `(n_samples, n_species)` x_i'b for each species' direction b.
    """

    mask: np.ndarray
    species: tuple[int, ...]
    directions: np.ndarray
    slopes: np.ndarray

    @property
    def any(self) -> bool:
        return bool(self.species)


def _unique_rows(matrix: np.ndarray) -> np.ndarray:
    return np.unique(matrix, axis=0) if matrix.size else matrix


def no_separation(data: PLNData) -> Separation:
    """A `Separation` that holds nothing, shaped for `data`."""
    n_samples, n_species = data.counts.shape
    return Separation(
        np.zeros((n_samples, n_species), bool),
        (),
        np.zeros((data.covariates.shape[1], n_species)),
        np.zeros((n_samples, n_species)),
    )


def separating_direction(covariates: np.ndarray, seen: np.ndarray) -> np.ndarray:
    """A direction b `(n_covariates,)` of one species' coefficients along which its rate goes to
    0 on as many unseen samples as possible and stays put where it was seen; 0 if there is none.

    Args:
        covariates: `(n_samples, n_covariates)` X, float64.
        seen: `(n_samples,)` bool, True where the species' count is positive.

    A direction b must keep x_i'b = 0 on the seen samples, so b = N c with N a basis of the
    null space of those rows; a linear program then finds c with x_i'N c <= 0 on the other
    samples, as many of them strictly negative as it can. Repeated until no new sample joins,
    since the union of separable sets is separable (the sum of their directions separates it).
    """
    # Imported here, not with the module: scipy.optimize takes about half a second to import,
    # and every process that imports jaxcourse.pln would pay it, most of them never separating.
    from scipy.linalg import null_space
    from scipy.optimize import linprog

    basis = (
        null_space(_unique_rows(covariates[seen])) if seen.any() else np.eye(covariates.shape[1])
    )
    separated = np.zeros(covariates.shape[0], dtype=bool)
    direction = np.zeros(covariates.shape[1])
    if basis.shape[1] == 0:  # the seen samples pin every coefficient down
        return direction
    projected = covariates @ basis  # (n, r): x_i'N
    while True:
        open_rows = ~seen & ~separated
        if not open_rows.any():
            return direction
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
            return direction
        new = (projected @ result.x < -TOLERANCE) & ~seen
        if not (new & ~separated).any():
            return direction
        separated |= new
        direction = direction + basis @ result.x


def _spans_the_covariates(covariates: np.ndarray, seen: np.ndarray) -> np.ndarray:
    """`(p,)` bool: for each column of the `(n, p)` bool `seen`, whether the rows of the `(n, d)`
    `covariates` it marks have rank d, tested on their Gram matrix X_s'X_s, all species in one
    stacked `matrix_rank`. The Gram matrix squares the condition number, so nearly collinear
    covariates may be called rank-deficient here: that only sends the species on to the exact
    test, `separating_direction`, which then finds no separating direction."""
    gram = np.einsum(
        "ni,nj,nk->kij", covariates, covariates, seen.astype(np.float64), optimize=True
    )
    return np.linalg.matrix_rank(gram, hermitian=True) == covariates.shape[1]


def find_separation(data: PLNData) -> Separation:
    """The entries whose rate goes to 0 at the supremum of the ELBO, for every species of `data`.

    Species seen on samples whose covariates span the whole covariate space cannot be separated
    and are cleared by that rank test alone; the others get `separating_direction`. The test runs on
    every species at once, on the `(d, d)` Gram matrices X'X of the samples each is seen on
    (`_spans_the_covariates`).
    """
    if not isinstance(data, PLNData):
        raise TypeError(
            f"data must be a PLNData (use jaxcourse.pln.make_data), got {type(data).__name__}."
        )
    counts = np.asarray(data.counts)
    covariates = np.asarray(data.covariates, dtype=np.float64)
    n_covariates = covariates.shape[1]
    directions = np.zeros((n_covariates, counts.shape[1]))
    seen = counts > 0
    cleared = seen.all(axis=0) | _spans_the_covariates(covariates, seen)
    for species in np.flatnonzero(~cleared):
        directions[:, species] = separating_direction(covariates, seen[:, species])
    slopes = covariates @ directions
    mask = (slopes < -TOLERANCE) & (counts == 0)
    return Separation(
        mask, tuple(int(j) for j in np.flatnonzero(mask.any(axis=0))), directions, slopes
    )


COEF_TOLERANCE = 1e-7
"""An entry of a separating direction b above this (in absolute value; b's entries are of order 1)
marks its coefficient as one that separation sends to +-infinity (`coefficient_mask`)."""


def coefficient_mask(separation: Separation) -> np.ndarray:
    """`(n_covariates, n_species)` bool: True on the coefficients of B that quasi-separation sends
    to +infinity or -infinity, the entries of each separated species' direction b that are not 0.

    Moving B_j along b lowers the rate on the separated samples only, so every coefficient with
    b_kj != 0 runs off, with the sign of b_kj: down for a level whose samples have only zeros,
    but up as well, as when a species has only zeros in the reference level (the intercept goes
    to -infinity and every other level's coefficient to +infinity to keep its rates where it was
    seen). Coefficients with b_kj = 0 keep finite estimates.
    """
    return np.abs(np.asarray(separation.directions)) > COEF_TOLERANCE


def mark_separated(result, separation: Separation):
    """`result` (a `FitResult`) with `separated` set to `coefficient_mask(separation)`."""
    return result._replace(separated=coefficient_mask(separation))


LOG_RATE_AT_LIMIT = -40.0
"""`push_to_limit` moves each separated rate below exp(-40) (about 4e-18): 0 for the ELBO in float32
and float64 alike, while the parameters stay finite numbers."""


def push_to_limit(result, offsets: npt.ArrayLike, separation: Separation):
    """A finite stand-in for the limit that a fit with held rates reached: M and B moved along
    each separated species' direction b (M_ij += t x_i'b on its masked samples, B_j += t b)
    until every masked log rate O + M + S^2/2 is at most `LOG_RATE_AT_LIMIT`.

    The residuals M - XB, hence Sigma and the Gaussian part of the ELBO, do not change, and the
    masked Poisson terms become 0 to within exp(-40): the ELBO of the data as given at the
    returned point equals the limit's. The coefficients move far along b, as a GLM's do under
    separation, so they come out large, of either sign (b's entries have both signs when the
    intercept carries the drift of a level): their size says only "the rate is 0 here"; it is
    not an estimate (`coefficient_mask` marks them).

    Args:
        result: a `FitResult` of a fit with `separation.mask` held at rate 0.
        offsets: the `(n, p)` offsets O of the data as given.
        separation: what `find_separation` found.
    """
    if not separation.any:
        return result
    mean = np.array(result.variational.latent_mean, dtype=np.float64)
    coef = np.array(result.params.coef, dtype=np.float64)
    variance = np.square(np.asarray(result.variational.latent_sqrt_var, dtype=np.float64))
    offsets = np.asarray(offsets, dtype=np.float64)
    for species in separation.species:
        rows = separation.mask[:, species]
        slopes = separation.slopes[rows, species]  # x_i'b < 0 on these rows
        log_rate = offsets[rows, species] + mean[rows, species] + 0.5 * variance[rows, species]
        t = max(0.0, float(np.max((log_rate - LOG_RATE_AT_LIMIT) / -slopes)))
        mean[rows, species] += t * slopes
        coef[:, species] += t * separation.directions[:, species]
    dtype = result.variational.latent_mean.dtype
    return result._replace(
        variational=result.variational._replace(latent_mean=jnp.asarray(mean, dtype)),
        params=result.params._replace(coef=jnp.asarray(coef, dtype)),
    )


def describe_groups(covariates: np.ndarray, rows: np.ndarray, *, at_most: int = 3) -> str:
    """The samples `rows` in words: their covariate rows when they share a few (a factor level),
    otherwise how many samples they are."""
    distinct = _unique_rows(covariates[rows])
    count = int(rows.sum())
    if len(distinct) <= at_most:
        patterns = " or ".join(
            "(" + ", ".join(f"{value:g}" for value in row) + ")" for row in distinct
        )
        return f"the {count} samples with covariates {patterns}"
    return f"{count} samples"


def separation_message(data: PLNData, separation: Separation, *, at_most: int = 8) -> str:
    """The warning text: how many species, and for the first `at_most` which samples."""
    covariates = np.asarray(data.covariates, dtype=np.float64)
    lines = [
        f"quasi-separation: {len(separation.species)} species have only zero counts in a group of samples "
        "that the covariates single out, so some of their coefficients in B have no finite estimate (the ELBO keeps "
        "rising as they go to +infinity or -infinity, whichever drives those rates to 0). Levels 5 and 6 fit that limit "
        "(those rates held at 0) and report B where those rates are numerically 0: large numbers of either sign, not "
        "estimates; the result marks them (FitResult.separated, NaN in FitResult.coef). Species (0-based column) and samples:"
    ]
    for species in separation.species[:at_most]:
        lines.append(
            f"  species {species}: {describe_groups(covariates, separation.mask[:, species])}"
        )
    if len(separation.species) > at_most:
        lines.append(
            f"  ... and {len(separation.species) - at_most} more species (pln.find_separation lists all)."
        )
    return "\n".join(lines)


def warn_separation(data: PLNData, separation: Separation, *, stacklevel: int = 3) -> None:
    """Issues a `SeparationWarning` naming the separated species and groups, if there are any."""
    if separation.any:
        warnings.warn(
            separation_message(data, separation), SeparationWarning, stacklevel=stacklevel
        )
