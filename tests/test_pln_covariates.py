"""Covariates and quasi-separation: the oaks design matrices, `pln.separation`, and the fits that
must end with a finite ELBO at least pyPLNmodels' on the oaks `tree` design, for every optimizer the
benchmark runs on level 5."""

import warnings

import jax
import numpy as np
import pytest

from jaxcourse import optim, pln
from jaxcourse.bench._run import float64_profiled_elbo
from jaxcourse.pln import constants, convergence, level5
from jaxcourse.pln._data import design_matrix
from jaxcourse.pln.separation import SeparationWarning, find_separation, separation_message

# More than a few seconds: left out of the fast tier (scripts/test.sh --fast).
pytestmark = pytest.mark.slow

LEVEL5_OPTIMIZERS = {
    "rprop": level5.RPROP,
    "newton_rprop": level5.NEWTON_RPROP,
    "newton_momentum": level5.NEWTON_MOMENTUM,
}
"""The level-5 optimizers the benchmark runs (bench._methods)."""


@pytest.fixture(scope="module")
def oaks_tree():
    return pln.load_oaks(covariates=("tree",))


@pytest.fixture(scope="module")
def oaks_dist():
    return pln.load_oaks(covariates=("dist2ground",))


def fit_quietly(*args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SeparationWarning)
        return level5.fit(*args, **kwargs)


def test_design_matrix_codes_a_factor_against_its_first_level():
    design, names = design_matrix(
        {"tree": np.array(["b", "a", "c", "a"]), "x": np.array([1.0, 2.0, 3.0, 4.0])}
    )
    assert names == ("intercept", "tree=b", "tree=c", "x")
    np.testing.assert_array_equal(design[:, 1:3], [[1, 0], [0, 0], [0, 1], [0, 0]])


def test_oaks_with_tree_has_an_intercept_and_two_levels(oaks_tree):
    assert oaks_tree.covariates.shape == (constants.OAKS_N_SAMPLES, 3)
    assert np.asarray(oaks_tree.covariates).sum(axis=0).tolist() == [116.0, 39.0, 39.0]


@pytest.mark.parametrize(
    "covariates, message",
    [
        (np.ones((5, 2)), "linearly independent"),
        (np.c_[np.ones(5), np.arange(5), 2 * np.arange(5)], "rank 2"),
    ],
)
def test_collinear_covariates_are_refused(covariates, message):
    with pytest.raises(ValueError, match=message):
        pln.make_data(np.ones((5, 3)), covariates=covariates)


def test_an_unknown_oaks_covariate_is_refused():
    with pytest.raises(ValueError, match="unknown oaks covariates"):
        pln.load_oaks(covariates=("height",))


def test_the_tree_design_separates_13_species_and_group_pairs(oaks_tree):
    """3, 5 and 5 taxa have only zeros in one of the three trees: 13 pairs over 9 taxa."""
    found = find_separation(oaks_tree)
    assert found.species == (69, 89, 90, 95, 97, 98, 103, 106, 108)
    counts, design = np.asarray(oaks_tree.counts), np.asarray(oaks_tree.covariates)
    groups = [design[:, 1:].sum(axis=1) == 0, design[:, 1] == 1, design[:, 2] == 1]
    pairs = [[j for j in range(counts.shape[1]) if counts[group, j].sum() == 0] for group in groups]
    assert [len(p) for p in pairs] == [3, 5, 5]
    for group, species in zip(groups, pairs):
        for j in species:
            assert found.mask[group, j].all()
    assert not (found.mask & (counts > 0)).any()
    # Each direction lowers the rate on its masked samples and changes it nowhere else.
    assert (found.slopes[found.mask] < 0).all()
    np.testing.assert_allclose(found.slopes[~found.mask], 0.0, atol=1e-6)
    message = separation_message(oaks_tree, found)
    assert "9 species" in message and "of either sign" in message and "negative" not in message


def test_no_separation_without_a_group_of_zeros(oaks_dist):
    assert not find_separation(oaks_dist).any
    assert not find_separation(pln.load_oaks()).any


