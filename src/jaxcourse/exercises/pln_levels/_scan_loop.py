"""Checker for the PLN levels chapter's exercise on a Python loop moved into scan."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp

from ...checks import (
    AnswerRaised,
    CheckFailed,
    call_answer,
    close,
    exercise_checker,
    require,
    shorten,
)


def _reference_loop(step, state, n_iter):
    values = []
    for _ in range(n_iter):
        state, value = step(state)
        values.append(value)
    return state, jnp.stack(values)


def _counting_step(vector_value: bool = False) -> tuple[Callable, dict]:
    """A small momentum step on a pair of arrays; its value is a float, or with `vector_value`
    the vector of the three squared distances."""
    traces = {"count": 0}

    def step(state):
        traces["count"] += 1  # counts traces under jit, calls when eager
        mean, velocity = state
        velocity = 0.9 * velocity - 0.1 * (mean - 1.0)
        squared = (mean - 1.0) ** 2
        return (mean + velocity, velocity), squared if vector_value else jnp.sum(squared)

    return step, traces


_STEP_AS_BODY = (
    TypeError,
    "positional argument but 2 were given",
    "you passed step itself as scan's body: scan calls its body with two arguments, body(carry, x),"
    " and step takes one. Wrap it: lambda carry, _: step(carry).",
)


def _is_state(value, start) -> bool:
    return jax.tree.structure(value) == jax.tree.structure(start)  # type: ignore[operator]  # jaxlib ships no stub for PyTreeDef


def _loop_output(result, n_iter: int, start, value_shape: tuple = ()):
    require(
        isinstance(result, tuple) and len(result) == 2,
        "run_steps must return a pair (final_state, stacked_values), as scan does; got "
        f"{type(result).__name__}"
        + (f" of length {len(result)}" if isinstance(result, tuple) else "")
        + ".",
    )
    state, values = result
    require(
        _is_state(state, start) or not _is_state(values, start),
        "you returned (stacked_values, final_state): the pair is swapped. Return scan's result as "
        "it is, (final_state, stacked_values).",
    )
    require(
        not _is_state(values, start),
        "the second output has the state's structure: you stacked the states the loop went "
        "through, not the values step returns. The body returns (new_state, value) as step does.",
    )
    expected_shape = (n_iter, *value_shape)
    if jnp.ndim(values) == len(expected_shape):
        require(
            jnp.shape(values)[1:] != value_shape or jnp.shape(values) == expected_shape,
            f"for n_iter={n_iter} you returned {jnp.shape(values)[0]} values: scan's length must be "
            "n_iter, not a fixed number.",
        )
    require(
        jnp.shape(values) == expected_shape,
        f"the stacked values should have shape {expected_shape}, got {jnp.shape(values)}: "
        "return the per-step value as scan's second output.",
    )
    return state, values


def _run(run_steps: Callable, step: Callable, start, n_iter: int):
    return call_answer(
        jax.jit(functools.partial(run_steps, step), static_argnums=1),
        start,
        n_iter,
        what="run_steps under jax.jit",
        hints=(_STEP_AS_BODY,),
    )


@exercise_checker(
    hints=(
        "jax.lax.scan(body, init, xs=None, length=n) calls body(carry, x) n times and "
        "stacks what body returns second: the loop's state is scan's carry.",
        "The body ignores its second argument and returns step(carry) as it is: (new_state,"
        " value). Pass length=n_iter (not a fixed number, and not n_iter - 1), and return "
        "scan's result as it is: the final carry, then the stacked values.",
    )
)
def check_scan_loop(run_steps: Callable) -> None:
    """`run_steps(step, state, n_iter)` must return `(final_state, stacked_values)` like the
    Python loop, for several `n_iter` (1 included) and for a value that is a vector, tracing
    `step` once under jit."""
    require(callable(run_steps), "pass the function itself: check_scan_loop(run_steps).")
    start = (jnp.zeros(3), jnp.ones(3))
    for n_iter in (25, 1, 7):
        step, traces = _counting_step()
        expected_state, expected_values = _reference_loop(step, start, n_iter)
        traces["count"] = 0
        result = _run(run_steps, step, start, n_iter)
        require(
            traces["count"] != n_iter or n_iter == 1,
            f"under jit your loop traced step {traces['count']} times for n_iter={n_iter}: a Python "
            "loop is unrolled at trace time. Use jax.lax.scan(body, state, length=n_iter).",
        )
        require(
            traces["count"] == 1,
            f"under jit your run_steps traced step {traces['count']} times for n_iter={n_iter}, "
            "neither once nor n_iter times: it calls step outside scan's body, or more than once in "
            "it. Call it exactly once, inside the body: scan traces the body once.",
        )
        state, values = _loop_output(result, n_iter, start)
        if not close(values, expected_values, rtol=1e-5):
            require(
                n_iter == 1 or not close(values, expected_values[::-1], rtol=1e-5),
                f"for n_iter={n_iter} your values are the Python loop's in reverse order, last step "
                "first: scan with reverse=True stores the first step's value last. Leave reverse "
                "False, and flip nothing.",
            )
            require(
                False,
                f"for n_iter={n_iter} the values differ from the Python loop's: record the value each "
                "step returns, n_iter of them (scan's length is n_iter, not a fixed number).",
            )
        require(
            close(tuple(state), expected_state, rtol=1e-5),
            f"for n_iter={n_iter} the final state differs from the Python loop's: return scan's final carry.",
        )
    _require_vector_values(run_steps, start)


def _require_vector_values(run_steps: Callable, start, n_iter: int = 7) -> None:
    """A step whose value is a vector is stacked too: the answer assumes nothing of the value."""
    step, _ = _counting_step(vector_value=True)
    expected_state, expected_values = _reference_loop(step, start, n_iter)
    assumes = (
        "with a step whose value is a vector of 3 numbers, your run_steps {did}: it assumes one "
        "float per step. The value is whatever step returns; let scan stack it."
    )
    try:
        result = _run(run_steps, step, start, n_iter)
    except (CheckFailed, AnswerRaised) as error:
        raise CheckFailed(assumes.format(did=f"failed ({shorten(str(error), 200)})")) from error
    pair: tuple[Any, Any] = (
        result if isinstance(result, tuple) and len(result) == 2 else (None, None)
    )
    state, values = pair
    require(
        jnp.shape(values) == (n_iter, 3),
        assumes.format(did=f"returned values of shape {jnp.shape(values)}, not {(n_iter, 3)}"),
    )
    require(
        jnp.asarray(values).dtype == expected_values.dtype
        and close(values, expected_values, rtol=1e-5)
        and close(tuple(state), expected_state, rtol=1e-5),
        assumes.format(did="returned other values than the Python loop"),
    )
