"""Data loading, simulation, and the errors bad input gets."""

import functools
import gzip
import subprocess
import sys
from importlib import resources

import jax
import jax.numpy as jnp
import numpy as np
import pandas as pd
import pytest

from jaxcourse.pln import (
    LEVELS,
    PLNData,
    as_float64,
    load_oaks,
    load_oaks_table,
    make_data,
    simulate,
)
from jaxcourse.pln._data import (
    OAKS_COVARIATES,
    OAKS_FILES,
    _draw,
    _poisson_of_log_rates,
    poisson_counts,
)
from jaxcourse.pln.constants import OAKS_N_COVARIATES, OAKS_N_SAMPLES, OAKS_SHAPE

# More than a few seconds: left out of the fast tier (scripts/test.sh --fast).
pytestmark = pytest.mark.slow


def test_the_shipped_oaks_files_are_pyplnmodels_csv_files_byte_for_byte():
    """Each shipped file decompresses to pyPLNmodels' file of the same name (CI installs it)."""
    pyplnmodels_files = resources.files("pyPLNmodels") / "load_data" / "data" / "oaks"
    for name in ("counts", "offsets", "covariates"):
        shipped = gzip.decompress((OAKS_FILES / f"{name}.csv.gz").read_bytes())
        assert shipped == (pyplnmodels_files / f"{name}.csv").read_bytes(), name


def test_the_shipped_oaks_table_equals_pyplnmodels_load_oaks():
    from pyPLNmodels import load_oaks as pyplnmodels_load_oaks

    theirs, ours = pyplnmodels_load_oaks(), load_oaks_table()
    assert ours.keys() == theirs.keys()
    for name in ("endog", "offsets"):
        pd.testing.assert_frame_equal(ours[name], theirs[name], check_exact=True)
    for name in OAKS_COVARIATES:
        pd.testing.assert_series_equal(ours[name], theirs[name], check_exact=True)


