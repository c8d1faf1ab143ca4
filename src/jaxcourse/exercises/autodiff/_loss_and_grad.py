"""Checker for the autodiff chapter's exercise on loss, predictions and gradient in one pass
(has_aux)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from ...checks import (
    call_answer,
    close,
    describe,
    exercise_checker,
    require,
)


def _linear_predict(params, x):
    return x @ params["w"] + params["b"]


def _regression_cases() -> list[tuple[dict, np.ndarray, np.ndarray, str]]:
    """(params, x, y, description): random data, an exact fit (zero gradient), one sample, d = 1."""
    rng = np.random.default_rng(15)
    cases = []
    for n, d, description in (
        (6, 3, "6 samples, 3 features"),
        (1, 2, "a single sample"),
        (5, 1, "one feature"),
    ):
        x = rng.normal(size=(n, d)).astype(np.float32)
        params: dict[str, Any] = {
            "w": rng.normal(size=d).astype(np.float32),
            "b": np.float32(rng.normal()),
        }
        cases.append((params, x, rng.normal(size=n).astype(np.float32), description))
    params, x, _, _ = cases[0]
    exact = (x @ params["w"] + params["b"]).astype(np.float32)
    cases.append((params, x, exact, "an exact fit, whose gradient is zero"))
    return cases


def _regression_reference(params, x, y):
    """((loss, predictions), grads) of the mean squared error, by hand in float64."""
    x64 = x.astype(np.float64)
    predictions = x64 @ params["w"].astype(np.float64) + np.float64(params["b"])
    residuals = predictions - y
    n = x.shape[0]
    grads = {"w": 2.0 / n * x64.T @ residuals, "b": 2.0 / n * residuals.sum()}
    return (np.mean(residuals**2), predictions), grads


def _require_aux_structure(result, params, n: int, how: str) -> None:
    """The structural check: ((loss, predictions), grads) with grads shaped like params."""
    expected = "((loss, predictions), grads), what jax.value_and_grad(..., has_aux=True) returns"
    require(
        not (isinstance(result, tuple) and len(result) == 3),
        f"{how}, you returned three separate items, {describe(result)}: nest them as {expected}. "
        "The first item should be the pair (loss, predictions).",
    )
    require(
        isinstance(result, tuple) and len(result) == 2,
        f"{how}, your function should return {expected}; got {describe(result)}.",
    )
    value, grads = result
    require(
        isinstance(value, tuple) and len(value) == 2,
        f"{how}, the first item should be the pair (loss, predictions), got {describe(value)}. With "
        "has_aux=True, jax.value_and_grad returns ((value, aux), grad); jax.grad alone returns (grad, aux).",
    )
    loss, predictions = value
    require(np.shape(loss) == (), f"{how}, the loss should be a scalar, got {describe(loss)}.")
    require(
        np.shape(predictions) == (n,),
        f"{how}, the predictions (the aux output) should have shape ({n},), one per sample, got {describe(predictions)}.",
    )
    require(
        isinstance(grads, dict) and set(grads) == set(params),
        f"{how}, the gradient should be a dict with the keys of params {sorted(params)}, got "
        f"{describe(grads)}: differentiate with respect to params, not x (argnums names the position "
        "of the argument to differentiate).",
    )
    for name in params:
        require(
            np.shape(grads[name]) == np.shape(params[name]),
            f"{how}, grads[{name!r}] should have the shape of params[{name!r}], {np.shape(params[name])}, got "
            f"{np.shape(grads[name])}: differentiate with respect to params, not x.",
        )


@exercise_checker(
    hints=(
        "Write the loss as a function of params alone that returns a pair (loss, predictions), "
        "then give it to jax.value_and_grad with has_aux=True: one forward pass gives the loss, "
        "the predictions and the gradient.",
        "Inside the loss: predictions = predict(params, x), then "
        "jnp.mean((predictions - y) ** 2) (the mean, not the sum, no 1/2, no square root). "
        "value_and_grad(..., has_aux=True) already returns ((loss, predictions), grads): return "
        "it as it is, and do not call predict again outside it.",
    )
)
def check_loss_and_grad(loss_and_grad: Callable) -> None:
    """Checks `loss_and_grad(predict, params, x, y)` -> ((mse, predictions), grads), one forward pass."""
    jitted = jax.jit(lambda params, x, y: loss_and_grad(_linear_predict, params, x, y))
    for params, x, y, description in _regression_cases():
        calls = []

        def predict(params, x):
            calls.append(1)  # noqa: B023
            return _linear_predict(params, x)

        args = (jax.tree.map(jnp.asarray, params), jnp.asarray(x), jnp.asarray(y))
        eager = call_answer(loss_and_grad, predict, *args, what="loss_and_grad")
        how = f"on {description}"
        _require_aux_structure(eager, params, x.shape[0], how)
        (expected_loss, expected_predictions), expected_grads = _regression_reference(params, x, y)
        (loss, predictions), grads = eager
        require(
            close(predictions, expected_predictions, rtol=1e-4, atol=1e-5),
            f"{how}, the predictions are wrong: return predict(params, x) as the aux output.",
        )
        if not close(loss, expected_loss, rtol=1e-4, atol=1e-6):
            residuals = expected_predictions - y.astype(np.float64)
            require(
                not close(loss, expected_loss * x.shape[0], rtol=1e-4, atol=1e-6),
                f"{how}, the loss is the sum of squared residuals; the exercise asks for their mean.",
            )
            for candidate, what_it_is in (
                (0.5 * expected_loss, "half the mean squared error (a factor 1/2)"),
                (np.sqrt(expected_loss), "the square root of the mean squared error (the RMSE)"),
                (np.mean(np.abs(residuals)), "the mean of the absolute residuals"),
            ):
                require(
                    not close(loss, candidate, rtol=1e-4, atol=1e-6),
                    f"{how}, your loss is {what_it_is}; the exercise asks for the mean of the "
                    "squared residuals, jnp.mean((predictions - y) ** 2).",
                )
            require(False, f"{how}, the loss should be {expected_loss:.5f}, got {float(loss):.5f}.")
        if not close(grads, expected_grads, rtol=1e-4, atol=1e-5):
            expected_nonzero = any(np.any(np.abs(g) > 1e-6) for g in expected_grads.values())
            require(
                not (
                    expected_nonzero and all(not np.any(np.asarray(g) != 0) for g in grads.values())
                ),
                f"{how}, the gradient is zero: nothing in your loss depends on params for autodiff "
                "(a jax.lax.stop_gradient, or predictions computed outside the differentiated "
                "function).",
            )
            scaled = {k: v * x.shape[0] for k, v in expected_grads.items()}
            require(
                not close(grads, scaled, rtol=1e-4, atol=1e-5),
                f"{how}, your gradient is {x.shape[0]} times too large: the gradient of the sum of "
                "squares, not of the mean you return. Differentiate the loss you return.",
            )
            require(
                False,
                f"{how}, the gradient is wrong: it should be the gradient of the loss you return.",
            )
        require(
            len(calls) == 1,
            f"{how}, predict ran {len(calls)} times for one call of loss_and_grad: compute the predictions "
            "once, inside the loss, and return them as the auxiliary output (has_aux=True) instead of "
            "calling predict again.",
        )
        compiled = call_answer(jitted, *args, what="jax.jit(loss_and_grad)")
        _require_aux_structure(compiled, params, x.shape[0], f"{how}, under jax.jit")
        require(
            close(
                compiled,
                ((expected_loss, expected_predictions), expected_grads),
                rtol=1e-4,
                atol=1e-5,
            ),
            f"{how}, jax.jit(loss_and_grad) disagrees with the eager call.",
        )
