"""PLN data: the oaks data set, simulated data, and the checks every input goes through."""

from __future__ import annotations

import gzip
import math
import warnings
from functools import partial
from importlib import resources
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np


class PLNData(NamedTuple):
    """Counts, offsets and covariates of a PLN data set, as float32 JAX arrays.

    Attributes:
        counts: `(n_samples, n_species)` non-negative integer counts Y.
        offsets: `(n_samples, n_species)` offsets O, on the log scale.
        covariates: `(n_samples, n_covariates)` design matrix X.

    A NamedTuple is a pytree, so a `PLNData` passes through `jit`, `scan` and `vmap` as it is.
    """

    counts: jax.Array
    offsets: jax.Array
    covariates: jax.Array

    @property
    def n_samples(self) -> int:
        return self.counts.shape[0]

    @property
    def n_species(self) -> int:
        return self.counts.shape[1]

    @property
    def n_covariates(self) -> int:
        return self.covariates.shape[1]


class Simulation(NamedTuple):
    """Data drawn from a PLN model, with the parameters that drew it.

    Attributes:
        data: the simulated `PLNData`.
        coef: `(n_covariates, n_species)` true regression coefficients B.
        covariance: `(n_species, n_species)` true latent covariance Sigma.
    """

    data: PLNData
    coef: jax.Array
    covariance: jax.Array


def as_float64(tree):
    """The arrays of `tree` (a `PLNData`, a `Variational`, a tuple ...) as float64, gathered
    onto the default device (so that arrays split over devices, as level 6 returns them, work too).

    Call it inside `with jax.enable_x64(True):`; outside, JAX would silently keep float32.

    Raises:
        RuntimeError: float64 is not enabled.
    """
    if jax.dtypes.canonicalize_dtype(jnp.float64) != np.float64:
        raise RuntimeError(
            "as_float64 needs float64 enabled: call it inside `with jax.enable_x64(True):`."
        )
    return jax.tree.map(lambda a: jnp.asarray(np.asarray(a), jnp.float64), tree)


def _as_float_matrix(name: str, value) -> np.ndarray:
    """Converts `value` to a 2-D float64 NumPy array, or raises a clear error."""
    if isinstance(value, (str, bytes)) or value is None:
        raise TypeError(f"{name} must be a 2-D array of numbers, got {type(value).__name__}.")
    array = np.asarray(value)
    if array.dtype == object or not (np.issubdtype(array.dtype, np.number) or array.dtype == bool):
        raise TypeError(f"{name} must hold numbers, got an array of dtype {array.dtype}.")
    if np.iscomplexobj(array):
        raise TypeError(f"{name} must be real, got complex dtype {array.dtype}.")
    if array.ndim != 2:
        raise ValueError(f"{name} must be 2-D (n_samples, ...), got shape {array.shape}.")
    return array.astype(np.float64)


def _check_finite(name: str, array: np.ndarray) -> None:
    if not np.all(np.isfinite(array)):
        bad = int(np.size(array) - np.count_nonzero(np.isfinite(array)))
        raise ValueError(f"{name} must be finite, but {bad} entries are NaN or infinite.")


def _check_rows(name: str, array: np.ndarray, n_samples: int) -> None:
    if array.shape[0] != n_samples:
        raise ValueError(
            f"{name} has {array.shape[0]} rows but counts has {n_samples}: "
            "each row must describe the same sample."
        )


FLOAT32_EXACT_COUNT = 2**24
"""16777216: float32 holds every whole number up to 2^24 exactly, not beyond (2^24 + 1 rounds to
2^24). `make_data` refuses larger counts unless float64 is enabled."""

LOG_OFFSET_LIMIT = 50.0
"""An offset above this is not a log: exp(50) is about 5e21, more reads or exposure than any
sample has. `make_data` warns (`OffsetScaleWarning`) when an offset exceeds it."""


class OffsetScaleWarning(UserWarning):
    """The offsets do not look like logs (raw library sizes, say): pass log(library size)."""


def _float_dtype(counts: np.ndarray):
    """float32, or float64 when some count is above `FLOAT32_EXACT_COUNT` and float64 is enabled.

    Raises:
        ValueError: a count above 2^24 while float64 is not enabled.
    """
    largest = float(counts.max())
    if largest <= FLOAT32_EXACT_COUNT:
        return jnp.float32
    if jax.dtypes.canonicalize_dtype(jnp.float64) == np.float64:
        return jnp.float64
    raise ValueError(
        f"counts above 2^24 = {FLOAT32_EXACT_COUNT} cannot be held exactly in float32 (the largest is "
        f"{largest:.0f}; 2^24 + 1 would become 2^24). Fit them in float64: call both make_data and the fit "
        "inside `with jax.enable_x64(True):`, and make_data keeps float64 for such counts."
    )


