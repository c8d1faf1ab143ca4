"""Checkers for the exercises of the chapter 'PLN in practice: covariates, failures that show, and
standard errors'."""

from __future__ import annotations

from collections.abc import Callable

import jax
import jax.numpy as jnp
import numpy as np

from ..checks import (
    call_answer,
    call_eager_and_jitted,
    describe,
    exercise_checker,
    require,
    require_callable,
)

# Species separated by a factor -------------------------------------------------------------------


def reference_separated_species(counts, groups) -> list[int]:
    """The species (columns of `counts`) with only zero counts in at least one group of samples."""
    counts, groups = np.asarray(counts), np.asarray(groups)
    return [
        species
        for species in range(counts.shape[1])
        if any(not counts[groups == level, species].any() for level in np.unique(groups))
    ]


def _separation_cases() -> list[tuple[str, np.ndarray, np.ndarray]]:
    rng = np.random.default_rng(25)
    counts = rng.poisson(2.0, size=(12, 6))
    groups = np.array(["a", "b", "c"] * 4)
    counts[groups == "b", 1] = 0  # zeros in one group only
    counts[:, 3] = 0  # never seen: zeros in every group
    counts[groups == "a", 4] = 0
    counts[groups == "c", 4] = 0  # zeros in two groups, seen in the third
    counts[:, 5] = np.maximum(counts[:, 5], 1)  # seen everywhere
    counts[0, 0] = 0  # one zero, in a group where the species is seen elsewhere
    rare = np.maximum(rng.poisson(2.0, size=(12, 1)), 1)
    rare[groups == "b", 0] = [0, 0, 1, 0]  # seen once in group b: mostly zeros, not separated
    counts = np.hstack([counts, rare])
    single = rng.poisson(3.0, size=(7, 3)) + 1
    single_groups = np.array([0, 0, 0, 1, 1, 1, 2])  # group 2 holds one sample
    single[6, 2] = 0
    single[0, 0] = 0
    return [
        ("three string groups", counts, groups),
        ("a group of one sample", single, single_groups),
    ]


def _as_indices(result, what: str) -> list[int]:
    require(
        result is not None and not isinstance(result, (str, bytes, dict)),
        f"{what} must return the separated species' column indices (a list of ints); got {describe(result)}.",
    )
    try:
        array = np.asarray(result)
    except Exception:  # a ragged or odd object
        array = np.asarray([], dtype=object)
    require(
        array.dtype != bool,
        f"{what} returned a boolean mask: return the indices of the separated species "
        "(np.flatnonzero(mask) turns a mask into them).",
    )
    require(
        array.ndim <= 1 and (array.size == 0 or np.issubdtype(array.dtype, np.integer)),
        f"{what} must return a flat list of int column indices; got {describe(result)}.",
    )
    return sorted(int(index) for index in array.ravel())


@exercise_checker(
    hints=(
        "For each group label (np.unique(groups)), take the rows of that group and ask "
        "which columns are all zero there; a species is separated when that happens in at "
        "least one group.",
        "counts[groups == level].any(axis=0) is False for a column with only zeros in the "
        "group: combine the groups with any (at least one group), not all, and return the "
        "column indices in increasing order as a list. A species with no counts anywhere "
        "counts too; one zero among counts does not.",
    )
)
def check_separated_species(separated_species: Callable) -> None:
    """`separated_species(counts, groups)` must list, in increasing order, the species with only
    zeros in some group: species seen everywhere are left out, a species never seen is included,
    a group of one sample counts, and labels may be strings or ints."""
    require_callable(separated_species, "separated_species")
    for name, counts, groups in _separation_cases():
        expected = reference_separated_species(counts, groups)
        strings = np.asarray(groups).dtype.kind in "US"
        hints = tuple(
            (
                error,
                "",
                f"separated_species raised on {name} (labels {sorted(set(groups.tolist()))}): "
                "labels may be strings, so loop over np.unique(groups) rather than numbering the "
                "groups 0, 1, 2, ...",
            )
            for error in ((TypeError, ValueError) if strings else ())
        )
        result = call_answer(
            separated_species,
            counts,
            groups,
            what="separated_species(counts, groups)",
            hints=hints,
        )
        found = _as_indices(result, "separated_species(counts, groups)")
        require(
            found != [j + 1 for j in expected],
            f"with {name} you returned {found}, each index one too large: column indices count "
            f"from 0, as np.flatnonzero gives them; expected {expected}.",
        )
        never_seen = [j for j in expected if not counts[:, j].any()]
        require(
            set(never_seen) <= set(found),
            f"with {name}, species {never_seen} have no counts at all and are missing: a species with only "
            "zeros has only zeros in every group, so it is separated too.",
        )
        extra = sorted(set(found) - set(expected))
        require(
            not extra,
            f"with {name}, species {extra} are seen in every group (a zero here and there is not "
            "separation): a species is separated when ALL its counts in one group are 0.",
        )
        missing = sorted(set(expected) - set(found))
        require(
            not missing,
            f"with {name}, species {missing} have only zeros in one group but are not listed: look at each "
            "group of samples on its own (counts[groups == level, j]), not at the whole column.",
        )
        require(
            list(np.asarray(result).ravel()) == expected,
            f"with {name} return the indices once each, in increasing order: expected {expected}.",
        )


