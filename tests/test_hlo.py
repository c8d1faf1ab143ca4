"""`jaxcourse.hlo.intermediate_arrays`, and the fusion facts the benchmark chapter states.

The chapter says which sums make XLA write an `(n, p)` product to memory. These tests compile
the same expressions at the chapter's size (oaks x 100), so a JAX release that fuses them
differently fails here, not in a learner's reading.
"""

import jax
import jax.numpy as jnp
import pytest

from jaxcourse.hlo import intermediate_arrays
from jaxcourse.reductions import column_sums, total

SHAPE = (11_600, 114)


@pytest.fixture(scope="module")
def pair():
    return tuple(jax.ShapeDtypeStruct(SHAPE, jnp.float32) for _ in range(2))


def written(fn, pair):
    return intermediate_arrays(fn, *pair, shape=SHAPE)


def test_plain_sums_write_the_product(pair):
    """`jnp.sum(a * b)`, its column sums and `ones @ (a * b)` first write `a * b` to memory."""
    assert len(written(lambda a, b: jnp.sum(a * b), pair)) == 1
    assert len(written(lambda a, b: jnp.sum(a * b, axis=0), pair)) == 1
    assert len(written(lambda a, b: jnp.ones(SHAPE[0]) @ (a * b), pair)) == 1


def test_reductions_fuse_the_product(pair):
    """`total` and `column_sums` compute `a * b` inside their loops and write no `(n, p)` array."""
    assert written(lambda a, b: total(a * b), pair) == []
    assert written(lambda a, b: column_sums(a * b), pair) == []


def test_elementwise_results_are_listed_and_parameters_are_not(pair):
    """An array that two outputs need is written once; inputs and the result are not listed."""
    assert written(lambda a, b: a * b, pair) == []
    assert len(written(lambda a, b: jnp.sum(jnp.exp(a) @ jnp.eye(SHAPE[1]) + jnp.exp(a)), pair)) >= 1


def test_loop_bodies_are_searched():
    """Arrays written inside a `lax.fori_loop` body count too."""

    def loop(x):
        return jax.lax.fori_loop(0, 3, lambda i, y: jnp.exp(y) @ jnp.eye(SHAPE[1]), x)

    assert len(intermediate_arrays(loop, jax.ShapeDtypeStruct(SHAPE, jnp.float32), shape=SHAPE)) >= 1


def test_small_arrays_fuse_ones_on_the_left_too():
    """The chapter's caveat: whether XLA fuses `ones @ (a * b)` depends on the size."""
    small = tuple(jax.ShapeDtypeStruct((300, 20), jnp.float32) for _ in range(2))
    assert intermediate_arrays(lambda a, b: jnp.ones(300) @ (a * b), *small, shape=(300, 20)) == []
