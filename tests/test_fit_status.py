"""Failures that show: every level says how its fit ended, and a fit that diverges warns, names
the step and what went non-finite, and returns its last iterate with a finite ELBO."""

import jax
import numpy as np
import optax
import pytest

from jaxcourse import optim, pln
from jaxcourse.pln import LEVELS, level5, level6
from jaxcourse.pln._algorithm import FitDivergedWarning

# More than a few seconds: left out of the fast tier (scripts/test.sh --fast).
pytestmark = pytest.mark.slow

DIVERGING = {"levels 0-4": optax.sgd(1e4), "level 5": optim.rprop(40.0)}
"""Optimizers whose first steps make exp(O + M) overflow on the small data below."""


@pytest.fixture(scope="module")
def small():
    return pln.simulate(24, 5, key=jax.random.key(4), n_covariates=2).data


def all_finite(result) -> bool:
    return all(np.isfinite(np.asarray(leaf)).all() for leaf in jax.tree.leaves(result))


@pytest.mark.parametrize("level", sorted(LEVELS))
def test_a_diverging_fit_warns_and_keeps_its_last_finite_iterate(level, small):
    optimizer = DIVERGING["level 5"] if level >= 5 else DIVERGING["levels 0-4"]
    options = {"tol": 0.0} if level >= 5 else {}
    with pytest.warns(
        FitDivergedWarning, match=r"after step \d+ it found non-finite ELBO"
    ) as record:
        result = LEVELS[level].fit(small, 8, optimizer=optimizer, **options)
    assert result.status_name == "diverged"
    assert all_finite(result)
    steps = int(result.n_steps)
    assert steps < 8
    assert f"after {steps} steps" in str(record[0].message)
    assert record[0].filename == __file__  # the warning names the caller's line, not the package's
    # the trace keeps the finite ELBOs and repeats the last one: nothing NaN is left in it
    np.testing.assert_array_equal(
        np.asarray(result.elbo_trace)[steps:], float(result.elbo_trace[steps])
    )


def test_the_kept_iterate_is_the_one_the_same_fit_reaches_in_that_many_steps(small):
    with pytest.warns(FitDivergedWarning):
        diverged = level5.fit(small, 8, optimizer=DIVERGING["level 5"], tol=0.0)
    steps = int(diverged.n_steps)
    again = level5.fit_compiled(
        pln.profiled.prepare(small),
        pln.init_variational(small),
        jax.numpy.float32(0.0),
        jax.numpy.int32(steps),
        n_iter=8,
        optimizer=DIVERGING["level 5"],
        monitor_every=1,
    )
    np.testing.assert_array_equal(
        np.asarray(again.variational.latent_mean), np.asarray(diverged.variational.latent_mean)
    )


def test_a_converged_fit_says_so(small):
    result = level5.fit(small, 2000, optimizer=level5.NEWTON_MOMENTUM)
    assert result.status_name == "converged" and int(result.n_steps) < 2000


def test_fit_many_reports_only_the_fits_that_diverged(small):
    """Restarts far from the data overflow; the others run on, and each keeps its own status."""
    keys = jax.random.split(jax.random.key(0), 3)
    with pytest.warns(FitDivergedWarning, match="of 3 fits diverged"):
        results = level6.fit_many(
            small, 8, keys=keys, scale=0.5, optimizer=DIVERGING["level 5"], tol=0.0
        )
    assert all_finite(results)
    assert {level6.fit_at(results, i).status_name for i in range(3)} == {"diverged"}


def test_a_start_that_is_not_finite_is_an_error(small):
    start = pln.init_variational(small)
    overflowing = start._replace(
        latent_mean=start.latent_mean + 200.0
    )  # exp(O + M) overflows float32
    with pytest.raises(FloatingPointError, match="not finite at the starting point"):
        level5.fit(small, 5, tol=0.0, start=overflowing)


def test_restarts_on_a_grid_report_divergence_too():
    from jaxcourse import mesh as meshes
    from jaxcourse.pln import mesh_fit

    data = pln.simulate(24, 5, key=jax.random.key(4), n_covariates=2).data
    keys = jax.random.split(jax.random.key(0), 2)
    with pytest.warns(FitDivergedWarning, match="of 2 fits diverged"):
        results = mesh_fit.fit_restarts(
            data, 8, keys=keys, mesh=meshes.grid_mesh(2, 2), optimizer=DIVERGING["level 5"], tol=0.0
        )
    assert all_finite(results)
    assert {level6.fit_at(results, i).status_name for i in range(2)} == {"diverged"}
