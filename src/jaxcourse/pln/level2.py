"""Level 2: the whole loop inside `jax.lax.scan`, under one `jax.jit`."""

from __future__ import annotations

from functools import partial

import jax
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


@partial(jax.jit, static_argnames=("n_iter", "optimizer"))
def fit_compiled(data: PLNData, n_iter: int, optimizer: optax.GradientTransformation) -> FitResult:
    """The jitted program behind `fit` (no input checks): init, then `lax.scan` over `n_iter` steps."""
    variational = init_variational(data)
    params = closed_form_params(data, variational)

    def body(carry, _):
        variational, params, opt_state = carry
        variational, params, opt_state, elbo = update_step(
            variational, params, opt_state, data, optimizer
        )
        return (variational, params, opt_state), elbo

    carry = (variational, params, optimizer.init(variational))
    (variational, params, _), trace = jax.lax.scan(body, carry, length=n_iter)
    return FitResult.of_all_steps(trace, variational, params)


def fit(data: PLNData, n_iter: int, *, optimizer: optax.GradientTransformation = ADAM) -> FitResult:
    """Fits the PLN model in one compiled program; see `FitResult`.

    `n_iter` and `optimizer` are static: a new value of either compiles a new program.
    """
    check_fit_arguments(data, n_iter)
    return report_divergence(
        fit_compiled(data, n_iter, optimizer), lambda k: fit_compiled(data, k, optimizer)
    )
