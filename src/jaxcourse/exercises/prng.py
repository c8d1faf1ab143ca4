"""Checkers for the exercises of the chapter 'Random numbers with explicit PRNG keys'."""

from __future__ import annotations

import math
from collections.abc import Callable

import jax
import jax.numpy as jnp
import numpy as np
from scipy import stats

from ..checks import call_answer, close, exercise_checker, require, require_array
from ._jaxpr import equations, primitive_names, traced_program, uses_of

DRAWS = ("random_bits", "random_split")
"""The primitives that consume a key: a draw, or a split into new keys."""


def _is_typed_key(value) -> bool:
    return isinstance(value, jax.Array) and jnp.issubdtype(value.dtype, jax.dtypes.prng_key)


def _jaxpr_of(fn: Callable, key: jax.Array, what: str):
    """The jaxpr of `fn(key)`; a function JAX cannot trace gets a hint, not a crash."""
    return traced_program(fn, key, what=f"{what} (traced by jax.make_jaxpr)", hints=KEY_REUSE_HINTS)


def require_key_discipline(fn: Callable, key: jax.Array, what: str) -> None:
    """Fails unless `fn(key)` uses its key the course's way: once, by one draw or one split, or
    only by `fold_in` with different integers; never through its raw data."""
    jaxpr = _jaxpr_of(fn, key, what).jaxpr
    uses = uses_of(jaxpr, jaxpr.invars[0])
    require(
        "random_unwrap" not in uses,
        f"{what} reads the key's raw data (jax.random.key_data): arithmetic on key data makes keys "
        "that may collide with other keys' streams. Derive new keys with jax.random.split or fold_in.",
    )
    consumed = sum(use in DRAWS for use in uses)
    require(
        not ("random_fold_in" in uses and consumed),
        f"{what} both folds an integer into the key (fold_in) and draws from or splits the same key. "
        "A key you fold into is a base key: derive keys from it with fold_in only, or split it once, "
        "never both.",
    )
    require(
        consumed <= 1,
        f"{what} uses its key {consumed} times (draws or splits): each key is used once. Split it "
        "into as many keys as you need first.",
    )


KEY_REUSE_HINTS = (
    (
        jax.errors.KeyReuseError,
        "scan body",
        "the scan body draws from a key it closes over, so every step reuses that one key. Feed the "
        "step keys jax.random.split(key, n_steps) to scan as its xs, and draw each step from its own key.",
    ),
    (
        jax.errors.KeyReuseError,
        "",
        "a key was used twice (the key-reuse checker caught it). Split first, draw with one of the "
        "new keys, and pass on a key that nothing has used yet.",
    ),
)
"""What `call_answer` says when `jax.debug_key_reuse(True)` catches a key used twice."""


def _call(fn: Callable, *args, what: str):
    """Calls the learner's `fn(*args)` through `call_answer`, with the key-reuse hints."""
    return call_answer(fn, *args, what=what, hints=KEY_REUSE_HINTS)


# Exercise 1 ------------------------------------------------------------------------------------

N_CALLS = 6
"""How many times the checker threads a key through the learner's `next_normal`."""

N_DRAWS = 8_000
"""How many draws (one per key, under jit and vmap) the checker tests for a standard normal shape."""


