"""The ELBO algebra stated in chapters/pln-model.qmd, checked in float64."""

import jax
import jax.numpy as jnp
import pytest
from jax.scipy.linalg import cho_solve

from jaxcourse.pln import (
    Variational,
    as_float64,
    closed_form_params,
    elbo,
    elbo_statistics,
    log_det_spd,
    simulate,
)

# More than a few seconds: left out of the fast tier (scripts/test.sh --fast).
pytestmark = pytest.mark.slow


@pytest.mark.parametrize(("n_samples", "n_species", "seed"), [(30, 4, 0), (50, 7, 1)])
def test_closed_form_sigma_makes_the_trace_term_minus_np_over_2(n_samples, n_species, seed):
    """At Sigma-hat, -1/2 tr(Sigma-hat^-1 scatter) = -np/2, which cancels the ELBO's +np/2: the
    profiled ELBO is the Poisson-and-entropy sum minus n/2 log det Sigma-hat."""
    with jax.enable_x64(True):
        key_data, key_mean, key_sd = jax.random.split(jax.random.key(seed), 3)
        data = as_float64(simulate(n_samples, n_species, key=key_data).data)
        shape = data.counts.shape
        variational = Variational(
            jnp.log1p(data.counts) + 0.3 * jax.random.normal(key_mean, shape),
            jnp.exp(0.2 * jax.random.normal(key_sd, shape) - 0.7),
        )
        params = closed_form_params(data, variational)
        stats = elbo_statistics(data, variational, params.coef)
        chol = jnp.linalg.cholesky(params.covariance)
        trace_term = -0.5 * jnp.trace(cho_solve((chol, True), stats.scatter))
        assert float(trace_term) == pytest.approx(-n_samples * n_species / 2, rel=1e-10)
        profiled = stats.poisson - 0.5 * n_samples * log_det_spd(params.covariance)
        assert float(elbo(data, variational, params)) == pytest.approx(float(profiled), rel=1e-12)