def test_oaks_loads_without_pyplnmodels_or_torch():
    """Part I's install has neither: load_oaks, with covariates, must not import them."""
    code = (
        "import sys\n"
        "class Refuse:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name.split('.')[0] in ('torch', 'pyPLNmodels'):\n"
        "            raise ImportError(f'{name} is not installed (a Part I install)')\n"
        "sys.meta_path.insert(0, Refuse())\n"
        "import jaxcourse, jaxcourse.pln, jaxcourse.bench, jaxcourse.exercises\n"
        "data = jaxcourse.pln.load_oaks(covariates=('tree', 'dist2ground'))\n"
        "assert data.covariates.shape == (116, 4), data.covariates.shape\n"
        "loaded = sorted(n for n in sys.modules if n.split('.')[0] in ('torch', 'pyPLNmodels'))\n"
        "assert not loaded, loaded\n"
        "print('ok')\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.strip().endswith("ok")


def test_load_oaks_shapes_and_dtypes():
    oaks = load_oaks()
    assert isinstance(oaks, PLNData)
    assert oaks.counts.shape == oaks.offsets.shape == OAKS_SHAPE == (116, 114)
    assert oaks.covariates.shape == (OAKS_N_SAMPLES, OAKS_N_COVARIATES)
    assert all(a.dtype == jnp.float32 for a in oaks)
    assert jnp.all(oaks.covariates == 1.0)
    # offsets are already log-scale: log of library sizes, far below the raw totals
    assert float(jnp.max(oaks.offsets)) < 20.0


def test_load_oaks_repeat_stacks_samples():
    oaks, repeated = load_oaks(), load_oaks(repeat=3)
    assert repeated.counts.shape == (348, 114)
    np.testing.assert_array_equal(repeated.counts[232:], oaks.counts)


@pytest.mark.parametrize(
    ("repeat", "error"), [(0, ValueError), (1.5, TypeError), (True, TypeError)]
)
def test_load_oaks_rejects_bad_repeat(repeat, error):
    with pytest.raises(error, match="repeat"):
        load_oaks(repeat=repeat)


def test_simulate_is_reproducible_and_has_known_parameters(key):
    first = simulate(50, 6, key=key, n_covariates=2)
    second = simulate(50, 6, key=key, n_covariates=2)
    other = simulate(50, 6, key=jax.random.key(1), n_covariates=2)
    assert first.data.counts.shape == (50, 6)
    assert first.data.covariates.shape == (50, 2)
    assert first.coef.shape == (2, 6) and first.covariance.shape == (6, 6)
    np.testing.assert_array_equal(first.data.counts, second.data.counts)
    assert not np.array_equal(first.data.counts, other.data.counts)
    assert np.all(np.asarray(first.data.counts) == np.round(first.data.counts))


def test_simulate_draws_its_normals_as_one_random_bits_operation():
    """`simulate`'s draws compile one random-bits operation, not one per array, and give the
    arrays of separate calls of `jax.random.normal` and `multivariate_normal` from the same
    keys, to float32 rounding."""
    key, n, p, k = jax.random.key(4), 30, 7, 3
    jaxpr = str(jax.make_jaxpr(_draw, static_argnums=(1, 2, 3))(key, n, p, k, 1.0, 0.5))
    assert jaxpr.count("random_bits") == 1, jaxpr
    _, log_rates, offsets, covariates, coef, covariance = _draw(key, n, p, k, 1.0, 0.5)
    key_x, key_b, key_o, key_z, _ = jax.random.split(key, 5)
    close = functools.partial(np.testing.assert_allclose, rtol=1e-6, atol=1e-6)
    close(covariates[:, 1:], jax.random.normal(key_x, (n, k - 1)))
    close(coef, (0.5 * jax.random.normal(key_b, (k, p))).at[0].add(1.0))
    close(offsets, 0.1 * jax.random.normal(key_o, (n, p)))
    latent = jax.random.multivariate_normal(key_z, jnp.zeros(p), covariance, (n,))
    close(log_rates, offsets + covariates @ coef + latent)


def test_poisson_counts_of_rates_below_10_are_the_samplers_at_the_data_shape():
    """`poisson_counts` pads the rates to a power of two, so that the sampler compiles once per
    length. JAX draws entry i's bits from the key and i alone, so a count drawn by Knuth's
    algorithm (a rate below 10) is the one the sampler draws at the data's own shape. The
    rejection step for larger rates is rounded otherwise at another length, so those counts
    are another draw from the same distribution (`test_simulated_counts_follow_the_model`)."""
    shape = (60, 10)  # 600 entries, drawn at length 1024
    log_rates = jax.random.normal(jax.random.key(2), shape) * 1.5 + 1.0
    key = jax.random.key(7)
    padded = poisson_counts(key, log_rates)
    unpadded = np.asarray(jax.jit(lambda k, x: jax.random.poisson(k, jnp.exp(x)))(key, log_rates))
    assert padded.shape == shape and padded.dtype == unpadded.dtype
    small = np.exp(np.asarray(log_rates)) < 10
    assert small.sum() > 0.5 * small.size
    np.testing.assert_array_equal(padded[small], unpadded[small])


def test_simulating_a_new_shape_of_a_drawn_length_compiles_no_sampler():
    """Two shapes whose counts fit one padded length share the Poisson sampler's program."""
    simulate(9, 13, key=jax.random.key(0))  # 117 entries: the 256-long sampler
    programs = _poisson_of_log_rates._cache_size()
    simulate(13, 9, key=jax.random.key(0))  # 117 again, another shape
    assert _poisson_of_log_rates._cache_size() == programs


def test_simulated_counts_follow_the_model(key):
    """The log of mean counts is close to O + XB + diag(Sigma)/2 on a large sample."""
    sim = simulate(4000, 3, key=key, offset_scale=5.0)
    expected = jnp.log(5.0) + sim.coef[0] + 0.5 * jnp.diag(sim.covariance)
    observed = jnp.log(jnp.mean(sim.data.counts, axis=0))
    np.testing.assert_allclose(observed, expected, atol=0.1)


GOOD = np.ones((4, 3))


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"counts": -GOOD}, ValueError, "non-negative"),
        ({"counts": GOOD * 0.5}, ValueError, "whole numbers"),
        ({"counts": np.where(np.eye(4, 3) > 0, np.nan, 1.0)}, ValueError, "counts must be finite"),
        ({"counts": np.where(np.eye(4, 3) > 0, np.inf, 1.0)}, ValueError, "counts must be finite"),
        (
            {"counts": GOOD, "offsets": np.zeros((5, 3))},
            ValueError,
            "offsets has 5 rows but counts has 4",
        ),
        ({"counts": GOOD, "offsets": np.zeros((4, 2))}, ValueError, "offsets must have the shape"),
        (
            {"counts": GOOD, "covariates": np.ones((3, 1))},
            ValueError,
            "covariates has 3 rows but counts has 4",
        ),
        (
            {"counts": GOOD, "offsets": np.full((4, 3), np.nan)},
            ValueError,
            "offsets must be finite",
        ),
        (
            {"counts": GOOD, "covariates": np.full((4, 1), np.inf)},
            ValueError,
            "covariates must be finite",
        ),
        ({"counts": np.ones(4)}, ValueError, "2-D"),
        ({"counts": "1 2 3"}, TypeError, "counts must be a 2-D array"),
        ({"counts": np.array([["a", "b"]])}, TypeError, "must hold numbers"),
        ({"counts": GOOD + 0j}, TypeError, "real"),
    ],
)
def test_make_data_rejects_bad_input(kwargs, error, match):
    with pytest.raises(error, match=match):
        make_data(**kwargs)


def test_make_data_defaults_to_zero_offsets_and_an_intercept():
    data = make_data(GOOD)
    assert jnp.all(data.offsets == 0) and data.covariates.shape == (4, 1)


@pytest.mark.parametrize("level", sorted(LEVELS))
@pytest.mark.parametrize(("n_iter", "error"), [(0, ValueError), (-3, ValueError), (2.0, TypeError)])
def test_fit_rejects_bad_n_iter(level, n_iter, error):
    with pytest.raises(error, match="n_iter"):
        LEVELS[level].fit(make_data(GOOD), n_iter)


@pytest.mark.parametrize("level", sorted(LEVELS))
def test_fit_rejects_raw_arrays(level):
    with pytest.raises(TypeError, match="PLNData"):
        LEVELS[level].fit((GOOD, GOOD, GOOD), 3)


def test_as_float64_converts_every_array():
    """Inside enable_x64, every array of a PLNData becomes float64 with the same values."""
    data = simulate(6, 3, key=jax.random.key(0)).data
    with jax.enable_x64(True):
        data64 = as_float64(data)
    assert all(leaf.dtype == jnp.float64 for leaf in jax.tree.leaves(data64))
    for leaf32, leaf64 in zip(jax.tree.leaves(data), jax.tree.leaves(data64)):
        np.testing.assert_array_equal(np.asarray(leaf64), np.asarray(leaf32, np.float64))


def test_as_float64_outside_x64_is_a_clear_error():
    """Without float64 enabled JAX would keep float32 silently; as_float64 says so instead."""
    with pytest.raises(RuntimeError, match="enable_x64"):
        as_float64(simulate(6, 3, key=jax.random.key(0)).data)
