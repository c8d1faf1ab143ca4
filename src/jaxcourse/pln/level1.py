"""Level 1: `jax.jit` on each piece of the iteration; the loop stays in Python."""

from __future__ import annotations

from functools import partial

import jax
import jax.numpy as jnp
import optax

from ._algorithm import (
    ADAM,
    FitResult,
    check_fit_arguments,
    init_variational,
    negative_elbo,
    report_divergence,
)
from ._data import PLNData
from ._model import closed_form_params

loss_and_grad = jax.jit(jax.value_and_grad(negative_elbo))
"""(variational, params, data) -> (-ELBO, gradient with respect to the variational parameters)."""

closed_form_step = jax.jit(closed_form_params)
"""(data, variational) -> ModelParams, compiled once per shape."""


@partial(jax.jit, static_argnames="optimizer")
def optimizer_step(variational, grads, opt_state, optimizer):
    """Applies one optax update; the optimizer is static because it holds Python functions."""
    updates, opt_state = optimizer.update(grads, opt_state, variational)
    return optax.apply_updates(variational, updates), opt_state


def fit(data: PLNData, n_iter: int, *, optimizer: optax.GradientTransformation = ADAM) -> FitResult:
    """Fits the PLN model with three compiled calls per iteration; see `FitResult`.
    A fit that diverges warns and returns its last finite iterate (`report_divergence`)."""
    check_fit_arguments(data, n_iter)
    return report_divergence(run(data, n_iter, optimizer), lambda k: run(data, k, optimizer))


def run(data: PLNData, n_iter: int, optimizer: optax.GradientTransformation) -> FitResult:
    """`n_iter` iterations of the three compiled calls, from the start (no input checks)."""
    variational = init_variational(data)
    params = closed_form_step(data, variational)
    opt_state = optimizer.init(variational)
    trace = []
    for _ in range(n_iter):
        loss, grads = loss_and_grad(variational, params, data)
        variational, opt_state = optimizer_step(variational, grads, opt_state, optimizer)
        params = closed_form_step(data, variational)
        trace.append(-loss)  # a device array: no float() here, which would wait for the device
    return FitResult.of_all_steps(jnp.asarray(trace, data.counts.dtype), variational, params)