def test_a_continuous_covariate_alone_does_not_separate():
    """Unlike logistic regression: a taxon seen only where x > 0 still has finite Poisson
    coefficients, since a direction must leave the rate unchanged on every sample that saw it."""
    x = np.linspace(-1.0, 1.0, 20)
    counts = np.ones((20, 2))
    counts[x < 0, 1] = 0
    assert not find_separation(pln.make_data(counts, covariates=np.c_[np.ones(20), x])).any


def test_a_direction_that_raises_a_zero_samples_rate_does_not_separate():
    """Haberman's condition needs x_i'b <= 0 on every zero sample, not only < 0 on some. Seen only
    at x = 0, zero at x = -1 and x = +1: b = (0, t) keeps the seen rates and lowers one side, but
    raises the other, so the estimate is finite."""
    x = np.array([-1.0, -1.0, 0.0, 0.0, 1.0, 1.0])
    counts = np.ones((6, 2))
    counts[x != 0, 1] = 0
    assert not find_separation(pln.make_data(counts, covariates=np.c_[np.ones(6), x])).any


def test_a_factor_beside_a_continuous_covariate_separates_its_group():
    x = np.linspace(-1.0, 1.0, 20)
    group = (np.arange(20) % 4 == 0).astype(float)
    counts = np.ones((20, 2))
    counts[group == 1, 1] = 0
    found = find_separation(pln.make_data(counts, covariates=np.c_[np.ones(20), x, group]))
    assert found.species == (1,)
    np.testing.assert_array_equal(found.mask[:, 1], group == 1)


def test_a_species_never_seen_is_separated_by_the_intercept():
    counts = np.ones((6, 3))
    counts[:, 2] = 0
    assert find_separation(pln.make_data(counts)).species == (2,)


def test_simulated_data_with_covariates_has_no_spurious_separation():
    data = pln.simulate(200, 12, key=jax.random.key(1), n_covariates=3).data
    assert not find_separation(data).any


@pytest.mark.parametrize("name", sorted(LEVEL5_OPTIMIZERS))
def test_every_optimizer_warns_and_converges_on_the_tree_design(oaks_tree, name):
    """Finite, converged, and at least pyPLNmodels' ELBO on the same design (both evaluated in
    float64 on the data as given, the returned point standing in for the limit)."""
    with pytest.warns(
        SeparationWarning, match=r"species 69: the 38 samples with covariates \(1, 0, 0\)"
    ):
        result = level5.fit(oaks_tree, 3000, optimizer=LEVEL5_OPTIMIZERS[name])
    assert result.status_name == "converged"
    trace = np.asarray(result.elbo_trace)  # NaN only where the ELBO was not computed
    assert not np.isnan(trace[:: convergence.DEFAULT_MONITOR_EVERY]).any()
    assert np.isfinite(trace[~np.isnan(trace)]).all() and np.isfinite(trace[-1])
    assert all(np.isfinite(np.asarray(leaf)).all() for leaf in jax.tree.leaves(result[1:]))
    final = float64_profiled_elbo(oaks_tree, result.variational)
    assert final >= constants.PYPLNMODELS_ELBO_OAKS_TREE
    assert (
        abs(final - float(result.elbo_trace[-1])) < 0.05
    )  # the pushed point's ELBO is the limit's
    # Separated coefficients are large, as in a GLM, and of either sign: species 69 is absent
    # from the reference level, so the intercept drifts down and the other two levels up.
    separated = np.asarray(result.params.coef)[:, list(find_separation(oaks_tree).species)]
    assert separated.min() < -20 and separated.max() > 20
    assert np.asarray(result.params.coef)[1:, 69].min() > 20


def test_newton_momentum_needs_at_most_twice_its_intercept_only_steps(oaks_tree):
    intercept_only = fit_quietly(pln.load_oaks(), 3000, optimizer=level5.NEWTON_MOMENTUM)
    with_tree = fit_quietly(oaks_tree, 3000, optimizer=level5.NEWTON_MOMENTUM)
    assert int(with_tree.n_steps) <= 2 * int(intercept_only.n_steps)


