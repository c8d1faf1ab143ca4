"""Checkers for the exercises of the chapter 'Random numbers with explicit PRNG keys'."""

from __future__ import annotations

import math
from typing import Callable

import jax
import jax.numpy as jnp
import numpy as np

from ..checks import exercise_checker, require


def _is_typed_key(value) -> bool:
    return isinstance(value, jax.Array) and jnp.issubdtype(value.dtype, jax.dtypes.prng_key)


def _same(actual, expected, rtol: float = 1e-5, atol: float = 1e-6) -> bool:
    actual = np.asarray(actual)
    return actual.shape == np.shape(expected) and bool(np.allclose(actual, expected, rtol=rtol, atol=atol))


# Exercise 1 ------------------------------------------------------------------------------------

N_CALLS = 6
"""How many times the checker threads a key through the learner's `next_normal`."""


def _thread_key(next_normal: Callable, seed: int) -> list[float]:
    """Calls `key, x = next_normal(key)` N_CALLS times from `key(seed)`; returns the draws."""
    key = jax.random.key(seed)
    draws = []
    for call in range(N_CALLS):
        result = next_normal(key)
        require(
            isinstance(result, tuple) and len(result) == 2,
            f"next_normal must return a pair (new_key, x); call {call + 1} returned {type(result).__name__}.",
        )
        new_key, x = result
        if _is_typed_key(x) and not _is_typed_key(new_key):
            require(False, "the pair is the wrong way round: return (new_key, x), the key first.")
        require(
            _is_typed_key(new_key) and new_key.shape == (),
            "the first element must be one new typed key (shape (), dtype key<fry>), "
            "for example one of the two keys that jax.random.split(key) returns.",
        )
        x = np.asarray(x)
        require(
            x.shape == () and np.issubdtype(x.dtype, np.floating),
            f"x must be one float (shape ()), got dtype {x.dtype} and shape {x.shape}.",
        )
        draws.append(float(x))
        key = new_key
    return draws


@exercise_checker("Exercise 1 (a key that moves on)")
def check_next_normal(next_normal: Callable) -> None:
    """Checks `next_normal(key) -> (new_key, x)` under JAX's key-reuse checker.

    Threading the returned key through several calls must give different, reproducible
    standard-normal draws, and no key may be consumed twice.
    """
    require(callable(next_normal), "pass the function itself: check_next_normal(next_normal).")
    try:
        with jax.debug_key_reuse(True):
            draws = _thread_key(next_normal, seed=0)
            again = _thread_key(next_normal, seed=0)
            other = _thread_key(next_normal, seed=1)
    except jax.errors.KeyReuseError as error:
        first_line = str(error).splitlines()[0]
        require(
            False,
            f"a key was used twice (KeyReuseError: {first_line}). Split first, draw x with one "
            "of the two new keys, and return the other one, which nothing has used yet.",
        )
    require(
        len(set(draws)) == len(draws),
        f"{N_CALLS} calls that thread the key gave repeated values {np.round(draws, 4).tolist()}: "
        "each call must draw from a fresh key.",
    )
    require(draws == again, "the same starting key gave different draws: draw only from the key you are given.")
    require(draws != other, "different starting keys gave the same draws: the draw must come from the key argument.")
    require(
        all(abs(d) < 6 for d in draws),
        f"the draws {np.round(draws, 3).tolist()} do not look standard normal: use jax.random.normal.",
    )


# Exercise 2 ------------------------------------------------------------------------------------

TRUE_MEAN = math.exp(0.5)
"""E[exp(Z)] for Z ~ N(0, 1): the mean of a standard lognormal variable."""


def _reference_chunk_means(key: jax.Array, n_chunks: int, chunk_size: int) -> np.ndarray:
    keys = jax.random.split(key, n_chunks)
    draw = lambda k: jnp.mean(jnp.exp(jax.random.normal(k, (chunk_size,))))
    return np.asarray(jax.vmap(draw)(keys))


def _one_block_chunk_means(key: jax.Array, n_chunks: int, chunk_size: int) -> np.ndarray:
    """The common alternative: one (n_chunks, chunk_size) block drawn from the key itself."""
    return np.asarray(jnp.mean(jnp.exp(jax.random.normal(key, (n_chunks, chunk_size))), axis=1))


