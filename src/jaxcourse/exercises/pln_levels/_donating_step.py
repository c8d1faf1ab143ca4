"""Checker for the PLN levels chapter's exercise on donating the state a step replaces."""

from __future__ import annotations

import warnings
from collections.abc import Callable

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
from ...tracecount import count_compilations

_STATE_NAMES = ("variational", "params", "opt_state")


def _step_problem():
    """A small simulated data set and level 1's starting state for Adam."""
    from ...pln import ADAM, init_variational, level1, simulate

    data = simulate(20, 4, key=jax.random.key(11)).data
    variational = init_variational(data)
    return data, (variational, level1.closed_form_step(data, variational), ADAM.init(variational))


def _reference_steps(data, state, n_steps: int) -> tuple[list[tuple], list[float]]:
    """`n_steps` iterations of level 1's three pieces: the state after each, and the ELBO before each."""
    from ...pln import ADAM, level1

    variational, params, opt_state = state
    states, elbos = [], []
    for _ in range(n_steps):
        loss, grads = level1.loss_and_grad(variational, params, data)
        variational, opt_state = level1.optimizer_step(variational, grads, opt_state, ADAM)
        params = level1.closed_form_step(data, variational)
        states.append((variational, params, opt_state))
        elbos.append(-float(loss))
    return states, elbos


def _copy(tree):
    return jax.tree.map(jnp.copy, tree)


def _step_output(result) -> tuple[tuple, jax.Array]:
    require(
        isinstance(result, (tuple, list)) and len(result) == 4,
        "step should return (variational, params, opt_state, elbo), the new state and the ELBO before "
        f"the step; got {describe(result)}.",
    )
    return tuple(result[:3]), result[3]


def _donates_data(step: Callable, state: tuple, data) -> bool:
    """Whether a jitted `step` marks any array of `data` as donated (read from its lowering)."""
    lower = getattr(step, "lower", None)
    if lower is None:
        return False
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "Some donated buffers were not usable"
        lowered = call_answer(lower, *_copy(state), data, what="step.lower")
    args_info = getattr(lowered, "args_info", None)
    if not (isinstance(args_info, tuple) and len(args_info) == 2 and len(args_info[0]) == 4):
        return False
    return any(getattr(leaf, "donated", False) for leaf in jax.tree.leaves(args_info[0][3]))


@exercise_checker(
    hints=(
        "Write one_step(variational, params, opt_state, data) from level1.loss_and_grad, "
        "level1.optimizer_step (with pln.ADAM) and level1.closed_form_step, returning -loss"
        " as the ELBO; then jit it once with jax.jit(..., donate_argnums=...).",
        "Donate exactly the three state arguments, donate_argnums=(0, 1, 2): the data are "
        "read by every iteration, so donating them (argument 3) deletes them, and donating "
        "only the variational parameters leaves the others' buffers unused. The ELBO is the"
        " one before the update: -loss, not -loss of the new state, and not loss.",
    )
)
def check_donating_step(step: Callable) -> None:
    """`step(variational, params, opt_state, data)` -> `(variational, params, opt_state, elbo)`: one
    level-1 iteration with Adam, jitted once, whose every state input is donated (deleted after
    the call) while `data` stays alive; three chained steps match level 1 and trace once."""
    require(callable(step), "pass the jitted function itself: check_donating_step(step).")
    require(
        hasattr(step, "lower"),
        "step is not a jitted function: it is a plain Python function (one that calls a jitted "
        "function, or jits a new one at every call), so nothing shows which arguments it donates, "
        "and what it does around the jitted call runs in Python at every step. Pass what jax.jit("
        "one_step, donate_argnums=...) returns, made once.",
    )
    data, state = _step_problem()
    expected_states, expected_elbos = _reference_steps(data, _copy(state), 3)
    inputs = _copy(state)
    new_state, elbo = _step_output(call_answer(step, *inputs, data, what="step"))
    if not close(elbo, expected_elbos[0], rtol=1e-4, atol=1e-3):
        try:
            value = float(np.asarray(elbo, dtype=float))
        except (TypeError, ValueError):
            value = None
        require(
            value is not None,
            f"the ELBO should be one number, the ELBO before the update; got {describe(elbo)}.",
        )
        got = (
            f"the ELBO returned by the first step is {value:.4f}, expected {expected_elbos[0]:.4f}"
        )
        require(
            not close(elbo, -expected_elbos[0], rtol=1e-4, atol=1e-3),
            f"{got}: you returned the loss, which is minus the ELBO. Return -loss.",
        )
        require(
            not close(elbo, expected_elbos[1], rtol=1e-4, atol=1e-3),
            f"{got}: that is the ELBO after the update, at the new state. Return minus the loss "
            "that level1.loss_and_grad computes before the update.",
        )
        require(
            False,
            f"{got}: return minus the loss that level1.loss_and_grad computes before the update.",
        )
    require(
        not any(leaf.is_deleted() for leaf in jax.tree.leaves(data))
        and not _donates_data(step, state, data),
        "data is donated: every iteration reads it again, and a donated array is deleted whenever XLA "
        "can reuse its buffer (here none of the results has its shape, so JAX only warned). Donate only "
        "the state the step replaces: donate_argnums=(0, 1, 2).",
    )
    _require_first_state(new_state, expected_states[0], state)
    alive = [
        name
        for name, part in zip(_STATE_NAMES, inputs)
        if not all(leaf.is_deleted() for leaf in jax.tree.leaves(part))
    ]
    require(
        not alive,
        f"after the call, the input {', '.join(alive)} still hold their memory: nothing lets XLA reuse their "
        "buffers for the new state. Jit the step with donate_argnums=(0, 1, 2): the caller never reads "
        "the old state again.",
    )
    state, elbos = new_state, [float(elbo)]
    with count_compilations() as later:
        for _ in range(2):
            state, elbo = _step_output(call_answer(step, *state, data, what="step"))
            elbos.append(float(elbo))
    require(
        later.compiles == 0,
        f"the second and third steps compiled {later.compiles} program(s): jit the step once, outside the "
        "loop, so that every call finds the same cache.",
    )
    require(
        close(np.asarray(elbos), np.asarray(expected_elbos), rtol=1e-4, atol=1e-3),
        f"three steps give ELBOs {np.round(elbos, 3).tolist()}, level 1 gives "
        f"{np.round(expected_elbos, 3).tolist()}: one step is loss_and_grad, optimizer_step, then closed_form_step.",
    )
    require(
        close(state[0].latent_mean, expected_states[-1][0].latent_mean, rtol=1e-4, atol=1e-4),
        "after three steps the latent means differ from level 1's: return the updated variational parameters.",
    )


