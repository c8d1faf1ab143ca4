"""Checker for the PLN benchmark chapter's exercise on the analytic gradient in M."""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np

from ...checks import call_answer, close, exercise_checker, require
from .._jaxpr import primitive_names, traced_program


def _small_problem(seed: int = 3, n: int = 25, p: int = 4, n_covariates: int = 2):
    from ...pln import Variational, init_variational, simulate

    data = simulate(n, p, key=jax.random.key(seed), n_covariates=n_covariates).data
    start = init_variational(data)
    wobble = 0.2 * jnp.cos(jnp.arange(start.latent_mean.size, dtype=jnp.float32)).reshape(
        start.latent_mean.shape
    )
    return data, Variational(start.latent_mean + wobble, start.latent_sqrt_var + 0.5 * wobble**2)


def _gradient_parts(data, variational) -> dict:
    """The pieces of dJ/dM, from which the checker builds the typical wrong answers."""
    from ...pln import closed_form_params

    params = closed_form_params(data, variational)
    latent_mean, sqrt_var = variational
    rate = jnp.exp(data.offsets + latent_mean + 0.5 * sqrt_var**2)
    residuals = latent_mean - data.covariates @ params.coef
    precision = jnp.linalg.inv(params.covariance)
    prior = residuals @ precision
    return {
        "no_offsets": data.counts - jnp.exp(latent_mean + 0.5 * sqrt_var**2) - prior,
        "full_variance": data.counts - jnp.exp(data.offsets + latent_mean + sqrt_var**2) - prior,
        "no_mean": data.counts - rate - latent_mean @ precision,
        "poisson": data.counts - rate,
        "prior": residuals @ precision,
        "sigma_prior": residuals @ params.covariance,
        "rate_without_variance": data.counts - jnp.exp(data.offsets + latent_mean),
    }


@functools.cache
def _elbo_gradient():
    """dJ/dM by autodiff, jitted once: `jax.grad` makes a new function at each call, which a
    `jax.jit` around it would compile anew at every check."""
    from ...pln import profiled_elbo

    return jax.jit(jax.grad(profiled_elbo, argnums=1))


def _require_hand_gradient(got, data, variational, how: str) -> None:
    expected = _elbo_gradient()(data, variational).latent_mean
    require(
        np.shape(got) == expected.shape and not isinstance(got, (tuple, list)),
        f"return one (n, p) array like M, shape {expected.shape}; got {type(got).__name__} of shape {np.shape(got)}.",
    )
    scale = float(jnp.max(jnp.abs(expected)))
    tolerance = dict(rtol=1e-3, atol=1e-3 * scale)
    if close(got, expected, **tolerance):
        return
    parts = _gradient_parts(data, variational)
    require(
        not close(got, parts["poisson"], **tolerance),
        f"({how}) you have the Poisson part Y - A; the Gaussian prior adds -(M - XB) Omega.",
    )
    require(
        not close(got, parts["poisson"] + parts["prior"], **tolerance),
        f"({how}) the prior term has the wrong sign: the gradient is Y - A MINUS (M - XB) Omega; "
        "the prior pulls M back towards XB.",
    )
    require(
        not close(got, parts["poisson"] - parts["sigma_prior"], **tolerance),
        f"({how}) you multiplied the residuals by Sigma; the gradient needs its inverse Omega.",
    )
    require(
        not close(got, parts["rate_without_variance"] - parts["prior"], **tolerance),
        f"({how}) the rate is missing the variance term: A = exp(O + M + S^2 / 2).",
    )
    require(
        not close(got, -expected, **tolerance),
        f"({how}) you returned minus the gradient, the gradient of the loss -J: the exercise asks "
        "for the gradient of the ELBO, Y - A - (M - XB) Omega.",
    )
    require(
        not close(got, parts["no_offsets"], **tolerance),
        f"({how}) the rate is missing the offsets: A = exp(O + M + S^2 / 2).",
    )
    require(
        not close(got, parts["full_variance"], **tolerance),
        f"({how}) the rate has S^2 where it needs S^2 / 2: A = exp(O + M + S^2 / 2).",
    )
    require(
        not close(got, parts["no_mean"], **tolerance),
        f"({how}) you multiplied M itself by Omega: the residuals are M - XB, around the mean "
        "XB of the closed-form coefficients.",
    )
    require(
        False,
        f"({how}) your gradient differs from jax.grad(profiled_elbo). Check A = exp(O + M + S^2/2) "
        "and the closed-form B and Sigma at the point you are given.",
    )


@exercise_checker(
    hints=(
        "Compute B-hat and Sigma-hat with pln.closed_form_params(data, variational) at the "
        "point you are given, then write the formula Y - A - (M - X B) Omega term by term, "
        "without jax.grad.",
        "A = exp(O + M + S**2 / 2) keeps the variance term; Omega is the INVERSE of Sigma "
        "(cho_solve with the Cholesky factor and an identity); the prior term is "
        "subtracted. Never evaluate the ELBO itself: the formula does not need it.",
    )
)
def check_latent_mean_gradient(latent_mean_gradient):
    """`latent_mean_gradient(data, variational)` must equal dJ/dM of the profiled ELBO on two
    problems, eagerly and under jit, computed from the formula, not by autodiff."""
    require(callable(latent_mean_gradient), "pass the function itself.")
    for data, variational in (_small_problem(), _small_problem(seed=8, n=40, p=6, n_covariates=3)):
        got = call_answer(latent_mean_gradient, data, variational, what="latent_mean_gradient")
        _require_hand_gradient(got, data, variational, "eagerly")
        jitted = call_answer(
            jax.jit(latent_mean_gradient),
            data,
            variational,
            what="latent_mean_gradient under jax.jit",
        )
        _require_hand_gradient(jitted, data, variational, "under jit")
    names = primitive_names(
        traced_program(latent_mean_gradient, *_small_problem(), what="latent_mean_gradient")
    )
    require(
        "add_any" not in names,
        "the numbers are right, but your program differentiates (its jaxpr adds up cotangents with "
        "add_any, which only autodiff writes): the exercise asks for the formula "
        "Y - A - (M - XB) Omega, written by hand, which costs one pass and no backward pass.",
    )
    require(
        "lgamma" not in names,
        "the numbers are right, but your program evaluates log(Y!), a piece of the ELBO itself: the "
        "hand-derived gradient never needs the ELBO's value. Write Y - A - (M - XB) Omega.",
    )
