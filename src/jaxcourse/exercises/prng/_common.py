"""Helpers shared by the PRNG chapter's checkers: the course's key discipline and the key-reuse hints."""

from __future__ import annotations

from collections.abc import Callable

import jax
import jax.numpy as jnp

from ...checks import call_answer, require
from .._jaxpr import traced_program, uses_of

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