def _warn_unless_log_scale(offsets: np.ndarray) -> None:
    """Warns (`OffsetScaleWarning`) when an offset is above `LOG_OFFSET_LIMIT`."""
    largest = float(offsets.max())
    if largest > LOG_OFFSET_LIMIT:
        warnings.warn(
            f"offsets must be on the log scale, but the largest is {largest:.4g} > {LOG_OFFSET_LIMIT:g}, "
            f"and exp({LOG_OFFSET_LIMIT:g}) is about 5e21: these look like raw library sizes, not their logs. "
            "Pass log(library size).",
            OffsetScaleWarning,
            stacklevel=3,
        )


def make_data(counts, offsets=None, covariates=None) -> PLNData:
    """Validates raw arrays and returns them as a `PLNData`.

    Two checks guard against inputs that would mislead silently:
    - counts above 2^24 (`FLOAT32_EXACT_COUNT`), which float32 would round, are refused with a
      `ValueError` unless float64 is enabled (`with jax.enable_x64(True):` around this call and
      the fit); then the data are float64.
    - an offset above `LOG_OFFSET_LIMIT` (50) warns (`OffsetScaleWarning`): no log library
      size is that large, so they are raw sizes. Its blind spot: offsets that are not logged but
      small, such as size factors (about 0.1 to 10) or library sizes divided by 1000, look
      exactly like logs and pass without a word; only the caller knows their scale.

    Args:
        counts: `(n_samples, n_species)` non-negative, integer-valued, finite counts.
        offsets: `(n_samples, n_species)` finite log-scale offsets; zeros if omitted.
        covariates: `(n_samples, n_covariates)` finite design matrix; an intercept column if
            omitted.

    Returns:
        A `PLNData` of float32 JAX arrays (float64 for counts above 2^24, as above).

    Raises:
        TypeError: an input is not a real numeric array.
        ValueError: negative, non-integer or non-finite counts, counts above 2^24 in float32,
            non-finite offsets or covariates, or shapes that do not match.
    """
    counts = _as_float_matrix("counts", counts)
    _check_finite("counts", counts)
    if np.any(counts < 0):
        raise ValueError(
            f"counts must be non-negative, but {int(np.sum(counts < 0))} are negative."
        )
    if np.any(counts != np.round(counts)):
        raise ValueError(
            "counts must be whole numbers (Poisson counts), but some have a fractional part."
        )
    n_samples, n_species = counts.shape
    if n_samples < 1 or n_species < 1:
        raise ValueError(
            f"counts must have at least one row and one column, got shape {counts.shape}."
        )

    if offsets is None:
        offsets = np.zeros_like(counts)
    offsets = _as_float_matrix("offsets", offsets)
    _check_rows("offsets", offsets, n_samples)
    if offsets.shape != counts.shape:
        raise ValueError(
            f"offsets must have the shape of counts {counts.shape}, got {offsets.shape}."
        )
    _check_finite("offsets", offsets)
    _warn_unless_log_scale(offsets)

    if covariates is None:
        covariates = np.ones((n_samples, 1))
    covariates = _as_float_matrix("covariates", covariates)
    _check_rows("covariates", covariates, n_samples)
    _check_finite("covariates", covariates)
    rank = np.linalg.matrix_rank(covariates)
    if rank < covariates.shape[1]:
        raise ValueError(
            f"covariates must have linearly independent columns, but their {covariates.shape[1]} columns have rank "
            f"{rank}: drop a column (with an intercept, code a factor with one column fewer than its levels)."
        )

    dtype = _float_dtype(counts)
    return PLNData(
        counts=jnp.asarray(counts, dtype=dtype),
        offsets=jnp.asarray(offsets, dtype=dtype),
        covariates=jnp.asarray(covariates, dtype=dtype),
    )


OAKS_COVARIATES = ("tree", "dist2ground", "orientation")
"""The sample descriptions shipped with oaks: `tree` (the leaf's tree: intermediate, resistant or
susceptible to mildew) and `orientation` are factors, `dist2ground` a number."""

OAKS_FILES = resources.files("jaxcourse") / "data" / "oaks"
"""The oaks data shipped with the package: `counts.csv.gz`, `offsets.csv.gz` and
`covariates.csv.gz`, pyPLNmodels 1.0.10's CSV files compressed (their source is cited in the
folder's README.md: Jakuschkin et al. 2016)."""


def _read_oaks_csv(name: str):
    import pandas as pd

    with (OAKS_FILES / f"{name}.csv.gz").open("rb") as raw, gzip.open(raw) as text:
        return pd.read_csv(text)


