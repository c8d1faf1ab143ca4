"""The profiled ELBO with its hand-derived gradient as a `jax.custom_vjp` rule.

`jax.grad` of `profiled_elbo` differentiates through the closed-form B and Sigma (a solve, a
Cholesky factorisation, a log-determinant). The envelope theorem gives the same gradient in
closed form, and `profiled.evaluate` computes it together with the value; this module hands that
gradient to autodiff, so `jax.grad`, `jax.value_and_grad` and optax see an ordinary function.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from ._model import Variational
from .profiled import Problem, evaluate


@jax.custom_vjp
def _profiled_elbo(problem: Problem, variational: Variational) -> jax.Array:
    return evaluate(problem, variational).elbo


def _forward(problem: Problem, variational: Variational):
    evaluation = evaluate(problem, variational)
    # The residuals saved for the backward pass: the gradient itself, already computed.
    return evaluation.elbo, evaluation.grad


def _backward(grad: Variational, cotangent: jax.Array):
    # One cotangent per argument of the primal function. The data get None (a zero cotangent):
    # the rule knows only dJ/d(M, S). An array argument cannot go in nondiff_argnums instead:
    # under jit it is a tracer, which custom_vjp refuses there.
    return None, jax.tree.map(lambda g: cotangent * g, grad)


_profiled_elbo.defvjp(_forward, _backward)


def profiled_elbo_custom_vjp(problem: Problem, variational: Variational) -> jax.Array:
    """The profiled ELBO J, whose reverse-mode derivative is the closed-form gradient.

    Equal to `profiled_elbo(data, variational)` for `problem = profiled.prepare(data)`;
    `jax.grad` with respect to `variational` returns `profiled.evaluate(...).grad` instead of
    differentiating through the closed-form B and Sigma. Reverse mode only (`grad`, `vjp`,
    `jacrev`); `jvp` and `jacfwd` raise. The gradient with respect to `problem` is zero: the
    rule does not differentiate the data.

    Args:
        problem: the prepared data, `profiled.prepare(data)`, with `(n, p)` counts.
        variational: M and S, `(n, p)` each, as a `Variational`.

    Returns:
        A scalar, float32 unless x64 is enabled.

    Raises:
        TypeError: `problem` is not a `Problem` (e.g. raw `PLNData`) or `variational` not a
            `Variational`.
        ValueError: M or S does not have the shape of the counts.
    """
    if not isinstance(problem, Problem):
        raise TypeError(
            f"problem must be a profiled.Problem, got {type(problem).__name__}; "
            "prepare it once with jaxcourse.pln.profiled.prepare(data)."
        )
    if not isinstance(variational, Variational):
        raise TypeError(
            f"variational must be a Variational (M, S), got {type(variational).__name__}."
        )
    expected = jnp.shape(problem.counts)
    for name, value in zip(Variational._fields, variational):
        if jnp.shape(value) != expected:
            raise ValueError(
                f"{name} must have the shape of the counts {expected}, got {jnp.shape(value)}."
            )
    return _profiled_elbo(problem, variational)


def relative_error(actual, reference) -> float:
    """||actual - reference|| / ||reference||, Euclidean norms over all leaves of two pytrees of
    the same structure (e.g. two gradients as `Variational`s), computed in float64 NumPy."""
    import numpy as np

    actual_leaves, actual_tree = jax.tree.flatten(actual)
    reference_leaves, reference_tree = jax.tree.flatten(reference)
    if actual_tree != reference_tree:  # type: ignore[operator]  # jaxlib ships no stub for PyTreeDef
        raise ValueError(f"the two trees differ: {actual_tree} and {reference_tree}.")
    difference = sum(
        np.sum(np.square(np.asarray(a, np.float64) - np.asarray(r, np.float64)))
        for a, r in zip(actual_leaves, reference_leaves)
    )
    size = sum(np.sum(np.square(np.asarray(r, np.float64))) for r in reference_leaves)
    return float(np.sqrt(difference / size))
