"""The one fitting algorithm every level runs: a gradient step on (M, S), then the closed-form M-step.

The levels differ only in how they organise this computation for JAX, so their ELBO traces agree.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import optax

from ._data import PLNData
from ._model import ModelParams, Variational, closed_form_params, elbo

LEARNING_RATE = 0.05
"""Adam's step size: converges on oaks within 0.1% of pyPLNmodels in a few hundred steps."""

ADAM = optax.adam(LEARNING_RATE)
"""The default optimizer of levels 0-4. Created once, so that jitted levels, which take the optimizer as a static argument, reuse
their compiled code across calls (a fresh `optax.adam(...)` object is a new cache key)."""


class FitResult(NamedTuple):
    """What every level's `fit` returns.

    Attributes:
        elbo_trace: `(n_iter,)` ELBO before each step (exact log-factorial convention).
            Every level takes at most `n_iter` steps and records the ELBO before each one.
        variational: the final M and S, each `(n_samples, n_species)`.
        params: the final B `(n_covariates, n_species)` and Sigma `(n_species, n_species)`.
        n_steps: the steps taken (an int array): `n_iter` for levels 0-4, fewer for levels
            5 and 6 when they stop on their tolerance.
    """

    elbo_trace: jax.Array
    variational: Variational
    params: ModelParams
    n_steps: jax.Array

    @classmethod
    def of_all_steps(cls, elbo_trace: jax.Array, variational: Variational, params: ModelParams) -> FitResult:
        """The result of a fit that took one step per entry of `elbo_trace` (levels 0-4)."""
        return cls(elbo_trace, variational, params, jnp.asarray(elbo_trace.shape[0], jnp.int32))


def negative_elbo(variational: Variational, params: ModelParams, data: PLNData) -> jax.Array:
    """The loss the optimizer minimises (scalar); the variational parameters come first for `grad`."""
    return -elbo(data, variational, params)


def init_variational(data: PLNData) -> Variational:
    """A start near the data: M = log(Y + 1) - O and S = 1/2, each `(n_samples, n_species)`.

    Starting at M = 0 puts exp(O + M) orders of magnitude away from the counts and Adam
    then needs thousands of steps; this start is within a few percent of the optimum.
    """
    latent_mean = jnp.log1p(data.counts) - data.offsets
    return Variational(latent_mean, jnp.full_like(latent_mean, 0.5))


def update_step(
    variational: Variational,
    params: ModelParams,
    opt_state: optax.OptState,
    data: PLNData,
    optimizer: optax.GradientTransformation,
) -> tuple[Variational, ModelParams, optax.OptState, jax.Array]:
    """One iteration: an optimizer step on (M, S), then the closed-form (B, Sigma).

    Returns the new variational parameters, model parameters and optimizer state, and the
    ELBO (scalar) at the parameters this step started from.
    """
    loss, grads = jax.value_and_grad(negative_elbo)(variational, params, data)
    updates, opt_state = optimizer.update(grads, opt_state, variational)
    variational = optax.apply_updates(variational, updates)
    return variational, closed_form_params(data, variational), opt_state, -loss


def check_fit_arguments(data: PLNData, n_iter: int) -> None:
    """Raises `TypeError`/`ValueError` for a `fit` call that cannot work."""
    if not isinstance(data, PLNData):
        raise TypeError(
            f"data must be a PLNData (use jaxcourse.pln.make_data), got {type(data).__name__}."
        )
    if isinstance(n_iter, bool) or not isinstance(n_iter, int):
        raise TypeError(f"n_iter must be an int, got {type(n_iter).__name__}.")
    if n_iter < 1:
        raise ValueError(f"n_iter must be at least 1, got {n_iter}.")