def test_without_the_limit_the_elbo_creeps_below_it(oaks_tree):
    """separation_limit=False fits the data as given: after as many steps it is still below the limit."""
    limit = fit_quietly(oaks_tree, 3000, optimizer=level5.NEWTON_MOMENTUM)
    as_given = fit_quietly(
        oaks_tree,
        int(limit.n_steps),
        optimizer=level5.NEWTON_MOMENTUM,
        tol=0.0,
        separation_limit=False,
    )
    assert float(as_given.elbo_trace[-1]) < float(limit.elbo_trace[-1]) - 0.1


@pytest.mark.parametrize("name", sorted(LEVEL5_OPTIMIZERS))
def test_every_optimizer_converges_with_a_continuous_covariate(oaks_dist, name):
    with warnings.catch_warnings():
        warnings.simplefilter("error", SeparationWarning)
        result = level5.fit(oaks_dist, 3000, optimizer=LEVEL5_OPTIMIZERS[name])
    assert result.status_name == "converged"
    assert (
        float64_profiled_elbo(oaks_dist, result.variational)
        >= constants.PYPLNMODELS_ELBO_OAKS_DIST2GROUND
    )


@pytest.mark.parametrize("name", sorted(LEVEL5_OPTIMIZERS))
def test_every_optimizer_recovers_simulated_coefficients(name):
    simulation = pln.simulate(400, 8, key=jax.random.key(7), n_covariates=3)
    result = level5.fit(simulation.data, 3000, optimizer=LEVEL5_OPTIMIZERS[name])
    assert result.status_name == "converged"
    error = np.abs(np.asarray(result.params.coef) - np.asarray(simulation.coef))
    assert error.max() < 0.25, error.max()


def test_fit_many_warns_once_for_separated_data_sets(oaks_tree):
    with pytest.warns(SeparationWarning, match="in 2 of 2 data sets"):
        results = pln.level6.fit_many(
            [oaks_tree, oaks_tree], 3000, optimizer=level5.NEWTON_MOMENTUM
        )
    assert [pln.level6.fit_at(results, i).status_name for i in range(2)] == ["converged"] * 2


def test_separation_limit_must_be_a_bool(oaks_tree):
    with pytest.raises(TypeError, match="separation_limit must be True or False"):
        level5.fit(oaks_tree, 3, separation_limit="yes")


def test_levels_0_to_4_warn_too(oaks_tree):
    with pytest.warns(SeparationWarning, match="9 species"):
        pln.level2.fit(oaks_tree, 2)


def test_the_rprop_guard_rejects_a_rise_of_the_loss():
    """newton_rprop goes halfway back when the loss it is given rose, and shrinks its multipliers."""
    opt = optim.newton_rprop()
    params = np.zeros(3, np.float32)
    state = opt.init(params)
    grad, curvature = np.ones(3, np.float32), np.ones(3, np.float32)
    step, state = opt.update(grad, state, params, curvature=curvature, value=1.0)
    np.testing.assert_allclose(step, -1.0)
    back, state = opt.update(grad, state, params, curvature=curvature, value=2.0)
    np.testing.assert_allclose(back, 0.5)
    assert (np.asarray(state.multipliers) < 1.0).all()
    unguarded, _ = opt.update(grad, opt.init(params), params, curvature=curvature)
    np.testing.assert_allclose(unguarded, -1.0)


def test_the_pyplnmodels_tree_constant_is_what_pyplnmodels_reaches(oaks_tree):
    """Recomputes `PYPLNMODELS_ELBO_OAKS_TREE`: pyPLNmodels' default fit, scored in float64."""
    reference = pln.trace_pyplnmodels(oaks_tree, torch_threads=1)  # untimed (see fit_pyplnmodels)
    assert float64_profiled_elbo(oaks_tree, reference.variational) == pytest.approx(
        constants.PYPLNMODELS_ELBO_OAKS_TREE, abs=constants.PYPLNMODELS_TREE_SPREAD
    )