# Counts simulated from a fitted model ------------------------------------------------------------

_N_DRAWS = 5000


def _simulation_setup():
    """A design with strong correlation between species 0 and 1, none with species 2, and offsets
    that double the rate of half the samples."""
    rng = np.random.default_rng(7)
    x = rng.normal(size=_N_DRAWS)
    covariates = jnp.asarray(np.column_stack([np.ones(_N_DRAWS), x]), jnp.float32)
    offsets = jnp.asarray(
        np.where(np.arange(_N_DRAWS)[:, None] % 2 == 0, np.log(2.0), 0.0) * np.ones((1, 3)),
        jnp.float32,
    )
    coef = jnp.asarray([[0.5, 1.0, 0.2], [0.3, -0.2, 0.0]], jnp.float32)
    covariance = jnp.asarray([[0.5, 0.4, 0.0], [0.4, 0.5, 0.0], [0.0, 0.0, 0.3]], jnp.float32)
    return covariates, offsets, coef, covariance


@exercise_checker(
    hints=(
        "Two random draws, so split the key into two: one for the latent Z "
        "(jax.random.multivariate_normal with mean X @ B and the covariance), one for "
        "jax.random.poisson.",
        "Draw Z jointly with the full covariance (not only its diagonal, which loses the "
        "correlation), add the offsets inside the exponential, exp(O + Z), and use the key "
        "you are given (never a fixed one): the same key gives the same table, a new key a "
        "new one.",
    )
)
def check_simulate_counts(simulate_counts: Callable) -> None:
    """`simulate_counts(key, covariates, offsets, coef, covariance)` must return `(n, p)` counts
    Y ~ Poisson(exp(O + Z)), Z_i ~ N(X_i B, Sigma): the same for the same key and new for a new key,
    eagerly and under jit; their means match exp(O + XB + diag(Sigma)/2) and the correlation
    that Sigma puts between two species shows in the counts."""
    require_callable(simulate_counts, "simulate_counts")
    covariates, offsets, coef, covariance = _simulation_setup()
    key = jax.random.key(3)
    what = "simulate_counts(key, covariates, offsets, coef, covariance)"
    runs = call_eager_and_jitted(
        simulate_counts, key, covariates, offsets, coef, covariance, what=what
    )
    for label, counts in runs:
        require(
            np.shape(counts) == (_N_DRAWS, 3),
            f"{what}{label} should return one count per sample and species, shape ({_N_DRAWS}, 3); got {describe(counts)}.",
        )
        counts = np.asarray(counts, dtype=np.float64)
        require(
            np.all(counts >= 0) and np.all(counts == np.round(counts)),
            f"{what}{label} returned values that are not counts: draw Y with jax.random.poisson.",
        )
    with jax.debug_key_reuse(True):
        call_answer(
            jax.jit(simulate_counts),
            jax.random.key(3),
            covariates,
            offsets,
            coef,
            covariance,
            what=what,
            hints=_ONE_KEY_TWICE_HINTS,
        )
    jitted = jax.jit(simulate_counts)  # compiled once for the two calls below
    again = np.asarray(call_answer(jitted, key, covariates, offsets, coef, covariance, what=what))
    other = np.asarray(
        call_answer(jitted, jax.random.key(4), covariates, offsets, coef, covariance, what=what)
    )
    first = np.asarray(runs[0][1])
    require(
        np.array_equal(first, again) and not np.array_equal(first, other),
        "the same key must give the same counts and a new key new ones: draw with jax.random from the key you "
        "are given (split it for Z and for Y), not with NumPy's generator.",
    )
    require(
        np.array_equal(first, np.asarray(runs[1][1])),
        "under jax.jit your function gives other counts than eagerly for the same key: use only the key you are given.",
    )
    counts = first.astype(np.float64)
    even = np.arange(_N_DRAWS) % 2 == 0
    ratio = counts[even].mean(axis=0) / counts[~even].mean(axis=0)
    require(
        np.all(np.abs(ratio - 2.0) < 0.25),
        f"the samples whose offset is log 2 should have twice the counts of the others; the ratio is {np.round(ratio, 2)}: "
        "the rate is exp(O + Z), offsets included.",
    )
    expected = np.exp(
        np.asarray(offsets)
        + np.asarray(covariates) @ np.asarray(coef)
        + np.diag(np.asarray(covariance)) / 2
    )
    relative = counts.mean(axis=0) / expected.mean(axis=0) - 1.0
    without_variance = np.exp(np.asarray(offsets) + np.asarray(covariates) @ np.asarray(coef))
    too_small = np.all(np.abs(counts.mean(axis=0) / without_variance.mean(axis=0) - 1.0) < 0.08)
    require(
        np.all(np.abs(relative) < 0.08),
        f"the mean counts are off by {np.round(100 * relative, 1)} % from E[Y] = exp(O + XB + "
        "diag(Sigma)/2), "
        + (
            "and match exp(O + XB): a Poisson of exp(O + XB) alone is too small, the latent Z "
            "carries no variance. Draw Z around XB with covariance Sigma, then Y from exp(O + Z)."
            if too_small
            else "which holds when the latent Z_i has mean X_i B and covariance Sigma; yours do "
            "not. jax.random.multivariate_normal(key, X @ B, Sigma) draws Z with that covariance "
            "(a standard normal times L, for Sigma = L L', is E @ L.T, not E @ L; Sigma's "
            "diagonal holds variances, not standard deviations)."
        ),
    )
    correlation = np.corrcoef(counts[:, 0], counts[:, 1])[0, 1]
    require(
        correlation > 0.2,
        f"species 0 and 1 have latent correlation 0.8 but their counts correlate {correlation:.2f}: draw Z_i jointly "
        "from N(X_i B, Sigma) (jax.random.multivariate_normal), not each species on its own.",
    )
    _require_poisson_noise(simulate_counts, what)


