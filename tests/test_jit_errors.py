"""The errors shown in the jit chapter, pinned, and the jit-versus-eager checks it relies on."""

from functools import partial

import jax
import jax.numpy as jnp
import numpy as np
import pytest


def test_unhashable_static_argument_is_rejected():
    """Cell 'power(jnp.ones(3), k=[2])': a static argument must be hashable (a list is not)."""

    @partial(jax.jit, static_argnames="k")
    def power(x, k):
        return x**k

    with pytest.raises(ValueError, match="Non-hashable static arguments are not supported"):
        power(jnp.ones(3), k=[2])


def test_compiled_executable_rejects_other_shapes():
    """Cell 'compiled(jnp.ones(10))': an AOT-compiled executable never recompiles."""

    def chain(x):
        return jnp.tanh(x) * 2.0 + jnp.sin(x) ** 2 - jnp.exp(-x) / (1.0 + x * x)

    compiled = jax.jit(chain).lower(jax.ShapeDtypeStruct((1_000,), jnp.float32)).compile()
    with pytest.raises(TypeError, match="Argument types differ from the types for which this computation was compiled"):
        compiled(jnp.ones(10))


def test_item_assignment_is_rejected():
    """Cell 'x_jax[0] = 10.0': JAX arrays are immutable and the error names .at[]."""
    x_jax = jnp.arange(5.0)
    with pytest.raises(TypeError, match=r"JAX arrays are immutable and do not support in-place item assignment"):
        x_jax[0] = 10.0


def log_reduction(x):
    """The fused reduction of the chapter's correctness section."""
    return jnp.sum(jnp.log(2 * x) + x * jnp.log(x))


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("n", [1, 7, 1_000, 4_096])
def test_jit_equals_eager_on_fused_log_reduction(seed, n):
    """jit and eager agree to rtol 1e-6; jax 0.10.2 broke such fused reductions on CPU (jax-ml/jax#39103)."""
    x = jax.random.uniform(jax.random.key(seed), (n,), minval=0.5, maxval=3.0)
    eager = log_reduction(x)
    jitted = jax.jit(log_reduction)(x)
    np.testing.assert_allclose(np.asarray(jitted), np.asarray(eager), rtol=1e-6)


def test_jit_equals_eager_on_the_reported_reproducer():
    """The float32 reproducer of jax-ml/jax#39103 (a vmapped matvec, then a sum of squares)."""

    def sum_of_squares_per_row(rows):
        matrix = jnp.eye(3, dtype=rows.dtype)
        return jax.vmap(lambda row: jnp.sum((matrix @ row) ** 2))(rows)

    index = jnp.arange(32_769, dtype=jnp.float32)
    rows = jnp.stack([index, jnp.zeros_like(index), jnp.zeros_like(index)], axis=1)
    eager = sum_of_squares_per_row(rows)
    jitted = jax.jit(sum_of_squares_per_row)(rows)
    np.testing.assert_allclose(np.asarray(jitted), np.asarray(eager), rtol=1e-6)


def test_donated_input_is_deleted():
    """The donation cell: a donated input is marked deleted after the call."""

    def update_three(x, i, value):
        x = x.at[i].set(value)
        x = x.at[i + 1].add(value)
        return x.at[0].multiply(2.0)

    x = jnp.zeros(8)
    y = jax.jit(update_three, donate_argnums=0)(x, 3, 1.0)
    assert x.is_deleted()
    np.testing.assert_array_equal(np.asarray(y), [0, 0, 0, 1, 1, 0, 0, 0])
