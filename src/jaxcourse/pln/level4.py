"""Level 4: a model class with methods, registered as a pytree so `jit` and `scan` accept it.

The data and every parameter are children (traced arrays); the only auxiliary data are the
sizes, which are hashable ints. Methods are pure: they return a new object and never mutate.
"""

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
from ._model import ModelParams, Variational, closed_form_params, elbo


@jax.tree_util.register_pytree_node_class
class PLN:
    """The PLN model: data, variational parameters and model parameters, with pure methods."""

    def __init__(self, data: PLNData, variational: Variational, params: ModelParams):
        self.data = data
        self.variational = variational
        self.params = params

    @classmethod
    def initialize(cls, data: PLNData) -> PLN:
        """The model at the shared starting point, with closed-form B and Sigma."""
        variational = init_variational(data)
        return cls(data, variational, closed_form_params(data, variational))

    @property
    def n_samples(self) -> int:
        return self.data.counts.shape[0]

    @property
    def n_species(self) -> int:
        return self.data.counts.shape[1]

    def elbo(self) -> jax.Array:
        """The ELBO (scalar) at the current parameters."""
        return elbo(self.data, self.variational, self.params)

    def step(self, opt_state, optimizer: optax.GradientTransformation):
        """One iteration; returns `(new_model, new_opt_state, elbo_before_step)`."""
        variational, params, opt_state, value = update_step(
            self.variational, self.params, opt_state, self.data, optimizer
        )
        return PLN(self.data, variational, params), opt_state, value

    def tree_flatten(self):
        children = (self.data, self.variational, self.params)
        aux_data = (self.n_samples, self.n_species)  # hashable sizes only, never arrays
        return children, aux_data

    @classmethod
    def tree_unflatten(cls, aux_data, children):
        # aux_data is implied by the children's shapes; every field is restored from them.
        del aux_data
        return cls(*children)


@partial(jax.jit, static_argnames=("n_iter", "optimizer"))
def fit_compiled(model: PLN, n_iter: int, optimizer: optax.GradientTransformation) -> FitResult:
    """The jitted program behind `fit`: `lax.scan` over `PLN.step`, starting from `model`."""

    def body(carry, _):
        model, opt_state = carry
        model, opt_state, value = model.step(opt_state, optimizer)
        return (model, opt_state), value

    carry = (model, optimizer.init(model.variational))
    (model, _), trace = jax.lax.scan(body, carry, length=n_iter)
    return FitResult.of_all_steps(trace, model.variational, model.params)


def fit(data: PLNData, n_iter: int, *, optimizer: optax.GradientTransformation = ADAM) -> FitResult:
    """Fits the PLN model by scanning `PLN.step`; see `FitResult`."""
    check_fit_arguments(data, n_iter)
    model = PLN.initialize(data)
    return report_divergence(
        fit_compiled(model, n_iter, optimizer), lambda k: fit_compiled(model, k, optimizer)
    )