def load_oaks_table() -> dict:
    """The oaks data as tables, without pyPLNmodels: the same dictionary as pyPLNmodels'
    `load_oaks()`, read from the copy shipped with the package (`OAKS_FILES`).

    Returns:
        `endog` (a `(116, 114)` DataFrame of counts, one column per taxon), `offsets` (the log of
        each sample's read total for the amplicon of each taxon, a DataFrame of the same shape),
        and one pandas Series per sample description: `tree`, `dist2ground`, `orientation`.
    """
    covariates = _read_oaks_csv("covariates")
    return {
        "endog": _read_oaks_csv("counts"),
        "offsets": np.log(_read_oaks_csv("offsets")),
        "tree": covariates.tree.squeeze(),
        "dist2ground": covariates.distTOground.squeeze(),
        "orientation": covariates.orientation.squeeze(),
    }


def design_matrix(columns: dict) -> tuple[np.ndarray, tuple[str, ...]]:
    """An intercept, then each of `columns` (name -> values, one per sample): a number as it is,
    a factor as one 0/1 column per level but the first in sorted order (the reference level).

    Returns:
        The `(n_samples, n_covariates)` design matrix and the name of each column.
    """
    if not columns:
        raise ValueError(
            "design_matrix needs at least one column (the intercept is added for you)."
        )
    lengths = {len(values) for values in columns.values()}
    if len(lengths) != 1:
        raise ValueError(
            f"every column must have one value per sample, got lengths {sorted(lengths)}."
        )
    n_samples = lengths.pop()
    blocks, names = [np.ones((n_samples, 1))], ["intercept"]
    for name, values in columns.items():
        values = np.asarray(values)
        if np.issubdtype(values.dtype, np.number) and values.dtype != bool:
            blocks.append(values.astype(np.float64)[:, None])
            names.append(name)
            continue
        levels = sorted(set(values.astype(str).tolist()))
        for level in levels[1:]:
            blocks.append((values.astype(str) == level).astype(np.float64)[:, None])
            names.append(f"{name}={level}")
    return np.hstack(blocks), tuple(names)


def load_oaks(repeat: int = 1, *, covariates: tuple[str, ...] = ()) -> PLNData:
    """The oaks powdery-mildew data (n = 116 leaves, p = 114 taxa), shipped with the package
    (`load_oaks_table`: pyPLNmodels' copy, loaded without pyPLNmodels or torch).

    The 114 columns are 66 bacterial and 48 fungal taxa (amplicons of the bacterial 16S and the
    fungal ITS1 regions; the last is the mildew, Erysiphe alphitoides); the offsets are the log of each sample's read total for the
    amplicon its taxon was read with, which is why O is an (n, p) matrix, not one column.

    Args:
        repeat: stack the data `repeat` times along the samples, to make a bigger problem
            (the source tutorial uses 100: n = 11600).
        covariates: names from `OAKS_COVARIATES` to add to the intercept (`design_matrix`
            codes factors); the default is the intercept alone.

    Returns:
        `PLNData` with the counts (`endog`), the offsets (already on the log scale) and the
        covariates, each repeated `repeat` times.
    """
    if isinstance(repeat, bool) or not isinstance(repeat, (int, np.integer)):
        raise TypeError(f"repeat must be an int, got {type(repeat).__name__}.")
    if repeat < 1:
        raise ValueError(f"repeat must be at least 1, got {repeat}.")
    if isinstance(covariates, str):
        covariates = (covariates,)
    unknown = [name for name in covariates if name not in OAKS_COVARIATES]
    if unknown:
        raise ValueError(f"unknown oaks covariates {unknown}; choose from {OAKS_COVARIATES}.")
    oaks = load_oaks_table()
    counts = np.tile(np.asarray(oaks["endog"], dtype=np.float64), (repeat, 1))
    offsets = np.tile(np.asarray(oaks["offsets"], dtype=np.float64), (repeat, 1))
    design = (
        design_matrix({name: np.asarray(oaks[name]) for name in covariates})[0]
        if covariates
        else None
    )
    return make_data(counts, offsets, None if design is None else np.tile(design, (repeat, 1)))


def simulate(
    n_samples: int,
    n_species: int,
    *,
    key: jax.Array,
    n_covariates: int = 1,
    offset_scale: float = 1.0,
    correlation: float = 0.5,
) -> Simulation:
    """Draws counts from a PLN model with known parameters.

    Z_i ~ N(X_i B, Sigma) and Y_ij ~ Poisson(exp(O_ij + Z_ij)), with an intercept in X, an
    AR(1)-style covariance `Sigma_jk = 0.5 * correlation**|j - k|` and offsets drawn around
    `log(offset_scale)`.

    Args:
        n_samples: number of rows n.
        n_species: number of columns p.
        key: a JAX PRNG key (keyword-only).
        n_covariates: columns of X, the first being the intercept.
        offset_scale: typical multiplicative exposure exp(O).
        correlation: AR(1) correlation between neighbouring species, in (-1, 1).

    Returns:
        A `Simulation` holding the data and the true `coef` and `covariance`.
    """
    if n_samples < 1 or n_species < 1 or n_covariates < 1:
        raise ValueError("n_samples, n_species and n_covariates must all be at least 1.")
    if not -1.0 < correlation < 1.0:
        raise ValueError(f"correlation must lie in (-1, 1), got {correlation}.")
    count_key, log_rates, offsets, covariates, coef, covariance = _draw(
        key, n_samples, n_species, n_covariates, offset_scale, correlation
    )
    counts = poisson_counts(count_key, log_rates)
    data = make_data(np.asarray(counts), np.asarray(offsets), np.asarray(covariates))
    return Simulation(data=data, coef=coef, covariance=covariance)


