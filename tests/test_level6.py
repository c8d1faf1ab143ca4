"""Level 6: the level-5 fit split over 4 simulated devices, and vmapped restarts / data sets."""

import jax
import numpy as np
import pytest

from jaxcourse.pln import as_float64, level5, level6, load_oaks, simulate

# More than a few seconds: left out of the fast tier (scripts/test.sh --fast).
pytestmark = pytest.mark.slow


def test_four_devices_are_simulated():
    """conftest.py sets four CPU devices; the sharded tests below rely on them."""
    assert jax.device_count() == 4


@pytest.mark.parametrize(
    "optimizer",
    [level5.RPROP, level5.NEWTON_RPROP, level5.NEWTON_MOMENTUM],
    ids=["rprop", "newton-rprop", "newton-momentum"],
)
def test_sharded_fit_equals_level5_in_float64(key, optimizer):
    """Split over 4 devices, the fit follows level 5's trace and ends at the same (M, S), with
    every optimizer (Newton momentum's restart test is a sum over all samples, so it must
    pass through the psum too)."""
    with jax.enable_x64(True):
        data = as_float64(simulate(64, 8, key=key, n_covariates=2).data)
        single = level5.fit(data, 150, tol=1e-10, optimizer=optimizer)
        sharded = level6.fit(data, 150, tol=1e-10, optimizer=optimizer)
        assert int(sharded.n_steps) == int(single.n_steps)
        np.testing.assert_allclose(
            np.asarray(sharded.elbo_trace), np.asarray(single.elbo_trace), rtol=1e-11
        )
        for ours, theirs in zip(sharded.variational, single.variational):
            np.testing.assert_allclose(np.asarray(ours), np.asarray(theirs), rtol=1e-8, atol=1e-10)
        np.testing.assert_allclose(
            np.asarray(sharded.params.covariance),
            np.asarray(single.params.covariance),
            rtol=1e-8,
            atol=1e-12,
        )


def test_sharded_fit_keeps_the_rows_on_their_devices(key):
    """M and S come back split by rows over the mesh; Sigma and the trace are replicated."""
    data = simulate(16, 3, key=key).data
    result = level6.fit(data, 5, tol=0.0)
    assert result.variational.latent_mean.sharding.spec[0] == level6.AXIS
    assert len(result.variational.latent_mean.sharding.device_set) == 4
    assert result.params.covariance.sharding.is_fully_replicated


def test_sharded_fit_on_oaks_matches_level5():
    """On oaks (116 = 4 x 29 rows) in float32 the two fits end at the same ELBO.

    Sums over 4 shards round differently from one sum, and Rprop's sign-based steps carry that
    rounding along: after 150 steps the ELBOs (about -3.2e4) agree to 1e-5 relative (a third of
    a nat); the float64 test above checks exact equality of the algorithm."""
    oaks = load_oaks()
    single = level5.fit(oaks, 150, tol=0.0)
    sharded = level6.fit(oaks, 150, tol=0.0)
    np.testing.assert_allclose(
        float(sharded.elbo_trace[-1]), float(single.elbo_trace[-1]), rtol=1e-5
    )


def test_uneven_split_is_rejected(key):
    """30 samples do not split over 4 devices: a clear error, not a silent wrong answer."""
    with pytest.raises(ValueError, match="do not split evenly over 4 devices"):
        level6.fit(simulate(30, 3, key=key).data, 5)


def test_vmapped_restarts_equal_separate_fits(key):
    """fit_many over 3 keys equals 3 level-5 fits from the same random starts."""
    keys = jax.random.split(key, 3)
    with jax.enable_x64(True):
        data = as_float64(simulate(20, 5, key=key).data)
        many = level6.fit_many(data, 80, keys=keys, tol=1e-9)
        starts = level6.random_starts(data, keys)
        for i in range(3):
            # fit_many monitors every iteration (under vmap a lax.cond would run both branches).
            one = level5.fit(
                data,
                80,
                tol=1e-9,
                monitor_every=1,
                start=jax.tree.map(lambda a: a[i], starts),  # noqa: B023
            )
            assert int(many.n_steps[i]) == int(one.n_steps)
            np.testing.assert_allclose(
                np.asarray(many.elbo_trace[i]), np.asarray(one.elbo_trace), rtol=1e-11
            )
            np.testing.assert_allclose(
                np.asarray(many.variational.latent_mean[i]),
                np.asarray(one.variational.latent_mean),
                rtol=1e-9,
                atol=1e-12,
            )


def test_vmapped_datasets_equal_separate_fits(key):
    """fit_many over 3 data sets of one shape equals 3 separate level-5 fits."""
    with jax.enable_x64(True):
        datasets = [as_float64(simulate(20, 5, key=k).data) for k in jax.random.split(key, 3)]
        many = level6.fit_many(datasets, 60, tol=1e-9)
        assert many.elbo_trace.shape == (3, 60)
        for i, data in enumerate(datasets):
            one = level5.fit(data, 60, tol=1e-9, monitor_every=1)  # as fit_many
            np.testing.assert_allclose(
                np.asarray(many.elbo_trace[i]), np.asarray(one.elbo_trace), rtol=1e-11
            )


def test_fit_many_argument_errors(key):
    """One data set needs keys; several data sets take no keys and must share one shape."""
    data = simulate(10, 3, key=key).data
    with pytest.raises(TypeError, match="needs keys"):
        level6.fit_many(data, 5)
    with pytest.raises(TypeError, match="not both"):
        level6.fit_many([data, data], 5, keys=jax.random.split(key, 2))
    with pytest.raises(ValueError, match="same shapes"):
        level6.fit_many([data, simulate(12, 3, key=key).data], 5)
