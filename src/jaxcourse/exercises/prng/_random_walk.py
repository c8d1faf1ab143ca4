"""Checker of the PRNG chapter's exercise on a random walk in lax.scan."""

from __future__ import annotations

from collections.abc import Callable

import jax
import numpy as np

from ...checks import close, exercise_checker, require, require_array
from .._jaxpr import equations, inner_jaxprs, primitive_names
from ._common import _call, _jaxpr_of, require_key_discipline

WALK_LENGTHS = (40, 1)
"""Walk lengths the checker tries: a typical one, and a single step."""


def _reference_walk(key: jax.Array, n_steps: int) -> np.ndarray:
    steps = np.asarray(jax.vmap(jax.random.normal)(jax.random.split(key, n_steps)))
    return np.cumsum(steps, dtype=np.float64)


def _carried_key_walk(key: jax.Array, n_steps: int) -> np.ndarray:
    """The other common pattern: the key rides in the carry and is split at every step."""
    position, positions = 0.0, []
    for _ in range(n_steps):
        key, subkey = jax.random.split(key)
        position += float(jax.random.normal(subkey))
        positions.append(position)
    return np.asarray(positions)


def _walk_positions(random_walk: Callable, key: jax.Array, n_steps: int) -> np.ndarray:
    result = _call(random_walk, key, n_steps, what="random_walk")
    require(
        not (isinstance(result, tuple) and len(result) == 2),
        "random_walk returned a pair, probably scan's (final carry, positions): return only the "
        "positions, scan's second output.",
    )
    return require_array(
        result,
        (n_steps,),
        what=f"random_walk(key, {n_steps})",
        expected="the position after each step",
    )


def _require_reference_stream(positions: np.ndarray, key: jax.Array, n_steps: int) -> None:
    expected = _reference_walk(key, n_steps)
    if close(positions, np.concatenate([[0.0], expected[:-1]]), rtol=1e-4, atol=1e-4):
        require(
            False, "the first entry must be the position after the first step, not the start 0."
        )
    if close(positions, _carried_key_walk(key, n_steps), rtol=1e-4, atol=1e-4):
        require(
            False,
            "you carry the key and split it at every step: a correct walk, but a different stream. "
            "Here, split once up front, keys = jax.random.split(key, n_steps), and pass keys as scan's xs.",
        )
    if close(
        positions, np.cumsum(np.asarray(jax.random.normal(key, (n_steps,)))), rtol=1e-4, atol=1e-4
    ):
        require(
            False,
            "you drew all the steps at once from the key itself: a different stream. Step t must draw "
            "jax.random.normal(keys[t]) with keys = jax.random.split(key, n_steps).",
        )
    keys = jax.random.split(key, n_steps)
    longer = jax.random.split(key, n_steps + 1)
    candidates = [
        (
            np.asarray(jax.vmap(jax.random.normal)(keys)),
            "you returned the steps, not the positions: entry t is the position after step t, the "
            "running sum of the steps (scan's carry, returned as its y at each step).",
        ),
        (
            np.cumsum(np.asarray(jax.vmap(jax.random.normal)(longer[1:]))),
            "you split the key into n_steps + 1 keys (and skipped the first): the reference splits "
            "it into exactly n_steps, keys = jax.random.split(key, n_steps).",
        ),
        (
            np.cumsum(np.asarray(jax.vmap(jax.random.normal)(longer[:-1]))),
            "you split the key into n_steps + 1 keys: the reference splits it into exactly n_steps, "
            "keys = jax.random.split(key, n_steps).",
        ),
        (
            np.cumsum(np.asarray(jax.vmap(jax.random.uniform)(keys))),
            "your steps are uniform draws (jax.random.uniform); a Gaussian walk adds "
            "jax.random.normal(keys[t]).",
        ),
    ]
    if close(positions, expected, rtol=1e-4, atol=1e-4):
        return
    # checked only for a walk off the reference: with the default layout, split(key, n + 1)[:n]
    # happens to be split(key, n)
    for candidate, hint in candidates:
        require(not close(positions, candidate, rtol=1e-4, atol=1e-4), hint)
    require(
        close(positions, expected, rtol=1e-4, atol=1e-4),
        f"for {n_steps} step(s) the walk does not match the reference stream: step t adds "
        "jax.random.normal(keys[t]) with keys = jax.random.split(key, n_steps), starting from 0.",
    )


