"""`pln.coverage`: coverage of known intervals, its Monte-Carlo error, the JAX sandwich against
pyPLNmodels' own, Student's t interval, and input validation."""

import jax
import numpy as np
import pytest
from scipy import stats

from jaxcourse.pln import bootstrap, coverage, level5, level6

# More than a few seconds (fits and pyPLNmodels' sandwich): left out of the fast tier.
pytestmark = pytest.mark.slow


def test_coverage_of_intervals_that_hold_the_truth_a_known_share_of_the_time():
    """Normal estimates with known sigma and a 1.96 sigma interval: coverage near 95%, within
    four Monte-Carlo errors, entry by entry, and the ends count as holding the truth."""
    rng = np.random.default_rng(0)
    truth = np.array([[0.0, 1.0], [-2.0, 5.0]])
    estimates = truth + rng.standard_normal((4000, 2, 2))
    share, counted = coverage.coverage(estimates - 1.96, estimates + 1.96, truth)
    assert share.shape == counted.shape == (2, 2) and np.all(counted == 4000)
    assert np.all(np.abs(share - 0.95) < 4 * coverage.monte_carlo_error(0.95, 4000))
    on_end, _ = coverage.coverage(
        np.array([[0.0], [1.0]]), np.array([[1.0], [2.0]]), np.array([1.0])
    )
    assert on_end.tolist() == [1.0]


def test_coverage_counts_only_the_replicates_with_an_interval():
    lower = np.array([[0.0, np.nan], [2.0, 0.0], [0.0, 0.0]])
    upper = np.array([[1.0, np.nan], [3.0, 1.0], [1.0, 1.0]])
    share, counted = coverage.coverage(lower, upper, np.array([0.5, 0.5]))
    assert counted.tolist() == [3, 2]
    np.testing.assert_allclose(share, [2 / 3, 1.0])


def test_monte_carlo_error_is_the_binomial_standard_error():
    np.testing.assert_allclose(coverage.monte_carlo_error(0.95, 200), np.sqrt(0.95 * 0.05 / 200))
    np.testing.assert_allclose(coverage.monte_carlo_error([0.0, 1.0, 0.5], 100), [0.0, 0.0, 0.05])


@pytest.mark.parametrize(
    ("lower", "upper", "truth", "message"),
    [
        (np.zeros((3, 2)), np.ones((3, 3)), np.zeros(2), "must be"),
        (np.zeros((3, 2)), np.ones((3, 2)), np.zeros(3), "must be"),
        (np.ones((3, 2)), np.zeros((3, 2)), np.zeros(2), "lower end above"),
        (np.full((3, 2), np.nan), np.full((3, 2), np.nan), np.zeros(2), "no interval"),
    ],
)
def test_coverage_refuses_malformed_intervals(lower, upper, truth, message):
    with pytest.raises(ValueError, match=message):
        coverage.coverage(lower, upper, truth)


@pytest.mark.parametrize(("share", "n"), [(1.2, 10), (-0.1, 10), (0.5, 0)])
def test_monte_carlo_error_refuses_impossible_inputs(share, n):
    with pytest.raises(ValueError):
        coverage.monte_carlo_error(share, n)


def test_wald_interval_uses_the_normal_or_student_quantile():
    lower, upper = coverage.wald_interval(1.0, 2.0)
    np.testing.assert_allclose(
        [lower, upper], [1 - 2 * stats.norm.ppf(0.975), 1 + 2 * stats.norm.ppf(0.975)]
    )
    lower, upper = coverage.wald_interval(0.0, 1.0, level=0.9, df=4)
    np.testing.assert_allclose(upper, stats.t.ppf(0.95, 4))
    with pytest.raises(ValueError, match="level"):
        coverage.wald_interval(0.0, 1.0, level=95)


def test_correlations_are_the_entries_above_the_diagonal():
    covariance = np.array([[4.0, 2.0, 0.0], [2.0, 1.0, -0.5], [0.0, -0.5, 1.0]])
    np.testing.assert_allclose(coverage.correlations(covariance), [1.0, 0.0, -0.5])
    assert coverage.correlations(np.stack([covariance] * 5)).shape == (5, 3)


