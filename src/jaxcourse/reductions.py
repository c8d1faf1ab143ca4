"""Sums over large arrays, written so that XLA fuses them with the work that produces them.

On CPU, XLA compiles `jnp.sum(a * b)` into two loops: one writes `a * b` to memory, the next
reads it back and adds it up. Written as a product with a vector of ones, `(a * b) @ ones`,
the sum becomes a matrix-vector product that XLA generates as one loop, computing `a * b` on
the fly. For the sums over rows, `ones @ x` is not enough (XLA sends that product to its matrix
library, which needs `x` in memory); a batched matrix-vector product over blocks of rows is.
`jaxcourse.hlo.intermediate_arrays` shows which arrays a compiled program writes, and the
benchmark chapter times the forms. The results agree with `jnp.sum` to float rounding.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

BLOCK_ROWS = 128
"""Rows per block in `column_sums`: each block's sums are one small matrix-vector product."""


def total(x: jax.Array) -> jax.Array:
    """The sum of all entries of `x`, as `sum(x @ ones)`: row sums, in one loop with whatever
    computes `x`, then a short sum over rows. Equal to `jnp.sum(x)` up to rounding."""
    x = jnp.asarray(x)
    if x.ndim == 0:
        return x
    return jnp.sum(x @ jnp.ones(x.shape[-1], x.dtype))


def column_sums(x: jax.Array, *, block_rows: int = BLOCK_ROWS) -> jax.Array:
    """The sums over rows of a 2-D `x`, `(p,)`. Equal to `jnp.sum(x, axis=0)` up to rounding.

    The rows are cut into blocks of `block_rows`; one batched matrix-vector product sums
    within every block, in one loop with whatever computes `x`, and a short sum adds up the
    blocks. Rows left over after the last whole block are summed by `ones @ x`.
    """
    x = jnp.asarray(x)
    if x.ndim != 2:
        raise ValueError(f"column_sums takes a 2-D array, got shape {x.shape}.")
    if isinstance(block_rows, bool) or not isinstance(block_rows, int) or block_rows < 1:
        raise ValueError(f"block_rows must be a positive int, got {block_rows!r}.")
    n_rows, n_columns = x.shape
    n_blocks = n_rows // block_rows
    whole = n_blocks * block_rows
    sums = jnp.zeros(n_columns, x.dtype)
    if n_blocks:
        blocks = x[:whole].reshape(n_blocks, block_rows, n_columns)
        sums = jnp.einsum("bri,r->bi", blocks, jnp.ones(block_rows, x.dtype)).sum(axis=0)
    if whole < n_rows:
        sums = sums + jnp.ones(n_rows - whole, x.dtype) @ x[whole:]
    return sums
