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