@exercise_checker(
    hints=(
        "Make all the step keys up front with one split, and let jax.lax.scan walk over them: the carry is the current position, and each step receives its own key as scan's x.",
        "keys = jax.random.split(key, n_steps) (exactly n_steps keys); the step function is step(position, step_key) -> (position + jax.random.normal(step_key), the same new position); start the carry at 0.0 and return only scan's second output, the (n_steps,) positions after each step, without the start. No key in the carry, no fold_in, no cumsum instead of scan.",
    )
)
def check_random_walk(random_walk: Callable) -> None:
    """Checks `random_walk(key, n_steps) -> positions (n_steps,)` against the reference stream.

    Step t adds `jax.random.normal(keys[t])` with `keys = jax.random.split(key, n_steps)`; the
    walk starts at 0, is written with `lax.scan`, and must work under `jit` and under `vmap`
    over keys.
    """
    require(callable(random_walk), "pass the function itself: check_random_walk(random_walk).")
    key, n_steps = jax.random.key(11), WALK_LENGTHS[0]
    positions = _walk_positions(random_walk, key, n_steps)
    with jax.debug_key_reuse(True):
        again = _walk_positions(random_walk, jax.random.key(11), n_steps)
    require(
        np.array_equal(positions, again),
        "two calls with the same key gave different walks: draw only from the key.",
    )
    jaxpr = _jaxpr_of(lambda k: random_walk(k, n_steps), key, "random_walk")
    require(
        "scan" in primitive_names(jaxpr),
        "write the loop with jax.lax.scan (its jaxpr has no scan): the keys are its xs.",
    )
    increments = np.diff(positions, prepend=0.0)
    require(
        not np.allclose(increments, increments[0]),
        "every step moved by the same amount: all steps drew from one key. Feed the step keys "
        "jax.random.split(key, n_steps) to scan as xs, and draw each step from its own key.",
    )
    require_key_discipline(lambda k: random_walk(k, n_steps), key, "random_walk")
    for length in WALK_LENGTHS:
        _require_reference_stream(_walk_positions(random_walk, key, length), key, length)
    scans = [eqn for eqn in equations(jaxpr) if eqn.primitive.name == "scan"]
    require(
        any("random_bits" in primitive_names(body) for eqn in scans for body in inner_jaxprs(eqn)),
        "you drew every step before the scan, and the scan only adds them up: the keys never "
        "reach it. Pass the step keys as scan's xs and draw inside the step function, "
        "jax.random.normal(step_key), as a step that depends on the position would have to.",
    )
    with jax.threefry_partitionable(False):
        require(
            close(
                _walk_positions(random_walk, key, n_steps),
                _reference_walk(key, n_steps),
                rtol=1e-4,
                atol=1e-4,
            ),
            "with jax_threefry_partitionable off, your walk leaves the reference stream: its step "
            "keys are not jax.random.split(key, n_steps). jax.random.fold_in(key, t) gives the same "
            "keys only with the default layout, a detail that is no promise; split the key.",
        )
    jitted = _call(
        jax.jit(random_walk, static_argnums=1), key, n_steps, what="random_walk under jax.jit"
    )
    require(
        close(jitted, positions, rtol=1e-4, atol=1e-4),
        "under jax.jit (n_steps static) the walk differs from the eager one.",
    )
    walker_keys = jax.random.split(jax.random.key(3), 4)
    walks = np.asarray(
        _call(
            jax.vmap(random_walk, in_axes=(0, None)),
            walker_keys,
            n_steps,
            what="random_walk under jax.vmap over keys",
        )
    )
    require(
        all(
            close(walks[i], _reference_walk(walker_keys[i], n_steps), rtol=1e-4, atol=1e-4)
            for i in range(4)
        ),
        "under jax.vmap over 4 keys the walks differ from one call per key: draw only from the key argument.",
    )
