"""Checker of the PRNG chapter's exercise on a key that moves on."""

from __future__ import annotations

from collections.abc import Callable

import jax
import numpy as np
from scipy import stats

from ...checks import close, exercise_checker, require
from ._common import _call, _is_typed_key, require_key_discipline

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
    require(
        not (draws.min() >= 0.0 and draws.max() <= 1.0),
        f"{how}, every draw lies in [0, 1]: these are uniform draws (jax.random.uniform). Draw "
        "from the standard normal, jax.random.normal.",
    )
    require(abs(mean) < 0.1, f"{how}, the draws have mean {mean:.3f}, not 0: draw from N(0, 1).")
    require(
        abs(variance - 1) < 0.1,
        f"{how}, the draws have variance {variance:.3f}, not 1: they come from another distribution "
        "(a truncated normal, say) or were rescaled. Draw with jax.random.normal, unscaled.",
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


@exercise_checker(
    hints=(
        "A key may be used once: to draw, or to split. So split the key you are given into two new keys first, then decide which one to use and which one to hand back.",
        "key, subkey = jax.random.split(key); draw x = jax.random.normal(subkey), a scalar of shape (); return (key, x) with the key first. Never draw from the key you return, never return the key you were given, and keep no counter or other state between calls: the same key must give the same x.",
    )
)
def check_next_normal(next_normal: Callable) -> None:
    """Checks `next_normal(key) -> (new_key, x)` under JAX's key-reuse checker and the course's rules.

    Threading the returned key through several calls must give different, reproducible
    draws, no key may be consumed twice (nor folded into and drawn from), the same numbers
    must come out under `jit`, and many draws must look standard normal.
    """
    require(callable(next_normal), "pass the function itself: check_next_normal(next_normal).")
    start = jax.random.key(0)
    new_key, _ = _checked_pair(_call(next_normal, start, what="next_normal"), call=1)
    require(
        not np.array_equal(jax.random.key_data(new_key), jax.random.key_data(start)),
        "next_normal returned the key it was given as new_key, so the caller's next call uses a key "
        "that has already been used. Return a new key: one of the two that jax.random.split(key) "
        "makes, the other being the one you draw from.",
    )
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
