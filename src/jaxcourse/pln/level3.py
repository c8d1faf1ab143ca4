"""Level 3: the whole model state in one container, carried through `lax.scan`.

A plain Python class is not a pytree, so `scan` rejects it; a `NamedTuple` or a dataclass
registered with `jax.tree_util.register_dataclass` works, because JAX knows how to take it
apart into arrays and put it back together.
"""

from __future__ import annotations

import dataclasses
from functools import partial
from typing import NamedTuple

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
from ._model import ModelParams, Variational, closed_form_params


class PlainContainer:
    """A plain class: fine in Python, but JAX cannot see the arrays inside it."""

    def __init__(self, *, data, variational, params, opt_state):
        self.data = data
        self.variational = variational
        self.params = params
        self.opt_state = opt_state


class NamedTupleContainer(NamedTuple):
    """The same fields in a NamedTuple, which JAX treats as a pytree out of the box."""

    data: PLNData
    variational: Variational
    params: ModelParams
    opt_state: optax.OptState


@jax.tree_util.register_dataclass
@dataclasses.dataclass(frozen=True)
class DataclassContainer:
    """The same fields in a frozen dataclass, registered as a pytree (every field is data)."""

    data: PLNData
    variational: Variational
    params: ModelParams
    opt_state: optax.OptState


def initial_container(data: PLNData, optimizer: optax.GradientTransformation, container: type):
    """Builds a `container` (any of the three classes above) at the starting point."""
    variational = init_variational(data)
    return container(
        data=data,
        variational=variational,
        params=closed_form_params(data, variational),
        opt_state=optimizer.init(variational),
    )


def container_step(state, optimizer: optax.GradientTransformation):
    """One iteration on a container; returns a new container of the same type and the ELBO."""
    variational, params, opt_state, elbo = update_step(
        state.variational, state.params, state.opt_state, state.data, optimizer
    )
    new_state = type(state)(
        data=state.data, variational=variational, params=params, opt_state=opt_state
    )
    return new_state, elbo


@partial(jax.jit, static_argnames=("n_iter", "optimizer", "container"))
def fit_compiled(data, n_iter, optimizer, container):
    """The jitted program behind `fit`: the state lives in one `container`, carried by `lax.scan`."""
    state = initial_container(data, optimizer, container)
    state, trace = jax.lax.scan(
        lambda state, _: container_step(state, optimizer), state, length=n_iter
    )
    return FitResult.of_all_steps(trace, state.variational, state.params)


def fit(
    data: PLNData,
    n_iter: int,
    *,
    optimizer: optax.GradientTransformation = ADAM,
    container: type = DataclassContainer,
) -> FitResult:
    """Fits the PLN model with the state carried in `container`; see `FitResult`.

    `container=PlainContainer` raises `TypeError: ... is not a valid JAX type`.
    """
    check_fit_arguments(data, n_iter)
    return report_divergence(
        fit_compiled(data, n_iter, optimizer, container),
        lambda k: fit_compiled(data, k, optimizer, container),
    )
