"""Level 0: a plain Python class running JAX op by op, with no `jit` (the baseline)."""

from __future__ import annotations

import jax.numpy as jnp
import optax

from ._algorithm import (
    ADAM,
    FitResult,
    check_fit_arguments,
    init_variational,
    report_divergence,
    update_step,
)
from ._data import PLNData
from ._model import closed_form_params


class EagerPLN:
    """Holds the data and every parameter as attributes, and updates them in place.

    Each JAX operation inside `step` is dispatched on its own, exactly as NumPy would run it.
    """

    def __init__(self, data: PLNData, optimizer: optax.GradientTransformation):
        self.data = data
        self.optimizer = optimizer
        self.variational = init_variational(data)
        self.params = closed_form_params(data, self.variational)
        self.opt_state = optimizer.init(self.variational)

    def step(self):
        """Runs one iteration, mutating the attributes; returns the ELBO before the step."""
        self.variational, self.params, self.opt_state, elbo = update_step(
            self.variational, self.params, self.opt_state, self.data, self.optimizer
        )
        return elbo


def fit(data: PLNData, n_iter: int, *, optimizer: optax.GradientTransformation = ADAM) -> FitResult:
    """Fits the PLN model by `n_iter` eager iterations; see `FitResult` for the shapes.
    A fit that diverges warns and returns its last finite iterate (`report_divergence`)."""
    check_fit_arguments(data, n_iter)
    return report_divergence(run(data, n_iter, optimizer), lambda k: run(data, k, optimizer))


def run(data: PLNData, n_iter: int, optimizer: optax.GradientTransformation) -> FitResult:
    """`n_iter` eager iterations from the start (no input checks)."""
    model = EagerPLN(data, optimizer)
    trace = [model.step() for _ in range(n_iter)]
    return FitResult.of_all_steps(
        jnp.asarray(trace, data.counts.dtype), model.variational, model.params
    )
