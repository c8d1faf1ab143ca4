"""Our ELBO equals pyPLNmodels' (torch, float64) at the same parameters, after converting
the log-factorial convention (pyPLNmodels uses Stirling's approximation)."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import torch
from pyPLNmodels.calculations.elbos import elbo_pln, profiled_elbo_pln

from jaxcourse.pln import (
    ModelParams,
    PLNData,
    Variational,
    as_float64,
    closed_form_params,
    elbo,
    load_oaks,
    profiled_elbo,
    stirling_correction,
)
from jaxcourse.pln.constants import BEST_KNOWN_ELBO_OAKS, BEST_KNOWN_ELBO_OAKS_STIRLING

RTOL = 1e-9


@pytest.fixture(scope="module")
def problem():
    """Oaks in float64 with a non-trivial variational point, as NumPy arrays."""
    oaks = load_oaks()
    rng = np.random.default_rng(0)
    counts = np.asarray(oaks.counts, dtype=np.float64)
    offsets = np.asarray(oaks.offsets, dtype=np.float64)
    covariates = np.asarray(oaks.covariates, dtype=np.float64)
    mean = np.log1p(counts) - offsets + 0.1 * rng.standard_normal(counts.shape)
    sqrt_var = 0.5 * np.exp(0.2 * rng.standard_normal(counts.shape))
    return counts, offsets, covariates, mean, sqrt_var


def as_jax64(*arrays):
    return [jnp.asarray(a, dtype=jnp.float64) for a in arrays]


def test_full_elbo_matches_pyplnmodels(problem):
    counts, offsets, covariates, mean, sqrt_var = problem
    with jax.enable_x64(True):
        Y, O, X, M, S = as_jax64(counts, offsets, covariates, mean, sqrt_var)
        data = PLNData(Y, O, X)
        variational = Variational(M, S)
        # Model parameters away from the optimum, so every term of the ELBO matters.
        params = closed_form_params(data, variational)
        params = ModelParams(params.coef + 0.05, params.covariance + 0.1 * jnp.eye(Y.shape[1]))
        ours = float(elbo(data, variational, params)) + stirling_correction(counts)
        coef, covariance = np.asarray(params.coef), np.asarray(params.covariance)
    theirs = elbo_pln(
        endog=torch.tensor(counts),
        marginal_mean=torch.tensor(covariates @ coef),
        offsets=torch.tensor(offsets),
        latent_mean=torch.tensor(mean),
        latent_sqrt_variance=torch.tensor(sqrt_var),
        precision=torch.linalg.inv(torch.tensor(covariance)),
    ).item()
    assert ours == pytest.approx(theirs, rel=RTOL)


def test_profiled_elbo_matches_pyplnmodels(problem):
    counts, offsets, covariates, mean, sqrt_var = problem
    with jax.enable_x64(True):
        data = PLNData(*as_jax64(counts, offsets, covariates))
        ours = float(profiled_elbo(data, Variational(*as_jax64(mean, sqrt_var))))
    ours += stirling_correction(counts)
    theirs = profiled_elbo_pln(
        endog=torch.tensor(counts),
        exog=torch.tensor(covariates),
        offsets=torch.tensor(offsets),
        latent_mean=torch.tensor(mean),
        latent_sqrt_variance=torch.tensor(sqrt_var),
    ).item()
    assert ours == pytest.approx(theirs, rel=RTOL)


def test_stirling_correction_matches_the_known_optima():
    """The best known ELBO in the exact and in the Stirling convention is the same optimum."""
    difference = BEST_KNOWN_ELBO_OAKS_STIRLING - BEST_KNOWN_ELBO_OAKS
    assert stirling_correction(load_oaks().counts) == pytest.approx(difference, abs=0.02)


def test_pyplnmodels_maxiter_is_its_own_default():
    """`constants.PYPLNMODELS_MAXITER` is the `maxiter` default of pyPLNmodels' `Pln.fit`."""
    import inspect

    from pyPLNmodels import Pln

    from jaxcourse.pln.constants import PYPLNMODELS_MAXITER

    assert inspect.signature(Pln.fit).parameters["maxiter"].default == PYPLNMODELS_MAXITER


def test_reference_trace_reads_pyplnmodels_monitors_as_plain_arrays():
    """On a tiny simulated set, `trace_pyplnmodels` returns one ELBO and one time per step
    (NumPy, exact convention, times increasing), M and S of the data's shape, whose float64
    profiled ELBO is close to the last traced one, and the torch optimizer it ran, with
    pyPLNmodels' settings."""
    from jaxcourse.pln import simulate
    from jaxcourse.pln._reference import trace_pyplnmodels

    data = simulate(40, 6, key=jax.random.key(0)).data
    maxiter = 30
    trace = trace_pyplnmodels(data, maxiter=maxiter)
    assert isinstance(trace.elbo, np.ndarray) and isinstance(trace.times_s, np.ndarray)
    assert trace.elbo.shape == trace.times_s.shape == (maxiter,)
    assert np.all(np.isfinite(trace.elbo)) and np.all(np.diff(trace.times_s) >= 0)
    assert 0 < trace.times_s[-1] <= trace.seconds
    assert [np.shape(part) for part in trace.variational] == [data.counts.shape] * 2
    with jax.enable_x64(True):
        final = float(
            profiled_elbo(as_float64(data), Variational(*as_float64(tuple(trace.variational))))
        )
    assert final == pytest.approx(
        trace.elbo[-1], abs=0.5
    )  # one step on, in float64, same convention
    assert trace.optimizer.startswith(
        "torch.optim.Rprop(lr=0.01, etas=(0.5, 1.2), step_sizes=(1e-10, 50)"
    )


def test_pyplnmodels_default_fit_cannot_stop_before_its_cap():
    """pyPLNmodels' own criterion monitor stays above (1 - beta)**(k - 1) after iteration k, so
    it cannot go below the default tol before `earliest_stop`, which is after maxiter; fed a
    constant ELBO (whose normalised value still moves), it gets there a little later."""
    from jaxcourse.pln._reference import criterion_trace, earliest_stop, pyplnmodels_defaults

    defaults = pyplnmodels_defaults()
    earliest = earliest_stop(defaults.tol, defaults.criterion_beta)
    assert (
        (1 - defaults.criterion_beta) ** (earliest - 2)
        >= defaults.tol
        > (1 - defaults.criterion_beta) ** (earliest - 1)
    )
    wobbly = -100.0 - np.cos(np.arange(earliest + 20))
    for trace in (np.full(earliest + 20, -100.0), wobbly):
        criteria = criterion_trace(trace)
        k = np.arange(1, len(criteria) + 1)
        assert np.all(criteria >= (1 - defaults.criterion_beta) ** (k - 1) * (1 - 1e-12))
    first_below = int(np.argmax(criterion_trace(np.full(earliest + 20, -100.0)) < defaults.tol)) + 1
    assert first_below >= earliest > defaults.maxiter
    with pytest.raises(ValueError, match="must lie in"):
        earliest_stop(0.0, 0.03)


def test_pyplnmodels_start_is_log_counts_without_offsets():
    """Its start is log(Y + 1{Y = 0}) and S = 1/2, computed by its own initialiser from the counts alone."""
    from jaxcourse.pln._reference import pyplnmodels_start

    counts = np.array([[0.0, 3.0], [1.0, 7.0]])
    mean, sqrt_var = pyplnmodels_start(counts)
    np.testing.assert_allclose(mean, np.log(counts + (counts == 0)), rtol=1e-6)
    assert np.all(sqrt_var == 0.5)
