"""Checker of the PRNG chapter's exercise on a reproducible Monte Carlo estimate."""

from __future__ import annotations

import math
from collections.abc import Callable

import jax
import jax.numpy as jnp
import numpy as np

from ...checks import close, exercise_checker, require, require_array
from .._jaxpr import equations
from ._common import _call, _jaxpr_of, require_key_discipline

TRUE_MEAN = math.exp(0.5)
"""E[exp(Z)] for Z ~ N(0, 1): the mean of a standard lognormal variable."""

CHUNK_CASES = ((16, 500),)
"""(n_chunks, chunk_size) of the typical case; the checker also tries a single chunk and chunks of one draw."""


def _one_block_chunk_means(key: jax.Array, n_chunks: int, chunk_size: int) -> np.ndarray:
    """The common alternative: one (n_chunks, chunk_size) block drawn from the key itself."""
    return np.asarray(jnp.mean(jnp.exp(jax.random.normal(key, (n_chunks, chunk_size))), axis=1))


def _chunk_means_array(
    chunk_means: Callable, key: jax.Array, n_chunks: int, chunk_size: int
) -> np.ndarray:
    means = _call(chunk_means, key, n_chunks, chunk_size, what="chunk_means")
    means = require_array(
        means,
        (n_chunks,),
        what=f"chunk_means(key, {n_chunks}, {chunk_size})",
        expected="one mean per chunk",
    )
    require(
        bool(np.all(np.isfinite(means))),
        f"chunk_means(key, {n_chunks}, {chunk_size}) has NaN or infinite chunk means"
        + (
            ": with chunk_size=1, a division by chunk_size - 1 divides by 0. A mean divides by "
            "chunk_size, as jnp.mean does."
            if chunk_size == 1
            else "."
        ),
    )
    return means


def _require_vmap_over_keys(
    chunk_means: Callable, key: jax.Array, n_chunks: int, chunk_size: int
) -> None:
    """The draws must be one batched draw over (n_chunks,) keys: a program that does not grow
    with the number of chunks."""
    jaxpr = _jaxpr_of(lambda k: chunk_means(k, n_chunks, chunk_size), key, "chunk_means")
    draws = [eqn for eqn in equations(jaxpr) if eqn.primitive.name == "random_bits"]
    require(
        len(draws) == 1,
        f"your program draws {len(draws)} times for {n_chunks} chunks: one draw per chunk is a Python "
        "loop, unrolled. Map one chunk's function over the chunks' keys with jax.vmap: one batched draw.",
    )
    require(
        draws[0].invars[0].aval.shape == (n_chunks,),
        "your program draws from one key at a time (a loop such as lax.map or scan): map over the "
        f"{n_chunks} chunks' keys with jax.vmap, which draws from all of them at once.",
    )


def _require_no_fixed_supply_of_keys(
    chunk_means: Callable, key: jax.Array, n_chunks: int, chunk_size: int
) -> None:
    """Fails when the program splits the key into more keys than there are chunks and keeps the
    first n_chunks: extendable only up to that fixed number, and paying for every key."""
    jaxpr = _jaxpr_of(lambda k: chunk_means(k, n_chunks, chunk_size), key, "chunk_means")
    for eqn in equations(jaxpr):
        if eqn.primitive.name != "random_split":
            continue
        made = math.prod(eqn.params.get("shape", ()))
        require(
            made <= n_chunks,
            f"for {n_chunks} chunks your program splits the key into {made} keys and keeps the "
            f"first {n_chunks}: it extends only up to {made} chunks and makes all {made} keys every "
            "time. Give chunk i the key jax.random.fold_in(key, i), which exists for every i.",
        )


def _require_extendable(
    chunk_means: Callable, key: jax.Array, chunk_size: int, layout: str
) -> None:
    """The first chunks of a longer run must be the chunks of a shorter one."""
    short = _chunk_means_array(chunk_means, key, 3, chunk_size)
    long = _chunk_means_array(chunk_means, key, 8, chunk_size)
    if close(long[:3], short, rtol=1e-5, atol=1e-6):  # equal up to the summation order of a batch
        return
    require(
        not close(long, _one_block_chunk_means(key, 8, chunk_size)),
        f"{layout}, the first 3 chunks of 8 are not the 3 chunks of a shorter run: you drew one "
        "(n_chunks, chunk_size) block from the key, and which numbers land in row i depends on the "
        "block's shape. Give chunk i a key of its own that depends only on key and i: "
        "jax.random.fold_in(key, i).",
    )
    require(
        False,
        f"{layout}, the first 3 chunks of 8 are not the 3 chunks of a shorter run: chunk i's key "
        "depends on n_chunks. jax.random.split(key, n)[i] happens not to with the default layout, "
        "which is no promise; jax.random.fold_in(key, i) depends only on key and i, by definition.",
    )


