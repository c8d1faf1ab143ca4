"""jaxcourse.precision: the dtype facts hold when computed, and the three sums rank as the chapter
says (Kahan and pairwise far closer than a running total) on inputs where it matters."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxcourse import precision


@pytest.mark.parametrize(
    "dtype,first_lost", [(jnp.bfloat16, 257), (jnp.float16, 2049), (jnp.float32, 2**24 + 1)]
)
def test_dtype_facts_are_measured(dtype, first_lost):
    facts = precision.dtype_facts(dtype)
    assert facts["first whole number lost"] == first_lost
    assert facts["it becomes"] == first_lost - 1
    assert facts["1 + eps/2 == 1"] and facts["2 * largest"] == float("inf")


@pytest.mark.parametrize("n", [1, 2, 3, 1000, 4097])
def test_every_sum_adds_small_arrays_exactly(n):
    x = jnp.arange(n, dtype=jnp.float32)
    for name, f in precision.SUMS.items():
        assert float(f(x)) == n * (n - 1) / 2, name


def test_kahan_and_pairwise_beat_a_running_total():
    x = jnp.full(200_000, 0.1, jnp.float32)
    errors = precision.relative_errors(x)
    assert errors["Kahan"] < 1e-6 and errors["pairwise"] < 1e-6
    assert errors["naive"] > 100 * max(errors["Kahan"], errors["pairwise"])


def test_kahan_keeps_what_pairwise_loses_on_an_adversarial_input():
    """One large value, then many values each below its rounding: Kahan's compensation keeps them."""
    x = jnp.concatenate([jnp.ones(1) * 2.0**24, jnp.full(4095, 0.5)]).astype(jnp.float32)
    exact = precision.exact_sum(x)
    assert abs(float(precision.kahan_sum(x)) - exact) <= 2.0
    assert abs(float(precision.naive_sum(x)) - exact) > 1000


def test_cast_and_nbytes():
    tree = {"x": jnp.ones((3, 4)), "i": jnp.arange(3)}
    half = precision.cast(tree, jnp.bfloat16)
    assert half["x"].dtype == jnp.bfloat16 and half["i"].dtype == tree["i"].dtype
    assert precision.nbytes(half) == 3 * 4 * 2 + 3 * np.dtype(tree["i"].dtype).itemsize
    assert jax.tree.structure(half) == jax.tree.structure(tree)
