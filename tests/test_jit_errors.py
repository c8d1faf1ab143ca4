"""The errors shown in the jit chapter, pinned. Its jit-versus-eager checks are in test_jit_vs_eager.py."""

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


def test_donated_input_cannot_be_used_again():
    """Cell 'x_donated + 1.0': reading, computing with or re-passing a donated array raises RuntimeError."""
    double = jax.jit(lambda x: 2.0 * x, donate_argnums=0)
    x = jnp.zeros(8)
    double(x)
    for use in (lambda: x + 1.0, lambda: np.asarray(x), lambda: double(x)):
        with pytest.raises(RuntimeError, match=r"Array has been deleted with shape=float32\[8\]"):
            use()
