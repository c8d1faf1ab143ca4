"""The errors the PLN chapters show, pinned: a JAX or package change that alters them fails here."""

import numpy as np
import pytest

from jaxcourse import pln


def test_negative_counts_error_shown_in_the_model_chapter():
    with pytest.raises(ValueError, match="counts must be non-negative, but 1 are negative"):
        pln.make_data(np.array([[1.0, 2.0], [3.0, -1.0]]))


def test_row_mismatch_error_shown_in_the_model_chapter():
    with pytest.raises(ValueError, match="offsets has 4 rows but counts has 3"):
        pln.make_data(np.ones((3, 2)), offsets=np.zeros((4, 2)))


def test_plain_container_error_shown_in_the_levels_chapter():
    with pytest.raises(
        TypeError,
        match=r"Argument '<jaxcourse\.pln\.level3\.PlainContainer object at .*' of type '<class 'jaxcourse\.pln\.level3\.PlainContainer'>' is not a valid JAX type",
    ):
        pln.level3.fit(pln.load_oaks(), 10, container=pln.level3.PlainContainer)


def test_the_elbo_is_the_exact_expected_log_density_plus_entropy():
    """The model chapter's reading of the ELBO formula: its two lines are the expected Poisson and
    Gaussian log-densities plus the entropy of q up to constants, and the +np/2 is what is left of
    the entropy's constant once the two log(2 pi) terms cancel."""
    import jax
    from scipy.special import gammaln

    data = pln.simulate(12, 3, key=jax.random.key(0)).data
    variational = pln.init_variational(data)
    params = pln.closed_form_params(data, variational)
    y, o, x = (np.asarray(a, np.float64) for a in data)
    m, s = (np.asarray(a, np.float64) for a in variational)
    b, sigma = (np.asarray(a, np.float64) for a in params)
    n, p = y.shape
    poisson = np.sum(y * (o + m) - np.exp(o + m + s**2 / 2) - gammaln(y + 1))
    residual = m - x @ b
    scatter = residual.T @ residual + np.diag(np.sum(s**2, axis=0))
    gaussian = (
        -n / 2 * np.linalg.slogdet(sigma)[1]
        - n * p / 2 * np.log(2 * np.pi)
        - 0.5 * np.trace(np.linalg.solve(sigma, scatter))
    )
    entropy = np.sum(np.log(s)) + n * p / 2 * (1 + np.log(2 * np.pi))
    np.testing.assert_allclose(
        float(pln.elbo(data, variational, params)), poisson + gaussian + entropy, rtol=1e-4
    )
