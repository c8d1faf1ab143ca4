"""Checker for the profiling chapter's exercise on donating the state, and the two steps it donates."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp

from ...checks import (
    call_answer,
    close,
    describe,
    exercise_checker,
    require,
    require_accepts,
)
from ...memory import memory_figures


def sgd_step(params, batch):
    """One gradient step of a linear least-squares model: `params` {"w": (d,), "b": ()}, `batch` (x, y)."""
    x, y = batch

    def loss(params):
        return jnp.mean((x @ params["w"] + params["b"] - y) ** 2)

    grads = jax.grad(loss)(params)
    return jax.tree.map(lambda p, g: p - 0.1 * g, params, grads)


def ema_step(average, sample):
    """An exponential moving average and the sample's deviation from it: the state, the sample and
    both outputs have the same shape, so either argument's buffer could hold either output."""
    return 0.9 * average + 0.1 * sample, sample - average


def _sgd_arguments():
    params = {"w": jnp.linspace(-1.0, 1.0, 1_000), "b": jnp.zeros(())}
    x = jnp.linspace(0.0, 1.0, 64 * 1_000).reshape(64, 1_000)
    return params, (x, jnp.ones(64))


def _ema_arguments():
    return jnp.zeros(500), jnp.linspace(0.0, 1.0, 500)


_DONATION_CASES = [
    ("sgd_step(params, (x, y))", sgd_step, _sgd_arguments),
    (
        "ema_step(average, sample), where the arguments and the outputs all have shape (500,)",
        ema_step,
        _ema_arguments,
    ),
]


_BY_NAME_HINT = (
    "make_donating_step donates an argument by its name (donate_argnames), and {step} has no "
    "argument of that name: the steps name their state differently (params in sgd_step, average "
    "in ema_step), so donate it by position, donate_argnums=0"
)


def _donated_flags(lowered) -> tuple[list[bool], list[bool]] | None:
    """Whether each leaf of the state and of the batch is donated, as the lowered program records
    it (None when it cannot be read)."""
    try:
        args, _ = lowered.args_info
        state_info, batch_info = args
        return (
            [bool(info.donated) for info in jax.tree.leaves(state_info)],
            [bool(info.donated) for info in jax.tree.leaves(batch_info)],
        )
    except (AttributeError, TypeError, ValueError):
        return None


@exercise_checker(
    hints=(
        "Return jax.jit(step, donate_argnums=...): only a jitted function donates, and the "
        "state is argument 0.",
        "Donate the state alone, donate_argnums=0: donating the batch too deletes data the "
        "caller still needs, and jitting without donation aliases nothing. Do not call step"
        " yourself or change what it returns.",
    )
)
def check_donated_state(make_donating_step: Callable) -> None:
    """Checks `make_donating_step(step)`: `step(state, batch)` jitted with the state donated, so
    that the compiled program writes its results into the old state's buffers (an alias the
    size of the state) and the batch stays usable."""
    require_accepts(make_donating_step, sgd_step, what="make_donating_step")
    made: list[tuple[str, Any]] = []  # (case, what make_donating_step returned)
    for case, step, arguments in _DONATION_CASES:
        jitted = call_answer(
            make_donating_step,
            step,
            what="make_donating_step",
            hints=((ValueError, "donate_argnames", _BY_NAME_HINT.format(step=step.__name__)),),
        )
        require(
            callable(jitted) and hasattr(jitted, "lower"),
            f"make_donating_step should return a jitted function (jax.jit(step, donate_argnums=...)), "
            f"got {describe(jitted)}, which has no .lower: only a jitted function has a compiled "
            "program to donate to (a plain function that calls a jitted one does not). Return "
            "jax.jit(step, donate_argnums=0) itself.",
        )
        for earlier_case, earlier in made:
            require(
                jitted is not earlier,
                f"make_donating_step returned, for {case}, the very function it returned for "
                f"{earlier_case}: is the jitted step kept from one call to the next? Jit the step "
                "each call is given.",
            )
        made.append((case, jitted))
        state, batch = arguments()
        expected = step(state, batch)
        state_bytes = sum(leaf.nbytes for leaf in jax.tree.leaves(state))
        lowered = call_answer(
            lambda s, b, jitted=jitted: jitted.lower(s, b),
            state,
            batch,
            what=f"the jitted {case}",
        )
        require(
            isinstance(lowered, jax.stages.Lowered),
            f"make_donating_step should return a jitted function (jax.jit(step, donate_argnums=...)); "
            f"its .lower(state, batch) gave {describe(lowered)}, not a lowered program.",
        )
        flags = _donated_flags(lowered)
        if flags is not None:
            state_donated, batch_donated = flags
            require(
                not any(batch_donated),
                f"on {case}, you donated the batch (argument 1)"
                + (" as well as the state" if all(state_donated) else ", not the state")
                + ": a call may then delete the batch, whose data the caller still needs. "
                "Donate the state only, donate_argnums=0.",
            )
            require(
                all(state_donated),
                f"on {case}, "
                + (
                    "you jitted the step without donating anything. Nothing is donated"
                    if not any(state_donated)
                    else "only part of the state is donated"
                )
                + ": pass donate_argnums=0, the state, to jax.jit.",
            )
        compiled = call_answer(lowered.compile, what=f"the jitted {case}")
        alias = memory_figures(compiled).alias_bytes
        result = call_answer(jitted, state, batch, what=f"the jitted {case}")
        require(
            not any(leaf.is_deleted() for leaf in jax.tree.leaves(batch)),
            f"on {case}, the batch was deleted by the call: you donated it too, and the caller can no "
            "longer use its data. Donate the state only (argument 0).",
        )
        require(
            alias == state_bytes,
            f"on {case}, the compiled program aliases {alias:,} bytes; the state has {state_bytes:,}. "
            + (
                "Nothing is donated: pass donate_argnums=0, the state, to jax.jit."
                if alias == 0
                else "Donate the whole state, argument 0."
            ),
        )
        require(
            all(leaf.is_deleted() for leaf in jax.tree.leaves(state)),
            f"on {case}, the state was not deleted by the call, so it was not donated at run time.",
        )
        require(
            close(result, expected),
            f"on {case}, the jitted step does not return step(state, batch): donate, but do not change "
            "what the step computes.",
        )
