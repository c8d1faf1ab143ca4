"""Checker for the profiling chapter's Exercise 3: a scan's gradient in less memory, and the
scan it differentiates."""

from __future__ import annotations

import functools
from collections.abc import Callable

import jax
import jax.numpy as jnp
import numpy as np

from ...checks import (
    CheckFailed,
    call_answer,
    close,
    exercise_checker,
    require,
    require_accepts,
    require_array,
)
from ...memory import memory_figures
from .._jaxpr import primitive_names, traced_program

HINTS = {
    "check_low_memory_grad": (
        "Build your own loss from jax.lax.scan over a checkpointed body, "
        "jax.checkpoint(wide_body, policy=...), and take jax.grad of it in ws (argnums=1).",
        "Checkpoint the scan's BODY with jax.checkpoint_policies.nothing_saveable: a "
        "checkpoint around the whole loss recomputes a forward scan that stores its "
        "intermediates again, and everything_saveable saves them. The gradient must stay "
        "exact, in ws, not x0.",
    ),
}


def wide_body(x, w):
    """One step of the exercise's scan: an (n, m) intermediate from an n-vector and an m-vector."""
    hidden = jnp.tanh(x[:, None] * w[None, :])
    return x + 0.1 * hidden.mean(axis=1), None


def scan_loss(x0, ws):
    """The exercise's loss: `len(ws)` steps of `wide_body`, then a sum of squares."""
    x, _ = jax.lax.scan(wide_body, x0, ws)
    return jnp.sum(x**2)


_MEMORY_SIZE = (256, 128, 100)
"""(n, m, steps) of the scan whose compiled memory the checker measures."""

_EAGER_SIZE = (32, 16, 12)
"""A small scan, on which the checker also calls the answer eagerly."""

_CHECKPOINT_PRIMITIVES = {"remat2", "checkpoint", "remat"}


def _scan_inputs(n: int, m: int, steps: int):
    return jnp.linspace(-1.0, 1.0, n), jnp.linspace(0.0, 1.0, steps * m).reshape(steps, m)


@functools.cache
def _plain_gradient(n: int, m: int, steps: int):
    """Plain `jax.grad` of `scan_loss` at one size: its compiled program and its value (compiled
    once per session; every answer is compared with it)."""
    compiled = jax.jit(jax.grad(scan_loss, argnums=1)).lower(*_scan_inputs(n, m, steps)).compile()
    return compiled, compiled(*_scan_inputs(n, m, steps))


def _require_scan_gradient(result, expected, case: str) -> None:
    result = require_array(
        result,
        expected.shape,
        what=f"low_memory_grad on {case}",
        expected="d scan_loss / d ws, one entry per entry of ws",
    )
    require(
        close(result, expected, rtol=1e-4, atol=1e-6),
        f"on {case}, your gradient differs from jax.grad(scan_loss, argnums=1) by up to "
        f"{float(np.max(np.abs(result - np.asarray(expected)))):.3g}: the gradient must not change "
        "(jax.checkpoint recomputes, it does not approximate).",
    )


@exercise_checker("Exercise 3 (a scan's gradient in less memory)")
def check_low_memory_grad(low_memory_grad: Callable) -> None:
    """Checks `low_memory_grad(x0, ws)`: the gradient of `scan_loss` in `ws`, whose compiled program
    needs at most a quarter of the temporary memory of plain `jax.grad`, via `jax.checkpoint`."""
    require_accepts(low_memory_grad, *_scan_inputs(*_EAGER_SIZE), what="low_memory_grad")
    x0, ws = _scan_inputs(*_EAGER_SIZE)
    eager = call_answer(low_memory_grad, x0, ws, what="low_memory_grad")
    _require_scan_gradient(
        eager,
        _plain_gradient(*_EAGER_SIZE)[1],
        f"a small scan ({_EAGER_SIZE[2]} steps), called eagerly",
    )

    n, m, steps = _MEMORY_SIZE
    case = f"x0 of {n} numbers and ws of shape ({steps}, {m}), under jax.jit"
    x0, ws = _scan_inputs(n, m, steps)
    plain, expected = _plain_gradient(n, m, steps)
    yours = call_answer(
        lambda *a: jax.jit(low_memory_grad).lower(*a).compile(),
        x0,
        ws,
        what="low_memory_grad under jax.jit",
    )
    _require_scan_gradient(
        call_answer(yours, x0, ws, what="low_memory_grad under jax.jit"), expected, case
    )
    plain_temp = memory_figures(plain).temp_bytes
    your_temp = memory_figures(yours).temp_bytes
    primitives = set(
        primitive_names(traced_program(low_memory_grad, x0, ws, what="low_memory_grad"))
    )
    uses_checkpoint = bool(primitives & _CHECKPOINT_PRIMITIVES)
    if your_temp > plain_temp / 4:
        require(
            uses_checkpoint,
            f"on {case} your program's temporaries take {your_temp:,} bytes, plain jax.grad's {plain_temp:,}: "
            "the gradient keeps every step's (n, m) intermediate. Wrap the scan's body in jax.checkpoint, "
            "so that the backward pass recomputes it.",
        )
        raise CheckFailed(
            f"on {case} your program's temporaries take {your_temp:,} bytes, more than a quarter of plain "
            f"jax.grad's {plain_temp:,}. Is jax.checkpoint around the whole loss (the recomputed scan then "
            "stores its intermediates as before), or is its policy saving them (everything_saveable)? "
            "Checkpoint the scan's body, with jax.checkpoint_policies.nothing_saveable."
        )
    require(
        uses_checkpoint,
        "your program needs little memory, but it does not use jax.checkpoint, the method this exercise asks for.",
    )