def _require_moved_as_expected(
    part,
    expected,
    start,
    *,
    tolerance: float,
    unchanged_tolerance: tuple,
    unchanged: str,
    other: str,
) -> None:
    """`part` of the returned state equals level 1's after one step; else the hint says whether it
    was handed back as it came in (`unchanged`) or moved some other way (`other`)."""
    if close(part, expected, rtol=1e-4, atol=tolerance):
        return
    rtol, atol = unchanged_tolerance
    require(not close(part, start, rtol=rtol, atol=atol), unchanged)
    require(False, other)


def _require_first_state(new_state: tuple, expected: tuple, start: tuple) -> None:
    """The state one step returned is level 1's after one step; a part left as it came in, or
    moved by another optimizer, is named."""
    variational, params, opt_state = new_state
    _require_moved_as_expected(
        variational,
        expected[0],
        start[0],
        tolerance=1e-4,
        unchanged_tolerance=(1e-6, 1e-6),
        unchanged="your step returned the variational parameters it was given: return those that "
        "level1.optimizer_step returns.",
        other="after one step your variational parameters differ from level 1's: your step moved "
        "them differently from pln.ADAM (another optimizer, or another learning rate). Update them "
        "with level1.optimizer_step(variational, grads, opt_state, pln.ADAM).",
    )
    _require_moved_as_expected(
        opt_state,
        expected[2],
        start[2],
        tolerance=1e-6,
        unchanged_tolerance=(1e-6, 1e-8),
        unchanged="your step returned the opt_state you were given: Adam's moments and step count "
        "never advance. Return the opt_state that level1.optimizer_step returns.",
        other="after one step your opt_state differs from pln.ADAM's: return the opt_state that "
        "level1.optimizer_step(variational, grads, opt_state, pln.ADAM) returns.",
    )
    _require_moved_as_expected(
        params,
        expected[1],
        start[1],
        tolerance=1e-4,
        unchanged_tolerance=(1e-4, 1e-4),
        unchanged="the params your step returned are those of the state it started from (the "
        "params you were given, or closed_form_step on the old variational parameters): B and "
        "Sigma must follow the new variational parameters. Call closed_form_step(data, "
        "variational) after optimizer_step.",
        other="after one step your params differ from level 1's: recompute them with "
        "level1.closed_form_step(data, variational) on the new variational parameters.",
    )
