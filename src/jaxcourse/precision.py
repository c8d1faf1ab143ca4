"""Floating-point precision, measured: what each dtype holds, three ways to sum, and the bytes.

The export-precision chapter shows these functions by their source and runs them. Every
number they give is computed on the machine that runs them, not read from a table.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import jax
import jax.numpy as jnp
import numpy as np

LOW_PRECISION = (jnp.bfloat16, jnp.float16, jnp.float32)
"""The dtypes the chapter compares, narrowest first (float64 needs `jax.enable_x64`)."""


def dtype_facts(dtype) -> dict:
    """What `dtype` holds, each fact checked by computing in it: its bytes, the gap above 1
    (`eps`, with 1 + eps/2 rounding back to 1), the largest finite value (twice it is inf), the
    smallest normal value, and the first whole number it cannot hold (2^(mantissa bits + 1) + 1)."""
    info = jnp.finfo(dtype)
    one, eps, largest = (jnp.asarray(v, dtype) for v in (1, info.eps, info.max))
    first_gap = 2 ** (info.nmant + 1) + 1
    return {
        "dtype": jnp.dtype(dtype).name,
        "bytes": jnp.dtype(dtype).itemsize,
        "eps": float(info.eps),
        "1 + eps/2 == 1": bool(one + eps / 2 == one),
        "largest": float(info.max),
        "2 * largest": float(largest * jnp.asarray(2, dtype)),
        "smallest normal": float(info.smallest_normal),
        "first whole number lost": first_gap,
        "it becomes": int(jnp.asarray(first_gap, dtype).astype(jnp.float32)),
    }


@jax.jit
def naive_sum(x: jax.Array) -> jax.Array:
    """Left to right, one running total in `x`'s dtype: the loop a C programmer writes. Its
    rounding error grows with the length (about n eps in the worst case)."""
    return jax.lax.fori_loop(0, x.shape[0], lambda i, total: total + x[i], jnp.zeros((), x.dtype))


@jax.jit
def pairwise_sum(x: jax.Array) -> jax.Array:
    """Halves added to halves until one number is left: each entry passes through about
    log2(n) additions, so the error grows like log2(n) eps. `x` is padded with zeros to a
    power of two."""
    size = 1 << max(x.shape[0] - 1, 0).bit_length()
    x = jnp.pad(x, (0, size - x.shape[0]))
    while x.shape[0] > 1:
        x = x[0::2] + x[1::2]
    return x[0]


@jax.jit
def kahan_sum(x: jax.Array) -> jax.Array:
    """Kahan's compensated sum, left to right: a second number carries the low-order bits that
    each addition rounded away, and adds them back at the next step; the error stays about
    eps whatever the length (until the compensation itself rounds)."""

    def step(i, carry):
        total, compensation = carry
        corrected = x[i] - compensation
        new_total = total + corrected
        return new_total, (new_total - total) - corrected

    zero = jnp.zeros((), x.dtype)
    return jax.lax.fori_loop(0, x.shape[0], step, (zero, zero))[0]


SUMS: dict[str, Callable[[jax.Array], jax.Array]] = {
    "naive": naive_sum,
    "pairwise": pairwise_sum,
    "Kahan": kahan_sum,
    "jnp.sum": jnp.sum,
}
"""The summations the chapter compares, by name."""


def exact_sum(x) -> float:
    """The correctly rounded sum of `x`'s values (`math.fsum`, exact in float64)."""
    return math.fsum(np.asarray(x, np.float64).ravel().tolist())


def relative_errors(x: jax.Array) -> dict[str, float]:
    """|sum - exact| / |exact| of each of `SUMS` on `x`."""
    exact = exact_sum(x)
    return {name: abs(float(f(x)) - exact) / abs(exact) for name, f in SUMS.items()}


def nbytes(tree) -> int:
    """The bytes of every array in `tree`."""
    return sum(int(np.asarray(leaf).nbytes) for leaf in jax.tree.leaves(tree))


def cast(tree, dtype):
    """Every floating-point array of `tree` in `dtype` (others unchanged)."""
    return jax.tree.map(
        lambda leaf: leaf.astype(dtype) if jnp.issubdtype(leaf.dtype, jnp.floating) else leaf, tree
    )
