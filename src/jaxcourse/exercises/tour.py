"""Checker for the exercise of the chapter 'A first taste of JAX' (the tour)."""

from __future__ import annotations

from collections.abc import Callable

import jax.numpy as jnp
import numpy as np

from ..checks import call_answer, close, exercise_checker, require, require_array
from ._jaxpr import primitive_names, traced_program
from .vmap._common import _vmap_depth


def _loss(w, x, y):
    return np.mean((x @ w - y) ** 2)


def _descent(learning_rates, x, y, n_steps, *, start=0.0, sign=-1.0, scale=1.0) -> np.ndarray:
    """Gradient descent in float64 on the mean squared error, one row per learning rate.
    `sign=+1` climbs instead, `scale=len(y)` follows the gradient of the summed error."""
    rows = []
    for lr in learning_rates:
        w = np.full(x.shape[1], start)
        for _ in range(n_steps):
            w = w + sign * lr * scale * 2 / len(y) * x.T @ (x @ w - y)
        rows.append(w)
    return np.array(rows)


def _data(n_examples: int, n_features: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n_examples, n_features))
    y = x @ rng.normal(size=n_features) + 0.1 * rng.normal(size=n_examples)
    return x.astype(np.float32), y.astype(np.float32)


def _wrong_answers(lrs, x, y, n_steps) -> list[tuple[np.ndarray, str]]:
    """Known wrong results with the hint that names each mistake."""
    return [
        (
            _descent(lrs, x, y, n_steps, sign=1.0),
            "your weights climb the loss: w + lr * grad is gradient ascent. Descent subtracts, "
            "w = w - lr * jax.grad(loss)(w, x, y).",
        ),
        (
            _descent(lrs, x, y, n_steps - 1),
            f"your weights are those after {n_steps - 1} steps, one short of n_steps = {n_steps}: "
            "run the update exactly n_steps times (for _ in range(n_steps)).",
        ),
        (
            _descent(lrs, x, y, n_steps + 1),
            f"your weights are those after {n_steps + 1} steps, one more than n_steps = {n_steps}: "
            "run the update exactly n_steps times (for _ in range(n_steps)).",
        ),
        (
            _descent(lrs, x, y, n_steps, start=1.0),
            "your fit starts from ones: start every learning rate from w = jnp.zeros(x.shape[1]).",
        ),
        (
            _descent(lrs, x, y, n_steps, scale=len(y)),
            "your weights follow the gradient of the summed squared error, len(y) times too large: "
            "differentiate the exercise's loss, which is the mean (jnp.mean).",
        ),
        (
            _descent(lrs, x, y, n_steps).T,
            "the values are right but transposed: row i should hold the weights of learning rate i "
            "(the default out_axes=0 of jax.vmap).",
        ),
        (
            np.repeat(_descent(lrs[:1], x, y, n_steps), len(lrs), axis=0),
            "every row is the fit of the first learning rate: each row should use its own "
            "learning rate (jax.vmap(fit)(learning_rates) passes one to each call).",
        ),
    ]


def _check_one(fit_all: Callable, lrs: np.ndarray, x, y, n_steps: int) -> None:
    n_lrs, n_features = len(lrs), x.shape[1]
    result = call_answer(
        fit_all, jnp.asarray(lrs), jnp.asarray(x), jnp.asarray(y), n_steps, what="fit_all"
    )
    shape = tuple(getattr(result, "shape", ()))
    require(
        not (shape == (n_features, n_lrs) and n_lrs != n_features),
        f"the result has shape {shape}, one column per learning rate: the rows should be the "
        "learning rates (the default out_axes=0 of jax.vmap).",
    )
    require(
        not (len(shape) == 3 and n_steps in shape[:2] and n_features == shape[2]),
        f"the result has shape {shape}: the weights after every step. Return only the last "
        f"weights, shape {(n_lrs, n_features)}.",
    )
    got = require_array(
        result, (n_lrs, n_features), what="fit_all", expected="one row of weights per learning rate"
    )
    x64, y64 = x.astype(np.float64), y.astype(np.float64)
    expected = _descent(lrs, x64, y64, n_steps)
    if close(got, expected, rtol=1e-3, atol=1e-4):
        return
    for wrong, hint in _wrong_answers(lrs, x64, y64, n_steps):
        require(not close(got, wrong, rtol=1e-3, atol=1e-4), hint)
    worst = int(np.argmax(np.abs(got - expected).max(axis=1)))
    require(
        False,
        f"the shape is right but the values are not: with learning rate {lrs[worst]:g} and "
        f"n_steps = {n_steps}, expected {np.round(expected[worst], 4)}, got {np.round(got[worst], 4)}. "
        "Each row is gradient descent from zeros with w = w - lr * jax.grad(loss)(w, x, y).",
    )


@exercise_checker(
    hints=(
        "Write fit(lr) for ONE learning rate first: start from w = jnp.zeros(x.shape[1]) and repeat "
        "w = w - lr * jax.grad(loss)(w, x, y) n_steps times with a Python for loop. Then map it "
        "over the learning rates with jax.vmap.",
        "jax.vmap(fit)(learning_rates) cuts the learning rates into one number per call and stacks "
        "the weights into one row per learning rate; x and y are read by fit from the enclosing "
        "function, shared by every call. Subtract the gradient (descent), take exactly n_steps "
        "steps, and return the last weights only, not the history.",
    )
)
def check_fit_all(fit_all: Callable) -> None:
    """`fit_all(learning_rates, x, y, n_steps)` returns the weights after `n_steps` steps of
    gradient descent from zero on the mean squared error, one row per learning rate, with a
    program that does not grow with the number of learning rates and that `vmap` batched.

    The first case has as many learning rates as features, so that a gradient multiplied by the
    whole vector of learning rates broadcasts without an error and is caught by its shape or values.
    """
    x, y = _data(30, 3, seed=0)
    _check_one(fit_all, np.array([0.01, 0.05, 0.2], np.float32), x, y, n_steps=6)
    x, y = _data(25, 2, seed=1)
    _check_one(fit_all, np.array([0.02, 0.1, 0.15, 0.3, 0.4], np.float32), x, y, n_steps=4)

    def program(n_lrs: int) -> list[str]:
        lrs = jnp.linspace(0.01, 0.1, n_lrs)
        return primitive_names(
            traced_program(
                lambda rates: fit_all(rates, jnp.asarray(x), jnp.asarray(y), 3), lrs, what="fit_all"
            )
        )

    small, large = len(program(2)), len(program(5))
    require(
        small == large,
        f"the values are right, but your program grows with the learning rates ({small} operations "
        f"for 2 of them, {large} for 5): a Python loop over them, unrolled. Write fit(lr) for one "
        "learning rate and map it with jax.vmap(fit)(learning_rates).",
    )
    depth = _vmap_depth(
        lambda rates: fit_all(rates, jnp.asarray(x), jnp.asarray(y), 3),
        jnp.linspace(0.01, 0.1, 4),
        what="fit_all",
    )
    require(
        depth is None or depth >= 1,
        "the values are right, but no vmap batched them: you broadcast the learning rates by "
        "hand. This exercise practises jax.vmap: write fit(lr) for one learning rate and map it "
        "with jax.vmap(fit)(learning_rates).",
    )
