"""Issue 37: separated coefficients are marked in the fit result (both signs), the bootstrap counts
the draws that separate each coefficient and gives those no standard error, counts that float32
cannot hold are refused, and offsets that are plainly not logs warn."""

import warnings

import jax
import numpy as np
import pytest

from jaxcourse import pln
from jaxcourse.pln import bootstrap, level5, level6, separation

# Fits and bootstraps, about 30 s of CPU in all: left out of the fast tier (scripts/test.sh --fast).
pytestmark = pytest.mark.slow

N_ITER = 300


def two_group_data(seed=0, n_per_group=20):
    """Intercept + a two-level factor (a: reference, b). Species 0 has only zeros in level b
    (its b coefficient goes to -infinity), species 1 only zeros in level a (the intercept goes to
    -infinity and b's coefficient to +infinity); species 2 and 3 are seen in both groups."""
    rng = np.random.default_rng(seed)
    group_b = np.repeat([0.0, 1.0], n_per_group)
    covariates = np.column_stack([np.ones_like(group_b), group_b])
    counts = rng.poisson(5.0, size=(2 * n_per_group, 4)).astype(float)
    counts[group_b == 1, 0] = 0
    counts[group_b == 0, 1] = 0
    counts[group_b == 0, 0] = np.maximum(counts[group_b == 0, 0], 1)
    counts[group_b == 1, 1] = np.maximum(counts[group_b == 1, 1], 1)
    return pln.make_data(counts, np.zeros_like(counts), covariates)


def fit_quietly(data, **options):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", separation.SeparationWarning)
        return level5.fit(data, N_ITER, optimizer=level5.NEWTON_MOMENTUM, **options)


@pytest.fixture(scope="module")
def separated_fit():
    data = two_group_data()
    return data, fit_quietly(data)


def test_the_mask_marks_both_signs(separated_fit):
    """Species 0: only b's coefficient, driven negative; species 1: the intercept negative and b's
    coefficient positive; species 2 and 3 unmarked."""
    _, result = separated_fit
    expected = np.array([[False, True, False, False], [True, True, False, False]])
    np.testing.assert_array_equal(result.separated, expected)
    limit = np.asarray(result.params.coef)
    assert limit[1, 0] < -10  # a level of zeros: down
    assert limit[0, 1] < -10 and limit[1, 1] > 10  # zeros in the reference level: up as well
    assert np.all(np.isfinite(limit))  # params.coef keeps the finite limit point


def test_coef_is_nan_exactly_where_separated(separated_fit):
    _, result = separated_fit
    np.testing.assert_array_equal(np.isnan(result.coef), result.separated)
    np.testing.assert_allclose(
        result.coef[~result.separated], np.asarray(result.params.coef)[~result.separated]
    )


def test_the_mark_does_not_depend_on_the_limit(separated_fit):
    """Fitting the data as given (`separation_limit=False`) marks the same coefficients."""
    data, result = separated_fit
    as_given = fit_quietly(data, separation_limit=False)
    np.testing.assert_array_equal(as_given.separated, result.separated)


def test_the_warning_is_true_for_either_sign(separated_fit):
    data, _ = separated_fit
    message = separation.separation_message(data, separation.find_separation(data))
    assert "either sign" in message and "large negative numbers" not in message
    assert "FitResult.separated" in message


def test_no_separation_marks_nothing():
    simulation = pln.simulate(40, 3, key=jax.random.key(1), n_covariates=2, offset_scale=5.0)
    result = fit_quietly(simulation.data)
    assert result.separated.shape == (2, 3) and not result.separated.any()
    np.testing.assert_allclose(result.coef, np.asarray(result.params.coef))


def test_fit_many_marks_each_fit(separated_fit):
    data, result = separated_fit
    clean = pln.simulate(40, 4, key=jax.random.key(2), n_covariates=2, offset_scale=5.0).data
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", separation.SeparationWarning)
        fits = level6.fit_many([data, clean], N_ITER, optimizer=level5.NEWTON_MOMENTUM)
    assert fits.separated.shape == (2, 2, 4)
    np.testing.assert_array_equal(fits.separated[0], result.separated)
    assert not fits.separated[1].any()
    np.testing.assert_array_equal(level6.fit_at(fits, 0).separated, result.separated)