@exercise_checker(
    hints=(
        "Write the function for one chunk first: given its own key, draw chunk_size standard normals and return the mean of their exp. Then decide how chunk i gets its key, and map the one-chunk function over the chunks with jax.vmap.",
        "Give chunk i the key jax.random.fold_in(key, i): it depends on key and i only, so asking for more chunks leaves the first ones unchanged (split(key, n_chunks)[i] and one (n_chunks, chunk_size) block depend on n_chunks once the generator's layout changes). jax.vmap(one_chunk)(jnp.arange(n_chunks)) draws for all chunks at once; use jnp.mean (the mean of exp(z), not exp of the mean, not the sum).",
    )
)
def check_chunk_means(chunk_means: Callable) -> None:
    """Checks `chunk_means(key, n_chunks, chunk_size)`: one mean of exp(Z) per chunk, by property.

    The chunks must differ, be reproducible from the key and change with it, estimate exp(1/2),
    use no key twice, stay the same when more chunks are asked for (with the default generator
    and with `jax_threefry_partitionable` off), come from one batched draw, and agree under `jit`.
    """
    require(callable(chunk_means), "pass the function itself: check_chunk_means(chunk_means).")
    key = jax.random.key(2024)
    n_chunks, chunk_size = CHUNK_CASES[0]
    means = _chunk_means_array(chunk_means, key, n_chunks, chunk_size)
    require(
        len(np.unique(means)) > 1,
        "every chunk got the same numbers: give each chunk a key of its own, not one shared key.",
    )
    with jax.debug_key_reuse(True):
        again = _chunk_means_array(chunk_means, jax.random.key(2024), n_chunks, chunk_size)
    require(
        np.array_equal(means, again),
        "two calls with the same key gave different results: every random draw must come from the key "
        "(no np.random, no global state).",
    )
    other = _chunk_means_array(chunk_means, jax.random.key(7), n_chunks, chunk_size)
    require(
        not np.array_equal(means, other),
        "a different key gave the same result: the draws must use the key.",
    )
    require(
        not abs(means.mean() / chunk_size - TRUE_MEAN) < 0.2,
        f"your chunk means are about chunk_size = {chunk_size} times exp(1/2): you summed exp(z) "
        "over each chunk. Return the mean of each chunk, jnp.mean, not its sum.",
    )
    standard_error = math.sqrt(math.e * (math.e - 1) / (n_chunks * chunk_size))
    require(
        abs(means.mean() - TRUE_MEAN) < 6 * standard_error,
        f"the mean of your chunk means is {means.mean():.4f}, far from E[exp(Z)] = exp(1/2) = "
        f"{TRUE_MEAN:.4f}: average exp(z) for standard-normal z in each chunk.",
    )
    require_key_discipline(lambda k: chunk_means(k, n_chunks, chunk_size), key, "chunk_means")
    _chunk_means_array(chunk_means, key, 1, 3)  # a single chunk works too
    singles = _chunk_means_array(chunk_means, key, 400, 1)
    require(
        0.4 < float(np.mean(singles < 1.0)) < 0.6,
        f"with chunk_size=1 each chunk mean is one exp(z), below 1 half of the time; yours were below 1 "
        f"{np.mean(singles < 1.0):.0%} of the time: draw chunk_size values per chunk, not a fixed number.",
    )
    _require_extendable(chunk_means, key, chunk_size, "with the default generator")
    with jax.threefry_partitionable(False):
        _require_extendable(chunk_means, key, chunk_size, "with jax_threefry_partitionable off")
    _require_no_fixed_supply_of_keys(chunk_means, key, n_chunks, chunk_size)
    _require_vmap_over_keys(chunk_means, key, n_chunks, chunk_size)
    jitted = _call(
        jax.jit(chunk_means, static_argnums=(1, 2)),
        key,
        n_chunks,
        chunk_size,
        what="chunk_means under jax.jit",
    )
    require(
        close(jitted, means),
        "under jax.jit (sizes static) chunk_means gives other numbers than eagerly.",
    )
