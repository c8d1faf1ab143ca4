"""Wrong answers to the PLN-in-practice chapter's exercises, written from the exercise texts alone
as a hurried learner would (issue 27, point 4): each must fail, with a hint that names what the
answer did."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxcourse.exercises.pln_practice import check_separated_species, check_simulate_counts

# Exercise 1: separated_species(counts, groups) -> sorted column indices -------------------------


def _all_zero_by_group(counts, groups):
    counts, groups = np.asarray(counts), np.asarray(groups)
    return np.array([~counts[groups == level].any(axis=0) for level in np.unique(groups)])


def zero_in_every_group(counts, groups):
    """all instead of any: only species absent everywhere."""
    return np.flatnonzero(_all_zero_by_group(counts, groups).all(axis=0)).tolist()


def descending(counts, groups):
    return sorted(
        np.flatnonzero(_all_zero_by_group(counts, groups).any(axis=0)).tolist(), reverse=True
    )


def one_based(counts, groups):
    return (np.flatnonzero(_all_zero_by_group(counts, groups).any(axis=0)) + 1).tolist()


def integer_groups_only(counts, groups):
    """Groups numbered 0..max: string labels break it."""
    counts, groups = np.asarray(counts), np.asarray(groups)
    zero = [~counts[groups == level].any(axis=0) for level in range(int(np.max(groups)) + 1)]
    return np.flatnonzero(np.any(zero, axis=0)).tolist()


def mean_below_one(counts, groups):
    """A mean under 1 taken for 'only zeros'."""
    counts, groups = np.asarray(counts), np.asarray(groups)
    low = [counts[groups == level].mean(axis=0) < 1 for level in np.unique(groups)]
    return np.flatnonzero(np.any(low, axis=0)).tolist()


def groups_of_two_or_more(counts, groups):
    """A group of one sample skipped, as if too small to count."""
    counts, groups = np.asarray(counts), np.asarray(groups)
    levels = [level for level in np.unique(groups) if np.sum(groups == level) > 1]
    zero = [~counts[groups == level].any(axis=0) for level in levels]
    return np.flatnonzero(np.any(zero, axis=0)).tolist()


def species_names_as_rows(counts, groups):
    """Rows and columns swapped: samples separated instead of species."""
    counts, groups = np.asarray(counts), np.asarray(groups)
    return np.flatnonzero(~counts.any(axis=1)).tolist()


@pytest.mark.parametrize(
    ("wrong", "hint"),
    [
        (zero_in_every_group, "not listed: look at each group"),
        (descending, "in increasing order"),
        (one_based, "each index one too large"),
        (integer_groups_only, "labels may be strings"),
        (mean_below_one, "species [6] are seen in every group"),
        (groups_of_two_or_more, "with a group of one sample, species [2] have only zeros"),
        (species_names_as_rows, "are missing"),
    ],
)
def test_separated_species_wrong_answers_fail(wrong, hint):
    verdict = check_separated_species(wrong)
    assert not verdict, f"{wrong.__name__} passed"
    assert hint in verdict.message, verdict.message


# Exercise 2: simulate_counts(key, covariates, offsets, coef, covariance) -> (n, p) counts -------


def fixed_key(key, covariates, offsets, coef, covariance):
    """The key argument ignored: the same table for every key."""
    key_latent, key_counts = jax.random.split(jax.random.key(0))
    latent = jax.random.multivariate_normal(key_latent, covariates @ coef, covariance)
    return jax.random.poisson(key_counts, jnp.exp(offsets + latent))


def rates_not_counts(key, covariates, offsets, coef, covariance):
    """exp(O + Z), the Poisson's means, returned instead of draws."""
    latent = jax.random.multivariate_normal(key, covariates @ coef, covariance)
    return jnp.exp(offsets + latent)


def cholesky_on_the_wrong_side(key, covariates, offsets, coef, covariance):
    """Z = XB + E L (L lower): the covariance of a row is L'L, not Sigma."""
    key_latent, key_counts = jax.random.split(key)
    noise = jax.random.normal(key_latent, (covariates.shape[0], covariance.shape[0]))
    latent = covariates @ coef + noise @ jnp.linalg.cholesky(covariance)
    return jax.random.poisson(key_counts, jnp.exp(offsets + latent))


def standard_deviation_as_variance(key, covariates, offsets, coef, covariance):
    """Sigma's diagonal taken for the standard deviations, and no correlation."""
    key_latent, key_counts = jax.random.split(key)
    noise = jax.random.normal(key_latent, (covariates.shape[0], covariance.shape[0]))
    latent = covariates @ coef + noise * jnp.diagonal(covariance)
    return jax.random.poisson(key_counts, jnp.exp(offsets + latent))


def offsets_outside(key, covariates, offsets, coef, covariance):
    """O + exp(Z): the offsets added to the rate instead of its log."""
    key_latent, key_counts = jax.random.split(key)
    latent = jax.random.multivariate_normal(key_latent, covariates @ coef, covariance)
    return jax.random.poisson(key_counts, offsets + jnp.exp(latent))


def float_counts(key, covariates, offsets, coef, covariance):
    """Rounded rates: integers in value, but no Poisson noise."""
    key_latent, _ = jax.random.split(key)
    latent = jax.random.multivariate_normal(key_latent, covariates @ coef, covariance)
    return jnp.round(jnp.exp(offsets + latent))


def one_key_for_both_draws(key, covariates, offsets, coef, covariance):
    """The key the solution warns about: Z and Y both drawn from the same key."""
    latent = jax.random.multivariate_normal(key, covariates @ coef, covariance)
    return jax.random.poisson(key, jnp.exp(offsets + latent))


@pytest.mark.slow
@pytest.mark.parametrize(
    ("wrong", "hint"),
    [
        (one_key_for_both_draws, "uses one key for two draws"),
        (fixed_key, "a new key new ones"),
        (rates_not_counts, "not counts"),
        (cholesky_on_the_wrong_side, "is E @ L.T, not E @ L"),
        (standard_deviation_as_variance, "diagonal holds variances"),
        (offsets_outside, "offsets included"),
        (float_counts, "not by rounding the rate"),
    ],
)
def test_simulate_counts_wrong_answers_fail(wrong, hint):
    verdict = check_simulate_counts(wrong)
    assert not verdict, f"{wrong.__name__} passed"
    assert hint in verdict.message, verdict.message
