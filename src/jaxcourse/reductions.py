"""Sums over large arrays, written as matrix-vector products.

XLA on CPU compiles a reduction such as `jnp.sum(a * b)` over an `(n, p)` array into a loop
of its own, while a product with a vector of ones goes to the tuned matrix library that also
runs `a @ b`. On the 2-core CPU the course is developed on, the product is several times
faster for the `(n, p)` sums of the PLN loop (the benchmark chapter times both; elsewhere the
balance can differ). The results agree to float rounding.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp


def total(x: jax.Array) -> jax.Array:
    """The sum of all entries of `x`, as `sum(x @ ones)`: row sums by the matrix library,
    then a short sum over rows. Equal to `jnp.sum(x)` up to rounding."""
    x = jnp.asarray(x)
    if x.ndim == 0:
        return x
    return jnp.sum(x @ jnp.ones(x.shape[-1], x.dtype))


def column_sums(x: jax.Array) -> jax.Array:
    """The sums over rows of a 2-D `x`, `(p,)`, as `ones @ x`. Equal to `jnp.sum(x, axis=0)`
    up to rounding."""
    x = jnp.asarray(x)
    if x.ndim != 2:
        raise ValueError(f"column_sums takes a 2-D array, got shape {x.shape}.")
    return jnp.ones(x.shape[0], x.dtype) @ x
