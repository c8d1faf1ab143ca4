"""Checker for the pytrees chapter's exercise on what goes in a TrainState's aux data."""

from __future__ import annotations

import jax
import jax.numpy as jnp

from ...checks import call_answer, close, exercise_checker, require, require_registered_pytree
from ._common import _require_round_trip, require_hashable_structure

SCHEDULES = ("constant", "decay")
"""The two values of TrainState's static field; each compiles its own program."""


def _train_state_leaves(state) -> list:
    """The leaves of a TrainState, after the checks that name a misplaced field."""
    leaves = require_registered_pytree(
        state,
        "JAX sees the whole TrainState as one leaf: register the class with "
        "@jax.tree_util.register_pytree_node_class and write tree_flatten/tree_unflatten.",
    )
    require(
        not any(isinstance(leaf, str) for leaf in leaves),
        "the schedule (a string) is among the children, and jit rejects a string leaf. It decides "
        "which program is built (the Python if in rate()): put it in the aux data.",
    )
    require(
        any(isinstance(leaf, jax.Array) and leaf.shape == state.params.shape for leaf in leaves),
        "params is not among the children: an array in the aux data is compared with == at every "
        "call, which raises on the second call with new (equal) arrays. Arrays are children.",
    )
    return leaves


def _require_scan_over_steps(cls, schedule: str) -> None:
    """Three `apply` steps in a `lax.scan`, under jit, give the hand-computed parameters."""
    learning_rate, grads = 0.1, jnp.ones((3, 2))
    start = cls(jnp.zeros(2), 0, learning_rate, schedule)
    run = jax.jit(
        lambda state, grads: jax.lax.scan(lambda s, g: (s.apply(g), None), state, grads)[0]
    )
    try:
        final = run(start, grads)
    except TypeError as error:
        require(
            "carry" not in str(error) or "metadata" not in str(error),
            "lax.scan rejects the state: the step count is in the aux data, so the carry's "
            "structure changes at every iteration. A counter that changes inside a compiled loop "
            "is data: make step a child.",
        )
        raise
    rates = [learning_rate if schedule == "constant" else learning_rate / (1 + k) for k in range(3)]
    require(
        close(final.params, -sum(rates) * jnp.ones(2)) and close(final.step, 3),
        f"three steps of apply with the '{schedule}' schedule, in a lax.scan, should give params "
        f"{-sum(rates):.4f} and step 3; got {final.params} and {final.step}. Restore every field in "
        "tree_unflatten, each from where tree_flatten put it.",
    )


def _traces_for(cls, states: list) -> int:
    """How often a jitted loss traces when called with each of `states` in turn."""
    traces = []

    @jax.jit
    def loss(state):
        traces.append(None)  # runs once per trace
        return jnp.sum(state.params**2) * state.rate()

    for state in states:
        loss(state)
    return len(traces)


def _require_one_trace_per_schedule(cls) -> None:
    params = jnp.array([1.0, 2.0])
    try:
        same_arrays = _traces_for(
            cls, [cls(jnp.array([1.0, 2.0]), 0, 0.1, "decay") for _ in range(2)]
        )
    except ValueError as error:
        require(
            "metadata" not in str(error),
            "the second call with new, equal arrays raised: an array sits in the aux data, and "
            "comparing two arrays with == has no single truth value. Arrays are children.",
        )
        raise
    require(
        same_arrays == 1,
        f"two calls with equal new arrays traced {same_arrays} times: an array "
        "in the aux data is a new cache key every time. Arrays are children.",
    )
    sweep = _traces_for(cls, [cls(params, 0, rate, "decay") for rate in (0.1, 0.2, 0.3)])
    require(
        sweep == 1,
        f"three learning rates traced the loss {sweep} times: the learning rate is in the aux data, "
        "so every new value compiles again. A number the program computes with is a child.",
    )
    steps = _traces_for(cls, [cls(params, step, 0.1, "decay") for step in (0, 1, 2)])
    require(
        steps == 1,
        f"three step counts traced the loss {steps} times: the step is in the aux data. Make it a child.",
    )
    schedules = _traces_for(
        cls, [cls(params, 0, 0.1, schedule) for schedule in (*SCHEDULES, *SCHEDULES)]
    )
    require(
        schedules == 2,
        f"two schedules, each used twice, traced the loss {schedules} times; expected 2, one program "
        "per schedule: the schedule belongs in the aux data.",
    )


@exercise_checker(
    hints=(
        "For each field, ask: does a new value only change the numbers computed (a child), or "
        "does it change which program is built, like the Python if in rate() (aux data)? "
        "Strings cannot be children, and arrays cannot be aux data.",
        "Three fields are children: params (an array), step (it changes inside a lax.scan, "
        "whose carry must keep its structure) and learning_rate (swept: in the aux data every "
        "new value compiles again). Only the schedule is aux data, in a tuple. tree_unflatten "
        "must unpack the children in the order tree_flatten wrote them and take the schedule "
        "from the aux data.",
    )
)
def check_train_state(train_state_cls) -> None:
    """Checks `TrainState(params, step, learning_rate, schedule)` registered as a pytree.

    `params`, `step` and `learning_rate` must be children (new values neither fail nor
    recompile, and `step` may change inside a `lax.scan`); `schedule` must be hashable aux
    data, restored by `tree_unflatten` for each of its values.
    """
    require(
        isinstance(train_state_cls, type), "pass the class itself: check_train_state(TrainState)."
    )
    state = call_answer(
        train_state_cls,
        jnp.array([1.0, 2.0]),
        0,
        0.1,
        "decay",
        what="TrainState(params, step, learning_rate, schedule)",
    )
    leaves = _train_state_leaves(state)
    require_hashable_structure(state)
    for schedule in SCHEDULES:
        fields = {
            "params": jnp.array([1.0, 2.0]),
            "step": 4,
            "learning_rate": 0.25,
            "schedule": schedule,
        }
        _require_round_trip(train_state_cls(**fields), fields)
    _require_one_trace_per_schedule(train_state_cls)
    for schedule in SCHEDULES:
        _require_scan_over_steps(train_state_cls, schedule)
    require(
        len(leaves) == 3,
        f"tree_flatten gave {len(leaves)} children; expected 3: params, step and learning_rate. "
        "Only the schedule, which picks the program, is aux data.",
    )
