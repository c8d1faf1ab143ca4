"""The PLN-in-practice chapter's exercise checkers accept the reference solutions and reject typical mistakes."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxcourse.exercises import pln_practice as exercises


def separated_species(counts, groups):
    counts, groups = np.asarray(counts), np.asarray(groups)
    zero_in_group = [~counts[groups == level].any(axis=0) for level in np.unique(groups)]
    return np.flatnonzero(np.any(zero_in_group, axis=0)).tolist()


def any_zero(counts, groups):
    return np.flatnonzero((np.asarray(counts) == 0).any(axis=0)).tolist()


def all_zero_only(counts, groups):
    return np.flatnonzero(~np.asarray(counts).any(axis=0)).tolist()


def seen_somewhere_only(counts, groups):
    counts = np.asarray(counts)
    return [j for j in separated_species(counts, groups) if counts[:, j].any()]


def returns_mask(counts, groups):
    counts, groups = np.asarray(counts), np.asarray(groups)
    return np.any([~counts[groups == level].any(axis=0) for level in np.unique(groups)], axis=0)


def test_separated_species_solution_passes():
    assert exercises.check_separated_species(separated_species)


@pytest.mark.parametrize(
    ("wrong", "hint"),
    [
        (any_zero, "a zero here and there is not separation"),
        (all_zero_only, "look at each group of samples on its own"),
        (seen_somewhere_only, "so it is separated too"),
        (returns_mask, "returned a boolean mask"),
    ],
)
def test_separated_species_mistakes_fail(wrong, hint):
    verdict = exercises.check_separated_species(wrong)
    assert not verdict and hint in verdict.message, verdict.message


def simulate_counts(key, covariates, offsets, coef, covariance):
    key_latent, key_counts = jax.random.split(key)
    latent = jax.random.multivariate_normal(key_latent, covariates @ coef, covariance)
    return jax.random.poisson(key_counts, jnp.exp(offsets + latent))


def without_sigma(key, covariates, offsets, coef, covariance):
    return jax.random.poisson(key, jnp.exp(offsets + covariates @ coef))


def without_offsets(key, covariates, offsets, coef, covariance):
    key_latent, key_counts = jax.random.split(key)
    latent = jax.random.multivariate_normal(key_latent, covariates @ coef, covariance)
    return jax.random.poisson(key_counts, jnp.exp(latent))


def independent_species(key, covariates, offsets, coef, covariance):
    key_latent, key_counts = jax.random.split(key)
    noise = jnp.sqrt(jnp.diag(covariance)) * jax.random.normal(key_latent, offsets.shape)
    return jax.random.poisson(key_counts, jnp.exp(offsets + covariates @ coef + noise))


def numpy_generator(key, covariates, offsets, coef, covariance):
    rng = np.random.default_rng()
    mean = np.asarray(covariates) @ np.asarray(coef)
    latent = mean + rng.multivariate_normal(np.zeros(3), np.asarray(covariance), size=mean.shape[0])
    return rng.poisson(np.exp(np.asarray(offsets) + latent))


@pytest.mark.slow
def test_simulate_counts_solution_passes():
    assert exercises.check_simulate_counts(simulate_counts)


@pytest.mark.slow
@pytest.mark.parametrize(
    ("wrong", "hint"),
    [
        (without_sigma, "a Poisson of exp(O + XB) alone is too small"),
        (without_offsets, "offsets included"),
        (independent_species, "not each species on its own"),
        (numpy_generator, "traced value"),
    ],
)
def test_simulate_counts_mistakes_fail(wrong, hint):
    verdict = exercises.check_simulate_counts(wrong)
    assert not verdict and hint in verdict.message, verdict.message