@pytest.fixture(scope="module")
def small_study():
    model = coverage.known_model(40, 3, rng=np.random.default_rng(1))
    truths = jax.tree.map(lambda a: np.broadcast_to(a, (4, *a.shape)), model.params)
    datasets = coverage.draw_datasets(model.data, truths, rng=np.random.default_rng(2), n_draws=1)
    fits = level6.fit_many(datasets, 2000, optimizer=level5.NEWTON_MOMENTUM)
    return model, datasets, fits


def test_draw_datasets_keeps_the_design_and_draws_new_counts(small_study):
    model, datasets, _ = small_study
    assert len(datasets) == 4
    for data in datasets:
        np.testing.assert_array_equal(data.covariates, model.data.covariates)
    assert not np.array_equal(datasets[0].counts, datasets[1].counts)


def test_the_jax_sandwich_equals_pyplnmodels_sandwich_read_by_coefficient(small_study):
    _, datasets, fits = small_study
    ours = coverage.sandwich_variance(datasets, fits)
    assert ours.shape == (4, 3, 3)
    for index in (0, 3):
        theirs = bootstrap.pyplnmodels_sandwich(datasets[index], level6.fit_at(fits, index)).by_coef
        np.testing.assert_allclose(ours[index], theirs, rtol=1e-4)


def test_the_sandwich_refuses_more_coefficients_than_samples_and_unmatched_fits(small_study):
    _, datasets, fits = small_study
    with pytest.raises(ValueError, match="one fit per data set"):
        coverage.sandwich_variance(datasets[:2], fits)
    wide = coverage.known_model(10, 5, rng=np.random.default_rng(3))
    truths = jax.tree.map(lambda a: np.broadcast_to(a, (2, *a.shape)), wide.params)
    few = coverage.draw_datasets(wide.data, truths, rng=np.random.default_rng(4), n_draws=1)
    with pytest.raises(ValueError, match="n >= d p"):
        coverage.sandwich_variance(few, level6.fit_many(few, 200, optimizer=level5.NEWTON_MOMENTUM))


def test_fit_in_batches_needs_whole_batches(small_study):
    _, datasets, _ = small_study
    with pytest.raises(ValueError, match="batches of 3"):
        coverage.fit_in_batches(datasets, 3, 100, level5.NEWTON_MOMENTUM, 1e-6)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        (dict(n_samples=10, n_species=1), "n_species >= 2"),
        (dict(n_samples=10, n_species=3, correlation=1.0), "correlation"),
        (dict(n_samples=10, n_species=3, variance=0.0), "variance"),
    ],
)
def test_known_model_refuses_impossible_models(kwargs, message):
    with pytest.raises(ValueError, match=message):
        coverage.known_model(**kwargs, rng=np.random.default_rng(0))


def test_intervals_needs_two_replicates_and_two_draws():
    model = coverage.known_model(20, 2, rng=np.random.default_rng(0))
    with pytest.raises(ValueError, match="n_boot >= 2"):
        coverage.intervals(model, rng=np.random.default_rng(0), n_replicates=4, n_boot=1)


def test_pooled_coverage_error_counts_whether_entries_move_together():
    """Independent entries pool their information (error near sqrt(c(1-c)/(R k))); identical
    entries do not (error near sqrt(c(1-c)/R))."""
    rng = np.random.default_rng(5)
    estimates = rng.standard_normal((2000, 25))
    share, error = coverage.pooled_coverage(estimates - 1.96, estimates + 1.96, np.zeros(25))
    assert abs(share - 0.95) < 0.01
    np.testing.assert_allclose(error, np.sqrt(0.95 * 0.05 / (2000 * 25)), rtol=0.2)
    same = np.repeat(estimates[:, :1], 25, axis=1)
    _, error_same = coverage.pooled_coverage(same - 1.96, same + 1.96, np.zeros(25))
    np.testing.assert_allclose(error_same, np.sqrt(0.95 * 0.05 / 2000), rtol=0.2)
