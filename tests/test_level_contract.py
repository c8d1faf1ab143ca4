"""The level contract of `jaxcourse.pln`, tested once over all seven levels:

    fit(data, n_iter, *, optimizer=<default>, **level_options) -> FitResult

with at most `n_iter` steps, the ELBO before each step in `elbo_trace`, and `n_steps` always set.
"""

import inspect

import jax
import numpy as np
import pytest

from jaxcourse.pln import (
    ADAM,
    LEVELS,
    SHARED_ALGORITHM_LEVELS,
    FitResult,
    level5,
    make_data,
    simulate,
)

# More than a few seconds: left out of the fast tier (scripts/test.sh --fast).
pytestmark = pytest.mark.slow

LEVEL_OPTIONS = {
    0: set(),
    1: set(),
    2: set(),
    3: {"container"},
    4: set(),
    5: {"tol", "monitor_every", "blas_threads", "start", "separation_limit", "kernel"},
    6: {"tol", "monitor_every", "blas_threads", "mesh", "separation_limit"},
}
"""The options each level adds to the common signature; each must be explained in its docstring."""

GOOD_COUNTS = [[1.0, 0.0, 3.0], [2.0, 5.0, 0.0], [0.0, 1.0, 1.0], [4.0, 2.0, 7.0]]

BAD_CALLS = [
    ((GOOD_COUNTS, 3), TypeError, "PLNData"),
    (("data", 3), TypeError, "PLNData"),
    ((None, 3), TypeError, "PLNData"),
    (("GOOD", 0), ValueError, "n_iter"),
    (("GOOD", -2), ValueError, "n_iter"),
    (("GOOD", 2.0), TypeError, "n_iter"),
    (("GOOD", True), TypeError, "n_iter"),
    (("GOOD", "10"), TypeError, "n_iter"),
]


@pytest.fixture(scope="module")
def small():
    return simulate(12, 4, key=jax.random.key(3)).data


def test_the_registry_holds_all_seven_levels():
    assert sorted(LEVELS) == list(range(7))
    assert set(SHARED_ALGORITHM_LEVELS) <= set(LEVELS)


@pytest.mark.parametrize("level", sorted(LEVELS))
def test_fit_has_the_common_signature(level):
    fit = LEVELS[level].fit
    parameters = inspect.signature(fit).parameters
    positional = [name for name, p in parameters.items() if p.kind is p.POSITIONAL_OR_KEYWORD]
    keyword_only = {name: p for name, p in parameters.items() if p.kind is p.KEYWORD_ONLY}
    assert positional == ["data", "n_iter"]
    assert (
        "optimizer" in keyword_only
        and keyword_only["optimizer"].default is not inspect.Parameter.empty
    )
    assert set(keyword_only) - {"optimizer"} == LEVEL_OPTIONS[level]
    assert all(p.default is not inspect.Parameter.empty for p in keyword_only.values())
    for option in LEVEL_OPTIONS[level]:
        assert option in fit.__doc__, f"level {level}'s docstring does not explain `{option}`"
    assert inspect.signature(fit).return_annotation in (FitResult, "FitResult")


@pytest.mark.parametrize("level", sorted(LEVELS))
def test_every_fit_says_how_it_ended(level, small):
    """Every level sets `status`: levels 0-4 reach their iteration limit, 5 and 6 too with tol=0."""
    options = {"tol": 0.0} if level >= 5 else {}
    result = LEVELS[level].fit(small, 3, **options)
    assert result.status_name == "iteration limit"
    assert int(result.n_steps) == 3


@pytest.mark.parametrize("level", sorted(LEVELS))
@pytest.mark.parametrize(("arguments", "error", "message"), BAD_CALLS)
def test_every_level_rejects_bad_input(level, arguments, error, message):
    data, n_iter = arguments
    data = make_data(GOOD_COUNTS) if isinstance(data, str) and data == "GOOD" else data
    with pytest.raises(error, match=message):
        LEVELS[level].fit(data, n_iter)


@pytest.mark.parametrize("level", sorted(LEVELS))
def test_n_iter_counts_steps_and_n_steps_is_always_set(level, small):
    """With Adam and no early stop, every level takes exactly n_iter steps and records n_iter ELBOs,
    the same ones: the ELBO before each step."""
    # Levels 5 and 6 with their ELBO at every iteration (`monitor_every=1`), as levels 0-4.
    options = {"tol": 0.0, "monitor_every": 1} if "tol" in LEVEL_OPTIONS[level] else {}
    result = LEVELS[level].fit(small, 7, optimizer=ADAM, **options)
    reference = LEVELS[0].fit(small, 7, optimizer=ADAM)
    assert isinstance(result, FitResult)
    assert result.elbo_trace.shape == (7,)
    assert np.issubdtype(np.asarray(result.n_steps).dtype, np.integer) and int(result.n_steps) == 7
    np.testing.assert_allclose(
        np.asarray(result.elbo_trace), np.asarray(reference.elbo_trace), rtol=1e-4
    )


def test_early_stop_takes_fewer_steps_than_n_iter(small):
    result = level5.fit(small, 500, tol=1e-3)
    assert 0 < int(result.n_steps) < 500


@pytest.mark.parametrize("level", [5, 6])
@pytest.mark.parametrize(
    ("option", "value", "error"),
    [
        ("tol", -1.0, ValueError),
        ("tol", "small", TypeError),
        ("monitor_every", 0, ValueError),
        ("blas_threads", 0, ValueError),
        ("blas_threads", 1.5, TypeError),
    ],
)
def test_level_options_are_checked(level, option, value, error, small):
    with pytest.raises(error):
        LEVELS[level].fit(small, 3, **{option: value})


def test_level5_start_is_checked(small):
    from jaxcourse.pln import Variational

    with pytest.raises(TypeError, match="start must be a Variational"):
        level5.fit(small, 3, start=(small.counts, small.counts))
    with pytest.raises(ValueError, match="start.latent_mean must have the counts' shape"):
        level5.fit(small, 3, start=Variational(small.counts[:3], small.counts))


@pytest.mark.parametrize("level", [5, 6])
@pytest.mark.parametrize("limit", [1, None])
def test_the_blas_thread_limit_holds_from_the_preparation_on(level, limit, small, monkeypatch):
    """`blas_threads` caps BLAS/LAPACK from the data's preparation on, not only in the loop: the
    preparation's NumPy products call NumPy's own OpenBLAS, whose threads would otherwise still
    spin through the loop's first iterations (`level5.BLAS_THREADS`). None leaves them as they
    are."""
    from jaxcourse.config import blas_threads, limit_blas_threads

    module = LEVELS[level]
    original = module.prepare_checked
    seen = []

    def recording(*args, **kwargs):
        seen.append(set(blas_threads().values()))
        return original(*args, **kwargs)

    monkeypatch.setattr(module, "prepare_checked", recording)
    with limit_blas_threads(2):  # not the test worker's own limit of 1
        module.fit(small, 3, blas_threads=limit)
    expected = [{1}] if limit == 1 else [{2}]
    assert seen == expected, seen