_ONE_KEY_TWICE_HINTS = (
    (
        jax.errors.KeyReuseError,
        "",
        "your function uses one key for two draws (the key-reuse checker caught it): the latent Z "
        "and the counts Y then come from related random bits. Split the key first, one key per "
        "draw, key_latent, key_counts = jax.random.split(key)",
    ),
)


def _require_poisson_noise(simulate_counts: Callable, what: str) -> None:
    """With Sigma close to 0 and one rate per species, the counts are Poisson: variance = mean."""
    covariates = jnp.ones((_N_DRAWS, 1), jnp.float32)
    offsets = jnp.zeros((_N_DRAWS, 3), jnp.float32)
    coef = jnp.log(jnp.asarray([[3.0, 5.0, 1.5]], jnp.float32))
    covariance = 1e-6 * jnp.eye(3, dtype=jnp.float32)
    counts = call_answer(
        simulate_counts, jax.random.key(5), covariates, offsets, coef, covariance, what=what
    )
    counts = np.asarray(counts, dtype=np.float64)
    dispersion = counts.var(axis=0) / counts.mean(axis=0)
    require(
        np.all(np.abs(dispersion - 1.0) < 0.2),
        f"with Sigma close to 0 and the same rate for every sample, a Poisson count's variance "
        f"equals its mean; yours are {np.round(counts.var(axis=0), 2)} for means "
        f"{np.round(counts.mean(axis=0), 2)}: draw Y with jax.random.poisson(key, rate), not by "
        "rounding the rate.",
    )
