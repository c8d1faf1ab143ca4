"""Checker for the PLN levels chapter's Exercise 2: a Python loop moved into scan."""

from __future__ import annotations

import functools
from collections.abc import Callable

import jax
import jax.numpy as jnp

from ...checks import (
    call_answer,
    close,
    exercise_checker,
    require,
)

HINTS = {
    "check_scan_loop": (
        "jax.lax.scan(body, init, xs=None, length=n) calls body(carry, x) n times and "
        "stacks what body returns second: the loop's state is scan's carry.",
        "The body ignores its second argument and returns step(carry) as it is: (new_state,"
        " value). Pass length=n_iter (not a fixed number, and not n_iter - 1), and return "
        "scan's result as it is: the final carry, then the stacked values.",
    ),
}


def _reference_loop(step, state, n_iter):
    values = []
    for _ in range(n_iter):
        state, value = step(state)
        values.append(value)
    return state, jnp.stack(values)


def _counting_step() -> tuple[Callable, dict]:
    traces = {"count": 0}

    def step(state):
        traces["count"] += 1  # counts traces under jit, calls when eager
        mean, velocity = state
        velocity = 0.9 * velocity - 0.1 * (mean - 1.0)
        return (mean + velocity, velocity), jnp.sum((mean - 1.0) ** 2)

    return step, traces


def _loop_output(result, n_iter: int):
    require(
        isinstance(result, tuple) and len(result) == 2,
        "run_steps must return a pair (final_state, stacked_values), as scan does; got "
        f"{type(result).__name__}"
        + (f" of length {len(result)}" if isinstance(result, tuple) else "")
        + ".",
    )
    state, values = result
    if jnp.ndim(values) == 1:
        require(
            jnp.shape(values) == (n_iter,),
            f"for n_iter={n_iter} you returned {jnp.shape(values)[0]} values: scan's length must be "
            "n_iter, not a fixed number.",
        )
    require(
        jnp.shape(values) == (n_iter,),
        f"the stacked values should have shape ({n_iter},), got {jnp.shape(values)}: "
        "return the per-step value as scan's second output.",
    )
    return state, values


@exercise_checker("a Python loop moved into scan")
def check_scan_loop(run_steps: Callable) -> None:
    """`run_steps(step, state, n_iter)` must return `(final_state, stacked_values)` like the
    Python loop, for several `n_iter` (1 included), tracing `step` once under jit."""
    require(callable(run_steps), "pass the function itself: check_scan_loop(run_steps).")
    start = (jnp.zeros(3), jnp.ones(3))
    for n_iter in (25, 1, 7):
        step, traces = _counting_step()
        expected_state, expected_values = _reference_loop(step, start, n_iter)
        traces["count"] = 0
        result = call_answer(
            jax.jit(functools.partial(run_steps, step), static_argnums=1),
            start,
            n_iter,
            what="run_steps under jax.jit",
        )
        require(
            traces["count"] == 1,
            f"under jit your loop traced step {traces['count']} times for n_iter={n_iter}: a Python "
            "loop is unrolled at trace time. Use jax.lax.scan(body, state, length=n_iter).",
        )
        state, values = _loop_output(result, n_iter)
        require(
            close(values, expected_values, rtol=1e-5),
            f"for n_iter={n_iter} the values differ from the Python loop's: record the value each "
            "step returns, n_iter of them (scan's length is n_iter, not a fixed number).",
        )
        require(
            close(tuple(state), expected_state, rtol=1e-5),
            f"for n_iter={n_iter} the final state differs from the Python loop's: return scan's final carry.",
        )