@partial(jax.jit, static_argnums=(1, 2, 3))
def _draw(key, n_samples, n_species, n_covariates, offset_scale, correlation):
    """`simulate`'s draws up to the Poisson rates, compiled as one program per shape. Returns the
    key of the counts' draw and the log-rates O + Z (for `poisson_counts`), then O, X, B and Sigma.

    Its four normal draws (X, B, O and Z's standard normals) are one draw of four keys under
    `vmap`: one random-bits operation to compile instead of four (about a second less per new
    shape on a CPU). They are the numbers of four calls of `jax.random.normal`, since JAX
    derives entry i's bits from the key and i alone (`jax_threefry_partitionable`): each draw
    is the first entries of one as long as the longest, reshaped. Z is
    `jax.random.multivariate_normal`'s own formula (Cholesky factor, then the same einsum). The
    arrays are those of the separate calls up to rounding in the last float32 place, where XLA
    fuses the arithmetic differently (tests/test_pln_data.py checks both)."""
    key_x, key_b, key_o, key_z, key_y = jax.random.split(key, 5)
    shapes = [(n_samples, n_covariates - 1), (n_covariates, n_species)] + 2 * [
        (n_samples, n_species)
    ]
    longest = max(math.prod(shape) for shape in shapes)
    flat = jax.vmap(lambda k: jax.random.normal(k, (longest,)))(
        jnp.stack([key_x, key_b, key_o, key_z])
    )
    extra, standard_coef, standard_offsets, standard_latent = (
        row[: math.prod(shape)].reshape(shape) for row, shape in zip(flat, shapes)
    )
    covariates = jnp.concatenate([jnp.ones((n_samples, 1)), extra], axis=1)
    coef = (0.5 * standard_coef).at[0].add(1.0)
    lags = jnp.abs(jnp.arange(n_species)[:, None] - jnp.arange(n_species)[None, :])
    covariance = 0.5 * correlation**lags
    offsets = jnp.log(offset_scale) + 0.1 * standard_offsets
    factor = jnp.linalg.cholesky(covariance)
    latent = covariates @ coef + jnp.einsum("...ij,...j->...i", factor, standard_latent)
    return key_y, offsets + latent, offsets, covariates, coef, covariance


@jax.jit
def _poisson_of_log_rates(key, log_rates):
    """Poisson counts at rates exp(`log_rates`), compiled once per length of a flat vector. The
    exp is taken in the sampler's own program, where XLA can fold the sampler's log(exp(x))
    into x."""
    return jax.random.poisson(key, jnp.exp(log_rates))


SMALLEST_POISSON_LENGTH = 256
"""The shortest vector `poisson_counts` draws (a power of two, like every length it draws)."""


def poisson_counts(key: jax.Array, log_rates: jax.Array) -> np.ndarray:
    """Poisson counts at rates exp(`log_rates`), as a NumPy array of the same shape, drawn by
    `jax.random.poisson` from `key`, compiled once per power of two, not once per shape.

    The Poisson sampler is the slowest of JAX's random draws to compile (about a second on a
    CPU, a program of rejection loops), and `simulate` is called at many shapes. JAX derives
    the random bits of entry i of a draw from the key and i alone (`jax_threefry_partitionable`,
    on by default), so the rates are flattened and padded to the next power of two, drawn, and
    cut back: every data set of up to 256 entries shares one program. A count of a rate below
    10 (Knuth's algorithm) is then the one the sampler draws at the data's own shape; XLA
    rounds the rejection step for larger rates otherwise at another length, so those are
    another draw from the same distribution (tests/test_pln_data.py checks both).
    """
    values = np.asarray(log_rates)
    size = max(SMALLEST_POISSON_LENGTH, 1 << max(values.size - 1, 0).bit_length())
    padded = np.zeros(size, values.dtype)  # rate 1 in the padding: a quick draw, cut off
    padded[: values.size] = values.ravel()
    counts = np.asarray(_poisson_of_log_rates(key, padded))
    return counts[: values.size].reshape(values.shape)
