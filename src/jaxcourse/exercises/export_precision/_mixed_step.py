"""Checker of the export and precision chapter's exercise on a mixed-precision step:
`mixed_step(params, x, y, lr)` computes the loss and its gradient in bfloat16 and updates float32
parameters in float32."""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from ...checks import CheckFailed, call_eager_and_jitted, close, exercise_checker, require
from .._jaxpr import equations, traced_program


def loss_f64(w, b, x, y) -> float:
    return float(np.mean((x @ w + b - y) ** 2))


def reference_update(params, x, y, lr) -> dict:
    """-lr times the float64 gradient of the mean squared error."""
    w, b = (np.asarray(params[k], np.float64) for k in ("w", "b"))
    x, y = np.asarray(x, np.float64), np.asarray(y, np.float64)
    residual = x @ w + b - y
    grads = {"w": 2 * x.T @ residual / len(y), "b": 2 * residual.mean()}
    return {k: -lr * grads[k] for k in grads}


def _data(n: int, k: int, seed: int, scale: float) -> tuple[dict, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, k)).astype(np.float32)
    y = (x @ rng.normal(size=k) + rng.normal(size=n)).astype(np.float32)
    params = {"w": np.full(k, scale, np.float32), "b": np.asarray(scale, np.float32)}
    return params, x, y


def _bf16_matmul(mixed_step, params, x, y, lr) -> bool:
    program = traced_program(mixed_step, params, x, y, lr, what="mixed_step")
    return any(
        eqn.primitive.name == "dot_general"
        and all(var.aval.dtype == jnp.bfloat16 for var in eqn.invars)
        for eqn in equations(program)
    )


def _check_case(mixed_step, params, x, y, learning_rate: float) -> None:
    lr = learning_rate
    args = ({k: jnp.asarray(v) for k, v in params.items()}, jnp.asarray(x), jnp.asarray(y), lr)
    want = reference_update(params, x, y, lr)
    for label, new in call_eager_and_jitted(mixed_step, *args, what="mixed_step"):
        require(
            isinstance(new, dict) and set(new) == {"w", "b"},
            f"mixed_step{label} should return a dict with the keys 'w' and 'b', like params.",
        )
        for key in ("w", "b"):
            try:
                got = jnp.asarray(new[key])
            except (TypeError, ValueError):
                raise CheckFailed(
                    f"params['{key}'] should come back as a float32 array, got "
                    f"{type(new[key]).__name__}."
                ) from None
            require(
                got.dtype == jnp.float32,
                f"params['{key}'] came back as {got.dtype}{label}: the master copy stays "
                "float32; compute in bfloat16 inside the loss, update in float32.",
            )
            require(
                got.shape == np.shape(params[key]),
                f"params['{key}'] came back with shape {got.shape}, not {np.shape(params[key])}.",
            )
        update = {k: np.asarray(new[k], np.float64) - params[k] for k in ("w", "b")}
        if close(update, want, rtol=0.1, atol=1e-3 * lr):
            continue
        require(
            not close(update, {k: -v for k, v in want.items()}, rtol=0.1, atol=1e-3 * lr),
            f"your step{label} climbs the loss: subtract lr * gradient.",
        )
        require(
            any(np.any(np.abs(v) > 0) for v in update.values()),
            f"the parameters did not move{label}: an update of size lr * gradient (here about "
            f"{np.abs(want['w']).max():.1e}) below bfloat16's resolution at the parameters was "
            "rounded away. Add it in float32: params - lr * grads with float32 params and grads.",
        )
        require(
            False,
            f"the update{label} is not -lr times the gradient of the mean squared error "
            "mean((x @ w + b - y) ** 2), even allowing for bfloat16's rounding.",
        )


@exercise_checker(
    hints=(
        "Inside the loss, cast: w16 = params['w'].astype(jnp.bfloat16), the same for b and x, "
        "then take jax.grad of that loss with respect to the float32 params.",
        "The gradient of a cast is a cast back, so jax.grad returns float32 gradients for float32 "
        "params; update in float32, params - lr * grads (jax.tree.map), and never cast the "
        "updated parameters to bfloat16.",
    )
)
def check_mixed_step(mixed_step) -> None:
    """Two sizes, eagerly and under jit; float32 parameters out; a step smaller than bfloat16's
    resolution at the parameters must survive; and the jaxpr has a bfloat16 matrix product."""
    _check_case(mixed_step, *_data(32, 4, seed=0, scale=0.1), learning_rate=0.05)
    _check_case(mixed_step, *_data(48, 6, seed=1, scale=1.0), learning_rate=1e-4)
    params, x, y = _data(16, 3, seed=2, scale=0.5)
    args = ({k: jnp.asarray(v) for k, v in params.items()}, jnp.asarray(x), jnp.asarray(y), 0.1)
    require(
        _bf16_matmul(mixed_step, *args),
        "the values are right, but no matrix product ran in bfloat16: cast the parameters and "
        "x to jnp.bfloat16 inside the loss, before x @ w.",
    )