@pytest.fixture(scope="module")
def separated_bootstrap(separated_fit):
    data, result = separated_fit
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", separation.SeparationWarning)
        return bootstrap.bootstrap_coef(
            data,
            result.params,
            key=jax.random.key(4),
            n_draws=6,
            n_iter=N_ITER,
            optimizer=level5.NEWTON_MOMENTUM,
        )


def test_the_bootstrap_counts_separated_draws(separated_fit, separated_bootstrap):
    """Simulated from the limit point, every draw separates the separated coefficients; the
    common species are never separated. The counts equal the per-draw marks, summed."""
    _, result = separated_fit
    counts = separated_bootstrap.n_separated
    assert counts.shape == (2, 4)
    np.testing.assert_array_equal(counts[result.separated], 6)
    np.testing.assert_array_equal(counts[:, 2:], 0)
    np.testing.assert_array_equal(counts, np.asarray(separated_bootstrap.fits.separated).sum(0))


def test_separated_coefficients_get_no_standard_error(separated_bootstrap):
    errors = separated_bootstrap.standard_errors
    np.testing.assert_array_equal(np.isnan(errors), separated_bootstrap.n_separated > 0)
    assert np.all(errors[:, 2:] > 0)
    # the spread they would have had: the limit points, not estimates
    raw = separated_bootstrap.coefs.std(axis=0, ddof=1)
    np.testing.assert_allclose(errors[:, 2:], raw[:, 2:])


def test_allow_separated_keeps_every_standard_error(separated_fit):
    data, result = separated_fit
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", separation.SeparationWarning)
        allowed = bootstrap.bootstrap_coef(
            data,
            result.params,
            key=jax.random.key(4),
            n_draws=3,
            n_iter=N_ITER,
            optimizer=level5.NEWTON_MOMENTUM,
            allow_separated=True,
        )
    assert np.all(np.isfinite(allowed.standard_errors))
    assert allowed.n_separated[result.separated].min() == 3


def test_allow_separated_must_be_a_bool(separated_fit):
    data, result = separated_fit
    with pytest.raises(TypeError, match="allow_separated must be True or False"):
        bootstrap.bootstrap_coef(
            data, result.params, key=jax.random.key(0), n_draws=2, allow_separated="yes"
        )


def test_counts_above_2_to_the_24_are_refused_in_float32():
    counts = np.ones((4, 2))
    counts[0, 0] = 2**24 + 1
    with pytest.raises(ValueError, match=r"above 2\^24 = 16777216.*jax\.enable_x64"):
        pln.make_data(counts)
    counts[0, 0] = 2**24  # still exact in float32
    assert float(pln.make_data(counts).counts[0, 0]) == 2**24


def test_counts_above_2_to_the_24_are_kept_exactly_in_float64():
    counts = np.ones((4, 2))
    counts[0, 0] = 2**24 + 1
    with jax.enable_x64(True):
        data = pln.make_data(counts)
        assert data.counts.dtype == np.float64 and data.offsets.dtype == np.float64
        assert int(data.counts[0, 0]) == 2**24 + 1


def test_raw_library_sizes_warn_and_logs_do_not():
    rng = np.random.default_rng(0)
    counts = rng.poisson(3.0, size=(10, 3)).astype(float)
    library = rng.integers(2_000, 50_000, size=(10, 1)) * np.ones((1, 3))
    with pytest.warns(pln.OffsetScaleWarning, match=r"log\(library size\)"):
        pln.make_data(counts, library)
    with warnings.catch_warnings():
        warnings.simplefilter("error", pln.OffsetScaleWarning)
        pln.make_data(counts, np.log(library))
        pln.make_data(counts, np.full((10, 3), pln.LOG_OFFSET_LIMIT))  # the limit itself passes


def test_the_blind_spot_small_size_factors_pass_silently():
    """Documented, not fixed: size factors near 1, unlogged, cannot be told from logs."""
    counts = np.ones((5, 2))
    with warnings.catch_warnings():
        warnings.simplefilter("error", pln.OffsetScaleWarning)
        pln.make_data(counts, np.full((5, 2), 1.3))
    assert "blind spot" in pln.make_data.__doc__


