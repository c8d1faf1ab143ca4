"""Checker for the profiling chapter's exercise on a scan's gradient in less memory, and the
scan it differentiates."""

from __future__ import annotations

import functools
import math
from collections.abc import Callable

import jax
import jax.numpy as jnp
import numpy as np

from ...checks import (
    CheckFailed,
    call_answer,
    close,
    describe,
    exercise_checker,
    require,
    require_accepts,
    require_array,
)
from ...memory import memory_figures
from .._jaxpr import equations, inner_jaxprs, primitive_names, traced_program


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


def _require_scan_gradient(
    result, expected, case: str, x0_shape: tuple, stale: Callable | None = None
) -> None:
    """Fails with a hint unless `result` is `expected`; `stale()`, when given, is the gradient at
    the x0 of the checker's earlier call, which an answer that keeps x0 would return."""
    what = f"low_memory_grad on {case}"
    wanted = "d scan_loss / d ws, one entry per entry of ws"
    require(
        not (
            isinstance(result, (tuple, list))
            and len(result) == 2
            and getattr(result[1], "shape", None) == expected.shape
        ),
        f"{what} should be one array of shape {expected.shape} ({wanted}), got {describe(result)}, "
        "the gradients in x0 and in ws (argnums=(0, 1)?): return the gradient in ws alone.",
    )
    require(
        not (
            hasattr(result, "shape")
            and tuple(result.shape) == x0_shape
            and x0_shape != expected.shape
        ),
        f"{what} should be one array of shape {expected.shape} ({wanted}), got an array of shape "
        f"{x0_shape}, the shape of x0: the gradient in x0 (argnums=0, jax.grad's default)? Take it "
        "in ws, argnums=1.",
    )
    result = require_array(result, expected.shape, what=what, expected=wanted)
    if close(result, expected, rtol=1e-4, atol=1e-6):
        return
    require(
        stale is None or not close(result, stale(), rtol=1e-4, atol=1e-6),
        f"on {case}, your gradient is the one at the x0 of the checker's earlier call (a different "
        "x0): is x0, or a function closing over it, kept from one call to the next? Differentiate "
        "at each call's own x0 and ws.",
    )
    expected = np.asarray(expected, dtype=np.float64)
    scale = float(np.sum(result * expected) / np.sum(expected * expected))
    mean_of = round(1 / scale) if scale > 0 else 0
    require(
        not close(result, scale * expected, rtol=1e-4, atol=1e-6),
        f"on {case}, your gradient is {scale:.4g} times jax.grad(scan_loss, argnums=1)'s"
        + (
            f" (1/{mean_of}, one over the length of x0: a mean of x**2 instead of scan_loss's sum?)"
            if mean_of == x0_shape[0] and math.isclose(scale * mean_of, 1.0, rel_tol=1e-4)
            else ""
        )
        + ": differentiate scan_loss itself, the sum of the squares of the scan's last x.",
    )
    raise CheckFailed(
        f"on {case}, your gradient differs from jax.grad(scan_loss, argnums=1)(x0, ws) by up to "
        f"{float(np.max(np.abs(result - expected))):.3g}: differentiate scan_loss itself (len(ws) "
        "steps of wide_body, then the sum of squares) at these x0 and ws; jax.checkpoint changes the "
        "memory a gradient needs, not its value."
    )


def _checkpoints(jaxpr) -> list[tuple[object, bool]]:
    """(policy, whether it holds a scan) for each checkpointed function in `jaxpr`."""
    return [
        (
            eqn.params.get("policy"),
            any("scan" in primitive_names(inner) for inner in inner_jaxprs(eqn)),
        )
        for eqn in equations(jaxpr)
        if eqn.primitive.name in _CHECKPOINT_PRIMITIVES
    ]


@exercise_checker(
    hints=(
        "Build your own loss from jax.lax.scan over a checkpointed body, "
        "jax.checkpoint(wide_body, policy=...), and take jax.grad of it in ws (argnums=1).",
        "Checkpoint the scan's BODY with jax.checkpoint_policies.nothing_saveable: a "
        "checkpoint around the whole loss recomputes a forward scan that stores its "
        "intermediates again, and everything_saveable saves them. The gradient must stay "
        "exact, in ws, not x0.",
    )
)
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
        x0.shape,
    )

    earlier_x0 = x0
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
        call_answer(yours, x0, ws, what="low_memory_grad under jax.jit"),
        expected,
        case,
        x0.shape,
        stale=lambda: jax.grad(scan_loss, argnums=1)(earlier_x0, ws),
    )
    plain_temp = memory_figures(plain).temp_bytes
    your_temp = memory_figures(yours).temp_bytes
    checkpoints = _checkpoints(traced_program(low_memory_grad, x0, ws, what="low_memory_grad"))
    if your_temp > plain_temp / 4:
        memory = (
            f"on {case} your program's temporaries take {your_temp:,} bytes, plain jax.grad's "
            f"{plain_temp:,}"
        )
        require(
            bool(checkpoints),
            f"{memory}, and your program does not use jax.checkpoint (no checkpointed function runs "
            "in it): the gradient keeps every step's (n, m) intermediate. Wrap the scan's body in "
            "jax.checkpoint, and scan over the checkpointed body, so that the backward pass "
            "recomputes it.",
        )
        require(
            not any(holds_scan for _, holds_scan in checkpoints),
            f"{memory}: you put jax.checkpoint around the whole loss (or the whole scan), whose "
            "recomputed forward pass is a scan that stores every step's intermediate as before. "
            "Checkpoint the scan's body instead: jax.lax.scan(jax.checkpoint(wide_body), x0, ws).",
        )
        saving = sorted(
            {
                getattr(policy, "__name__", repr(policy))
                for policy, _ in checkpoints
                if policy is not None and policy is not jax.checkpoint_policies.nothing_saveable
            }
        )
        require(
            not saving,
            f"{memory}: your checkpoint's policy, {' and '.join(saving)}, saves the body's "
            "intermediates for the backward pass, as plain jax.grad does. Use "
            "jax.checkpoint_policies.nothing_saveable (or no policy).",
        )
        raise CheckFailed(
            f"{memory}, more than a quarter: your program uses jax.checkpoint, but not on the scan's "
            "body alone, with a policy that saves nothing. Checkpoint the function the scan calls "
            "each step, jax.checkpoint(wide_body, policy=jax.checkpoint_policies.nothing_saveable)."
        )
    require(
        bool(checkpoints),
        "your program needs little memory, but it does not use jax.checkpoint, the method this "
        "exercise asks for.",
    )
