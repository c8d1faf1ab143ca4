"""The work of one iteration of each PLN level, as XLA counts it: FLOPs and bytes for the roofline."""

from __future__ import annotations

from functools import partial

import jax
import jax.numpy as jnp
import optax

from .. import hlo
from ..roofline import Cost, cost_of, loop_body_cost, loop_body_program
from ._algorithm import ADAM, init_variational, update_step
from ._data import PLNData
from ._model import closed_form_params
from .convergence import DEFAULT_TOL, run_loop
from .profiled import prepare

SHARED_ITERATION_LEVELS = (0, 1, 2, 3, 4)
"""The levels that run one iteration, `update_step` (a gradient step, then the closed-form B
and Sigma), and so have one cost per iteration; they differ in how they call it."""


def iteration_cost(
    level: int, data: PLNData, *, optimizer: optax.GradientTransformation | None = None
) -> Cost:
    """The `Cost` (FLOPs, transcendentals, bytes) of one iteration of `level` on `data`.

    Levels 0-4: `update_step` compiled on its own, the iteration that level 0 runs op by op,
    level 1 as three jitted calls and levels 2-4 inside a `scan`. Level 5: one pass of the
    body of its `while_loop` (`convergence.run_loop`: an evaluation of the profiled ELBO, the
    tolerance test and the optimizer's update), taken out of the loop by
    `roofline.loop_body_cost`.

    Args:
        level: 0 to 5. Level 6 is refused: its iteration is level 5's, run inside `shard_map`
            with a `psum`, whose body cannot be compiled on its own; ask for level 5.
        data: the data the fit runs on.
        optimizer: the level's optimizer; its default (`ADAM`, `level5.RPROP`) when None.

    Raises:
        ValueError: a level other than 0-5.
    """
    if level == 6:
        raise ValueError(
            "level 6 runs level 5's iteration on each device inside shard_map: use level 5."
        )
    if level in SHARED_ITERATION_LEVELS:
        return _shared_iteration_cost(data, ADAM if optimizer is None else optimizer)
    if level == 5:
        from .level5 import RPROP

        return _profiled_iteration_cost(data, RPROP if optimizer is None else optimizer)
    raise ValueError(f"level must be one of 0-5, got {level!r}.")


_update_step = jax.jit(update_step, static_argnames="optimizer")
"""`update_step` compiled once per shape and optimizer (a new `jax.jit` per call would compile anew)."""


def _shared_iteration_cost(data: PLNData, optimizer) -> Cost:
    variational = init_variational(data)
    params = closed_form_params(data, variational)
    return cost_of(
        _update_step, variational, params, optimizer.init(variational), data, optimizer=optimizer
    )


def _profiled_loop(data: PLNData, optimizer, monitor_every: int = 1):
    """Level 5's loop as `roofline.loop_body_cost` takes it: the function and its arguments.
    With `monitor_every` = 1 the body computes everything at every iteration; with more, it is
    the iteration a sparse fit runs between two monitored ones: the ELBO's value and the
    decrement sit in a `lax.cond` that it skips."""
    loop = partial(run_loop, n_iter=2, optimizer=optimizer, monitor_every=monitor_every)
    tol = jnp.asarray(DEFAULT_TOL, data.counts.dtype)
    return loop, prepare(data), init_variational(data), tol


def _profiled_iteration_cost(data: PLNData, optimizer) -> Cost:
    return loop_body_cost(*_profiled_loop(data, optimizer))


def iteration_passes(
    data: PLNData,
    *,
    optimizer: optax.GradientTransformation | None = None,
    monitor_every: int = 1,
) -> list[hlo.Pass]:
    """The passes of one level-5 iteration on `data`, in program order (`hlo.Pass`): the body of
    its `while_loop` compiled on its own (`roofline.loop_body_program`), instruction by
    instruction, with the bytes each reads and writes and how many `(n, p)` arrays. Their bytes
    add up to about the iteration's `Cost.bytes_accessed` (XLA counts a few scalars otherwise).

    Args:
        data: the data the fit runs on; its counts' shape is the `(n, p)` counted.
        optimizer: level 5's optimizer; `level5.RPROP` when None.
        monitor_every: 1 (the default), an iteration that computes the ELBO's value and the
            stopping rule's decrement, as `iteration_cost` counts it; more (level 5's default
            is `convergence.DEFAULT_MONITOR_EVERY`), the iterations between two such ones,
            which skip them (the `lax.cond` that holds them counts as reading its operands).
    """
    if optimizer is None:
        from .level5 import RPROP

        optimizer = RPROP
    program = loop_body_program(*_profiled_loop(data, optimizer, monitor_every))
    return hlo.passes(program, data.counts.shape)
