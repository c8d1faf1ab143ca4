"""Sums over large arrays, in the form that XLA fuses with the work that produces them.

Which form that is depends on the XLA release, so the course chooses it here, once, and
`tests/test_hlo.py` pins the choice. On jax 0.12.0.1 on CPU it is plain `jnp.sum`: for arrays
of 4096 entries or more (oaks has 116 x 114), XLA compiles `jnp.sum(a * b)`, and
`jnp.sum(a * b, axis=0)`, into one loop that computes `a * b` on the fly, while a product with
a vector of ones, `(a * b) @ ones` or `ones @ (a * b)`, first writes `a * b` to memory and is
slower. On jax 0.10, `jnp.sum(a * b)` wrote `a * b` and `(a * b) @ ones` did not. The
benchmark chapter shows this with `jaxcourse.hlo.intermediate_arrays` and times the forms.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp


def total(x: jax.Array) -> jax.Array:
    """The sum of all entries of `x`, a scalar: `jnp.sum(x)`, which XLA fuses with
    whatever computes `x` (on jax 0.12.0.1, CPU, from 4096 entries on)."""
    return jnp.sum(x)


def column_sums(x: jax.Array) -> jax.Array:
    """The sums over the rows of a 2-D `x`, `(p,)`: `jnp.sum(x, axis=0)`, which XLA fuses with
    whatever computes `x` (on jax 0.12.0.1, CPU, from 4096 entries on). Raises `ValueError` for
    any other rank."""
    x = jnp.asarray(x)
    if x.ndim != 2:
        raise ValueError(f"column_sums takes a 2-D array, got shape {x.shape}.")
    return jnp.sum(x, axis=0)


BLOCK_ROWS = 128
"""Rows per block in `column_sums_in_blocks`."""


def column_sums_in_blocks(x: jax.Array, block_rows: int = BLOCK_ROWS) -> jax.Array:
    """`jnp.sum(x, axis=0)` as the course wrote it for jax 0.10, where it was the fused form:
    one batched matrix-vector product sums every block of `block_rows` rows, then the block
    sums and the rows left over are added up. On jax 0.12 it writes `x` to memory, rearranged."""
    whole = x.shape[0] // block_rows * block_rows
    blocks = x[:whole].reshape(-1, block_rows, x.shape[1])
    block_sums = jnp.einsum("bri,r->bi", blocks, jnp.ones(block_rows, x.dtype))
    return block_sums.sum(axis=0) + jnp.sum(x[whole:], axis=0)


SUM_FORMS = {
    "jnp.sum(a * b)": lambda a, b: jnp.sum(a * b),
    "jnp.sum((a * b) @ ones)": lambda a, b: jnp.sum((a * b) @ jnp.ones(a.shape[1], a.dtype)),
    "jnp.sum(a * b, axis=0)": lambda a, b: jnp.sum(a * b, axis=0),
    "ones @ (a * b)": lambda a, b: jnp.ones(a.shape[0], a.dtype) @ (a * b),
    f"blocks of {BLOCK_ROWS} rows": lambda a, b: column_sums_in_blocks(a * b),
}
"""The ways of summing a product `a * b` of two `(n, p)` arrays that the benchmark chapter
compares and `tests/test_hlo.py` pins, by name: first the sum of all entries, then the sums
over the rows. Each name is the expression."""
