"""Helpers shared by the PLN levels chapter's Exercises 3 and 4: the default optimizer, a small
count table and the fields of a fit's result."""

from __future__ import annotations

import inspect
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import optax

from ...checks import (
    describe,
    require,
)


def default_optimizer() -> optax.GradientTransformation:
    """The optimizer level 2 uses when none is given (the one object its compiled code is cached for)."""
    from ...pln import level2

    return inspect.signature(level2.fit).parameters["optimizer"].default


def _small_data(seed: int = 4):
    """A small count table (30 samples, 5 species, an intercept and one covariate), made with
    NumPy so that building it compiles nothing."""
    from ...pln import make_data

    rng = np.random.default_rng(seed)
    covariates = np.column_stack([np.ones(30), rng.normal(size=30)])
    counts = rng.poisson(np.exp(1.0 + 0.5 * covariates[:, 1:] + rng.normal(size=(30, 5))))
    return make_data(counts, covariates=covariates)


class _Fit(NamedTuple):
    """The first three fields of a FitResult, whichever way the learner built it."""

    elbo_trace: jax.Array
    variational: tuple
    params: tuple


def _as_tuple(value):
    """A NamedTuple (or list) as a plain tuple, so that any container of the right fields compares;
    anything else as it is (a comparison with it then fails, without raising)."""
    return tuple(value) if isinstance(value, (tuple, list)) else value


def _fit_result(result, n_iter: int, what: str) -> _Fit:
    """The trace and parameters `what` returned, after a structural check."""
    require(
        isinstance(result, tuple) and len(result) >= 3,
        f"{what} must return a pln.FitResult, as every level's fit does (FitResult.of_all_steps("
        f"trace, variational, params) builds one); got {describe(result)}.",
    )
    result = _Fit(*result[:3])
    if jnp.ndim(result.elbo_trace) == 1:
        require(
            jnp.shape(result.elbo_trace) == (n_iter,),
            f"{what}: the ELBO trace has {jnp.shape(result.elbo_trace)[0]} entries for "
            f"n_iter={n_iter}: one ELBO per iteration, so pass n_iter on rather than a fixed number.",
        )
    require(
        jnp.shape(result.elbo_trace) == (n_iter,),
        f"{what}: the ELBO trace should have shape ({n_iter},), one ELBO per iteration; got "
        f"{describe(result.elbo_trace)}.",
    )
    return result
