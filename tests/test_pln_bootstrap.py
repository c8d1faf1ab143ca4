"""The parametric bootstrap of B (`pln.bootstrap`): draws follow the model, standard errors shrink
with n, the vmapped refits equal a loop of single fits, pyPLNmodels' sandwich is read in the right
order, and bad input fails with a clear error."""

import jax
import numpy as np
import pytest

from jaxcourse import pln
from jaxcourse.pln import bootstrap, level5, level6

# More than a few seconds: left out of the fast tier (scripts/test.sh --fast).
pytestmark = pytest.mark.slow

N_ITER = 400
N_DRAWS = 16


def model(n_samples, seed=2):
    """Simulated data and the true (B, Sigma) it was drawn from: the bootstrap starts from them."""
    simulation = pln.simulate(
        n_samples, 3, key=jax.random.key(seed), n_covariates=2, offset_scale=5.0
    )
    return simulation.data, pln.ModelParams(simulation.coef, simulation.covariance)


@pytest.fixture(scope="module")
def small():
    data, params = model(40)
    return (
        data,
        params,
        bootstrap.bootstrap_coef(
            data, params, key=jax.random.key(3), n_draws=N_DRAWS, n_iter=N_ITER
        ),
    )


def test_draws_keep_the_design_and_follow_the_model(small):
    """Every draw has the data's X and O; the mean count is exp(O + XB + diag(Sigma)/2); a key gives its draws."""
    data, params, _ = small
    draws = bootstrap.simulate_from_fit(data, params, key=jax.random.key(3), n_draws=N_DRAWS)
    assert len(draws) == N_DRAWS
    assert all(
        np.array_equal(d.covariates, data.covariates) and np.array_equal(d.offsets, data.offsets)
        for d in draws
    )
    mean = np.mean([np.asarray(d.counts) for d in draws], axis=(0, 1))
    expected = np.exp(
        np.asarray(data.offsets)
        + np.asarray(data.covariates) @ np.asarray(params.coef)
        + np.diag(np.asarray(params.covariance)) / 2
    ).mean(axis=0)
    np.testing.assert_allclose(mean, expected, rtol=0.2)
    again = bootstrap.simulate_from_fit(data, params, key=jax.random.key(3), n_draws=N_DRAWS)
    assert np.array_equal(again[0].counts, draws[0].counts)
    assert not np.array_equal(draws[0].counts, draws[1].counts)


def test_standard_errors_shrink_with_n(small):
    """Four times the samples: the bootstrap standard errors of B roughly halve (below 0.8 of before)."""
    _, _, result40 = small
    data, params = model(160)
    result160 = bootstrap.bootstrap_coef(
        data, params, key=jax.random.key(3), n_draws=N_DRAWS, n_iter=N_ITER
    )
    for result in (result40, result160):
        assert result.n_converged == N_DRAWS
        assert result.coefs.shape == (N_DRAWS, 2, 3) and result.standard_errors.shape == (2, 3)
        np.testing.assert_allclose(result.standard_errors, result.coefs.std(axis=0, ddof=1))
    assert np.median(result160.standard_errors) < 0.8 * np.median(result40.standard_errors)


def test_vmapped_refits_equal_a_loop_of_single_fits(small):
    data, params, result = small
    datasets = bootstrap.simulate_from_fit(data, params, key=jax.random.key(3), n_draws=N_DRAWS)
    np.testing.assert_allclose(
        bootstrap.loop_of_fits(datasets[:3], N_ITER), result.coefs[:3], atol=2e-4
    )


def test_pyplnmodels_sandwich_is_read_species_first(small):
    """`by_coef` holds the sandwich's diagonal entry j * d + k at (k, j) (covariate k, species j);
    `as_returned`, pyPLNmodels' own (d, p) reshape, holds the same numbers in the other order."""
    data, params, result = small
    draw = bootstrap.simulate_from_fit(data, params, key=jax.random.key(3), n_draws=N_DRAWS)[0]
    sandwich = bootstrap.pyplnmodels_sandwich(draw, level6.fit_at(result.fits, 0))
    assert sandwich.by_coef.shape == sandwich.as_returned.shape == (2, 3)
    np.testing.assert_allclose(sandwich.by_coef.T.ravel(), sandwich.as_returned.ravel(), rtol=1e-6)
    assert np.all(sandwich.by_coef > 0)
    assert not np.allclose(sandwich.by_coef, sandwich.as_returned)


def test_sandwich_needs_at_least_as_many_samples_as_coefficients(small):
    """The check comes first: d p = 12 coefficients for 10 samples fail before anything is
    computed. As in pyPLNmodels, n = d p is enough."""
    data = pln.make_data(np.ones((10, 6)), covariates=np.c_[np.ones(10), np.arange(10.0)])
    with pytest.raises(ValueError, match="at least as many samples"):
        bootstrap.pyplnmodels_sandwich(data, level6.fit_at(small[2].fits, 0))
    counts = np.asarray(jax.random.poisson(jax.random.key(4), 3.0, (12, 6)), dtype=np.float64)
    data = pln.make_data(counts, covariates=np.c_[np.ones(12), np.linspace(-1.0, 1.0, 12)])
    sandwich = bootstrap.pyplnmodels_sandwich(data, level5.fit(data, N_ITER))
    assert sandwich.by_coef.shape == (2, 6) and np.isfinite(sandwich.by_coef).all()


def test_bad_input_errors(small):
    data, params, _ = small
    key = jax.random.key(0)
    with pytest.raises(TypeError, match="PLNData"):
        bootstrap.simulate_from_fit(np.ones((3, 3)), params, key=key, n_draws=2)
    with pytest.raises(TypeError, match="ModelParams"):
        bootstrap.simulate_from_fit(data, (params.coef, params.covariance), key=key, n_draws=2)
    with pytest.raises(ValueError, match="params.coef must have shape"):
        bootstrap.simulate_from_fit(data, params._replace(coef=params.coef[:1]), key=key, n_draws=2)
    with pytest.raises(ValueError, match="finite"):
        bootstrap.simulate_from_fit(
            data, params._replace(coef=params.coef * np.nan), key=key, n_draws=2
        )
    with pytest.raises(ValueError, match="at least 2"):
        bootstrap.simulate_from_fit(data, params, key=key, n_draws=1)
    with pytest.raises(TypeError, match="n_draws must be an int"):
        bootstrap.simulate_from_fit(data, params, key=key, n_draws=2.0)
    with pytest.raises(ValueError, match="at least one"):
        bootstrap.loop_of_fits([])