def test_compare_params_leaves_separated_coefficients_out(separated_fit):
    """Moving M of species 1 (every coefficient separated) changes nothing compared; moving
    species 2 (none separated) does."""
    from jaxcourse import bench

    data, result = separated_fit
    mean, sqrt_var = (np.asarray(a) for a in result.variational)
    moved_separated, moved_clean = mean.copy(), mean.copy()
    moved_separated[:, 1] += 5.0
    moved_clean[:, 2] += 0.5
    table = bench.compare_params(
        data,
        {
            "separated": (moved_separated, sqrt_var),
            "clean": (moved_clean, sqrt_var),
            "base": (mean, sqrt_var),
        },
        "base",
    )
    assert table.loc["separated", "max |dB|"] == 0.0
    assert table.loc["separated", "separated B (left out)"] == 3
    assert table.loc["clean", "at species"] == 2
    assert table.loc["clean", "max |dB|"] == pytest.approx(0.5, rel=1e-4)


def test_named_results_keep_the_dataframes_names(separated_fit):
    import pandas as pd

    data, result = separated_fit
    counts = pd.DataFrame(np.asarray(data.counts), columns=["ab", "cd", "ef", "gh"])
    covariates = pd.DataFrame(np.asarray(data.covariates), columns=["intercept", "group=b"])
    coef = result.coef_frame(covariates, counts)
    assert list(coef.index) == ["intercept", "group=b"]
    assert list(coef.columns) == ["ab", "cd", "ef", "gh"]
    assert np.isnan(coef.loc["group=b", "ab"]) and np.isfinite(coef.loc["intercept", "ab"])
    sigma = result.sigma_frame(counts)
    assert list(sigma.index) == list(sigma.columns) == ["ab", "cd", "ef", "gh"]
    np.testing.assert_allclose(sigma.to_numpy(), np.asarray(result.params.covariance), rtol=1e-6)
    assert list(result.coef_frame(("a", "b"), None).columns) == [0, 1, 2, 3]


def test_named_results_refuse_wrong_labels(separated_fit):
    _, result = separated_fit
    with pytest.raises(ValueError, match="species must give 4 names"):
        result.coef_frame(None, ["a", "b"])
    with pytest.raises(TypeError, match="covariates must be a DataFrame or a sequence"):
        result.coef_frame("intercept")


def exact_rank_test(covariates, seen):
    """The rank test species by species, on the seen rows themselves: what the Gram test stands
    in for."""
    return np.array(
        [
            column.any() and np.linalg.matrix_rank(covariates[column]) == covariates.shape[1]
            for column in seen.T
        ]
    )


@pytest.mark.parametrize("design", ["intercept", "factor", "continuous", "collinear"])
def test_the_gram_rank_test_clears_what_the_exact_one_clears_and_the_result_is_the_same(design):
    """`_spans_the_covariates` tests every species at once on X_s'X_s. Where the covariates are
    well conditioned it agrees with the rank of X_s itself; where they are nearly collinear it
    may clear fewer species (the Gram matrix squares the condition number), and those go on to
    the exact test, so `find_separation` finds the same separation as the species-by-species
    rank test would have let it."""
    rng = np.random.default_rng(3)
    n, p = 60, 8
    columns = {
        "intercept": [np.ones(n)],
        "factor": [
            np.ones(n),
            np.repeat([0.0, 1.0, 0.0], n // 3),
            np.repeat([0.0, 0.0, 1.0], n // 3),
        ],
        "continuous": [np.ones(n), rng.normal(size=n), rng.normal(size=n)],
        "collinear": [np.ones(n), (x := rng.normal(size=n)), x + 1e-7 * rng.normal(size=n)],
    }[design]
    covariates = (
        np.column_stack(columns).astype(np.float32).astype(np.float64)
    )  # as make_data keeps them
    counts = rng.poisson(1.0, size=(n, p)).astype(float)
    counts[: n // 3, 0] = 0  # a species unseen in the first third of the samples
    counts[:, 1] = 0  # and one never seen
    seen = counts > 0
    gram = separation._spans_the_covariates(covariates, seen)
    exact = exact_rank_test(covariates, seen)
    assert not np.any(gram & ~exact)  # never clears what the exact test would not
    if design != "collinear":
        np.testing.assert_array_equal(gram, exact)
    found = separation.find_separation(pln.make_data(counts, np.zeros_like(counts), covariates))
    expected = np.zeros((covariates.shape[1], p))
    for species in np.flatnonzero(~exact & ~seen.all(axis=0)):
        expected[:, species] = separation.separating_direction(covariates, seen[:, species])
    np.testing.assert_allclose(found.directions, expected, atol=1e-6)  # the LP, on float32 data
