"""The PLN fit on a (data, model) mesh equals level 6's restarts and level 5's fits on one device."""

import jax
import numpy as np
import pytest

from jaxcourse import mesh as meshes
from jaxcourse.pln import as_float64, level5, level6, make_data, mesh_fit, simulate

# More than a few seconds: left out of the fast tier (scripts/test.sh --fast).
pytestmark = pytest.mark.slow


def test_restarts_on_a_grid_equal_one_device_in_float64(key):
    """Samples over 'data', restarts over 'model': the same traces and (M, S) as fit_many, and each
    restart as level5.fit from its start (float64, so only the algorithm is compared)."""
    grid = meshes.grid_mesh(2, 2)
    keys = jax.random.split(key, 4)
    with jax.enable_x64(True):
        data = as_float64(simulate(32, 6, key=key, n_covariates=2).data)
        on_grid = mesh_fit.fit_restarts(data, 15, keys=keys, mesh=grid, tol=0.0)
        many = level6.fit_many(data, 15, keys=keys, tol=0.0)
        np.testing.assert_allclose(
            np.asarray(on_grid.elbo_trace), np.asarray(many.elbo_trace), rtol=1e-11
        )
        for ours, theirs in zip(on_grid.variational, many.variational):
            np.testing.assert_allclose(np.asarray(ours), np.asarray(theirs), rtol=1e-8, atol=1e-10)
        assert on_grid.variational.latent_mean.sharding.spec[:2] == (meshes.MODEL, meshes.DATA)
        np.testing.assert_array_equal(
            np.asarray(on_grid.status), np.asarray(many.status)
        )  # one per restart
        np.testing.assert_array_equal(np.asarray(on_grid.n_steps), np.asarray(many.n_steps))
        starts = level6.random_starts(data, keys)
        single = level5.fit(
            data, 15, tol=0.0, monitor_every=1, start=jax.tree.map(lambda a: a[3], starts)
        )  # the last restart, its ELBO at every iteration as on the grid
        np.testing.assert_allclose(
            np.asarray(on_grid.elbo_trace)[3], np.asarray(single.elbo_trace), rtol=1e-11
        )


def test_restarts_must_split_over_model(key):
    grid = meshes.grid_mesh(2, 2)
    counts = np.random.default_rng(0).poisson(2.0, (32, 3))
    with pytest.raises(
        ValueError, match="3 restarts do not split evenly over the 2 devices of 'model'"
    ):
        mesh_fit.fit_restarts(make_data(counts), 5, keys=jax.random.split(key, 3), mesh=grid)
    with pytest.raises(ValueError, match="do not split evenly over 2 devices"):
        mesh_fit.fit_restarts(make_data(counts[:31]), 5, keys=jax.random.split(key, 2), mesh=grid)