def _checked_pair(result, call: int) -> tuple[jax.Array, float]:
    """The (new_key, x) that one call returned, after checking its structure."""
    require(
        isinstance(result, tuple) and len(result) == 2,
        f"next_normal must return a pair (new_key, x); call {call} returned {type(result).__name__}"
        + (f" of length {len(result)}" if isinstance(result, tuple) else "")
        + ".",
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
    return new_key, float(x)


def _thread_key(next_normal: Callable, seed: int) -> list[float]:
    """Calls `key, x = next_normal(key)` N_CALLS times from `key(seed)`; returns the draws."""
    key = jax.random.key(seed)
    draws = []
    for call in range(1, N_CALLS + 1):
        key, x = _checked_pair(_call(next_normal, key, what="next_normal"), call)
        draws.append(x)
    return draws


def _require_standard_normal(draws: np.ndarray, how: str) -> None:
    """Fails with a hint naming the moment that is off, unless `draws` look like N(0, 1)."""
    mean, variance = draws.mean(), draws.var()
    kurtosis = stats.kurtosis(draws, fisher=False)
    require(abs(mean) < 0.1, f"{how}, the draws have mean {mean:.3f}, not 0: draw from N(0, 1).")
    require(
        abs(variance - 1) < 0.1,
        f"{how}, the draws have variance {variance:.3f}, not 1: draw with jax.random.normal and do "
        "not rescale them.",
    )
    require(
        abs(kurtosis - 3) < 0.4,
        f"{how}, the draws have kurtosis {kurtosis:.2f}; a normal's is 3 (a uniform's is 1.8): the "
        "mean and variance can be right while the shape is wrong. Use jax.random.normal.",
    )
    statistic = stats.kstest(draws, "norm").statistic
    require(
        statistic < 0.035,
        f"{how}, the draws are not standard normal (Kolmogorov-Smirnov distance {statistic:.3f} "
        "from N(0, 1)): use jax.random.normal.",
    )


def _many_draws(next_normal: Callable) -> np.ndarray:
    """N_DRAWS values of x, one per key, from `next_normal` under jit and vmap."""
    keys = jax.random.split(jax.random.key(123), N_DRAWS)
    draws = _call(
        jax.jit(jax.vmap(lambda key: next_normal(key)[1])),
        keys,
        what="next_normal under jit and vmap",
    )
    return np.asarray(draws, np.float64)


@exercise_checker("Exercise 1 (a key that moves on)")
def check_next_normal(next_normal: Callable) -> None:
    """Checks `next_normal(key) -> (new_key, x)` under JAX's key-reuse checker and the course's rules.

    Threading the returned key through several calls must give different, reproducible
    draws, no key may be consumed twice (nor folded into and drawn from), the same numbers
    must come out under `jit`, and many draws must look standard normal.
    """
    require(callable(next_normal), "pass the function itself: check_next_normal(next_normal).")
    _checked_pair(_call(next_normal, jax.random.key(0), what="next_normal"), call=1)
    require_key_discipline(next_normal, jax.random.key(0), "next_normal")
    with jax.debug_key_reuse(True):
        draws = _thread_key(next_normal, seed=0)
        again = _thread_key(next_normal, seed=0)
        other = _thread_key(next_normal, seed=1)
    require(
        len(set(draws)) == len(draws),
        f"{N_CALLS} calls that thread the key gave repeated values {np.round(draws, 4).tolist()}: "
        "each call must draw from a fresh key.",
    )
    require(
        draws == again,
        "the same starting key gave different draws: draw only from the key you are given.",
    )
    require(
        draws != other,
        "different starting keys gave the same draws: the draw must come from the key argument.",
    )
    eager_key, eager_x = _call(next_normal, jax.random.key(5), what="next_normal")
    jitted_key, jitted_x = _call(
        jax.jit(next_normal), jax.random.key(5), what="next_normal under jax.jit"
    )
    require(
        close(jitted_x, eager_x)
        and close(jax.random.key_data(jitted_key), jax.random.key_data(eager_key)),
        "under jax.jit next_normal gives other numbers than eagerly: draw only from the key argument.",
    )
    _require_standard_normal(_many_draws(next_normal), f"over {N_DRAWS} keys")


# Exercise 2 ------------------------------------------------------------------------------------

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
    return require_array(
        means,
        (n_chunks,),
        what=f"chunk_means(key, {n_chunks}, {chunk_size})",
        expected="one mean per chunk",
    )


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


@exercise_checker("Exercise 2 (a reproducible Monte Carlo estimate)")
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
    require(np.all(np.isfinite(means)), "some chunk means are NaN or infinite.")
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


# Exercise 3 ------------------------------------------------------------------------------------

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
    require(
        close(positions, expected, rtol=1e-4, atol=1e-4),
        f"for {n_steps} step(s) the walk does not match the reference stream: step t adds "
        "jax.random.normal(keys[t]) with keys = jax.random.split(key, n_steps), starting from 0.",
    )


@exercise_checker("Exercise 3 (a random walk in lax.scan)")
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