@exercise_checker("Exercise 2 (a reproducible Monte Carlo estimate)")
def check_chunk_means(chunk_means: Callable) -> None:
    """Checks `chunk_means(key, n_chunks, chunk_size)`: one mean of exp(Z) per chunk.

    Chunk i must use the i-th key of `jax.random.split(key, n_chunks)`; the result must be
    reproducible, and its mean must estimate exp(1/2).
    """
    require(callable(chunk_means), "pass the function itself: check_chunk_means(chunk_means).")
    key = jax.random.key(2024)
    n_chunks, chunk_size = 16, 500
    means = np.asarray(chunk_means(key, n_chunks, chunk_size))
    require(
        means.shape == (n_chunks,),
        f"chunk_means(key, {n_chunks}, {chunk_size}) must return one mean per chunk, shape "
        f"({n_chunks},); got shape {means.shape}.",
    )
    require(np.all(np.isfinite(means)), "some chunk means are NaN or infinite.")
    require(
        len(np.unique(means)) > 1,
        "every chunk got the same numbers: give each chunk its own key from "
        "jax.random.split(key, n_chunks) and vmap over those keys (in_axes=0), not over one shared key.",
    )
    again = np.asarray(chunk_means(jax.random.key(2024), n_chunks, chunk_size))
    require(
        np.array_equal(means, again),
        "two calls with the same key gave different results: every random draw must come from the key "
        "(no np.random, no global state).",
    )
    other = np.asarray(chunk_means(jax.random.key(7), n_chunks, chunk_size))
    require(not np.array_equal(means, other), "a different key gave the same result: the draws must use the key.")
    standard_error = math.sqrt(math.e * (math.e - 1) / (n_chunks * chunk_size))
    require(
        abs(means.mean() - TRUE_MEAN) < 6 * standard_error,
        f"the mean of your chunk means is {means.mean():.4f}, far from E[exp(Z)] = exp(1/2) = "
        f"{TRUE_MEAN:.4f}: average exp(z) for standard-normal z in each chunk.",
    )
    expected = _reference_chunk_means(key, n_chunks, chunk_size)
    if _same(means, _one_block_chunk_means(key, n_chunks, chunk_size)):
        require(
            False,
            "you drew one (n_chunks, chunk_size) block from the key itself. That is a valid estimate, "
            "but this exercise asks for one key per chunk: keys = jax.random.split(key, n_chunks), "
            "then chunk i draws jax.random.normal(keys[i], (chunk_size,)).",
        )
    require(
        _same(means, expected),
        "a valid estimate, but not the stream the exercise asks for: chunk i must draw "
        "jax.random.normal(keys[i], (chunk_size,)) with keys = jax.random.split(key, n_chunks), "
        "and return jnp.mean(jnp.exp(z)) for it.",
    )


# Exercise 3 ------------------------------------------------------------------------------------


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


@exercise_checker("Exercise 3 (a random walk in lax.scan)")
def check_random_walk(random_walk: Callable) -> None:
    """Checks `random_walk(key, n_steps) -> positions (n_steps,)` against the reference stream.

    Step t adds `jax.random.normal(keys[t])` with `keys = jax.random.split(key, n_steps)`; the
    walk starts at 0, is written with `lax.scan`, and must work under `vmap` over keys.
    """
    require(callable(random_walk), "pass the function itself: check_random_walk(random_walk).")
    key, n_steps = jax.random.key(11), 40
    positions = np.asarray(random_walk(key, n_steps))
    require(
        positions.shape == (n_steps,),
        f"random_walk(key, {n_steps}) must return the {n_steps} positions after each step, shape "
        f"({n_steps},); got shape {positions.shape}.",
    )
    require(
        np.array_equal(positions, np.asarray(random_walk(jax.random.key(11), n_steps))),
        "two calls with the same key gave different walks: draw only from the key.",
    )
    jaxpr = str(jax.make_jaxpr(lambda k: random_walk(k, n_steps))(key))
    require("scan[" in jaxpr, "write the loop with jax.lax.scan (its jaxpr has no scan): the keys are its xs.")
    increments = np.diff(positions, prepend=0.0)
    require(
        not np.allclose(increments, increments[0]),
        "every step moved by the same amount: all steps drew from one key. Feed the step keys "
        "jax.random.split(key, n_steps) to scan as xs, and draw each step from its own key.",
    )
    expected = _reference_walk(key, n_steps)
    if _same(positions, np.concatenate([[0.0], expected[:-1]]), rtol=1e-4, atol=1e-4):
        require(False, "the first entry must be the position after the first step, not the start 0.")
    if _same(positions, _carried_key_walk(key, n_steps), rtol=1e-4, atol=1e-4):
        require(
            False,
            "you carry the key and split it at every step: a correct walk, but a different stream. "
            "Here, split once up front, keys = jax.random.split(key, n_steps), and pass keys as scan's xs.",
        )
    if _same(positions, np.cumsum(np.asarray(jax.random.normal(key, (n_steps,)))), rtol=1e-4, atol=1e-4):
        require(
            False,
            "you drew all the steps at once from the key itself: a different stream. Step t must draw "
            "jax.random.normal(keys[t]) with keys = jax.random.split(key, n_steps).",
        )
    require(
        _same(positions, expected, rtol=1e-4, atol=1e-4),
        "the walk does not match the reference stream: step t adds jax.random.normal(keys[t]) "
        "with keys = jax.random.split(key, n_steps), starting from 0.",
    )
    walker_keys = jax.random.split(jax.random.key(3), 4)
    try:
        walks = np.asarray(jax.vmap(random_walk, in_axes=(0, None))(walker_keys, n_steps))
    except Exception as error:  # the learner's function may not be traceable under vmap
        require(False, f"random_walk fails under jax.vmap over keys ({type(error).__name__}): keep it pure JAX.")
    require(
        all(_same(walks[i], _reference_walk(walker_keys[i], n_steps), rtol=1e-4, atol=1e-4) for i in range(4)),
        "under jax.vmap over 4 keys the walks differ from one call per key: draw only from the key argument.",
    )
