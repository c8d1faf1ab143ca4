"""The errors shown in the tour, pinned: each test reproduces one error cell."""

import jax
import jax.numpy as jnp
import pytest


def test_assigning_into_a_jax_array_names_the_at_fix():
    w = jnp.zeros(3)
    with pytest.raises(TypeError, match=r"JAX arrays are immutable.*x = x\.at\[idx\]\.set\(y\)"):
        w[0] = 1.0


def test_a_traced_axis_must_be_known_statically():
    def centre(v, axis):
        return v - v.mean(axis=axis, keepdims=True)

    with pytest.raises(
        jax.errors.ConcretizationTypeError, match="The axis argument must be known statically"
    ):
        jax.jit(centre)(jnp.ones((2, 3)), 0)


def test_a_print_inside_jit_runs_once_per_trace(capsys):
    """The trap the tour shows: the print shows a tracer, and only when the function is traced."""

    @jax.jit
    def scaled(v):
        print("v is", v)
        return 2 * v

    scaled(jnp.arange(3.0))
    scaled(jnp.arange(3.0) + 10)
    scaled(jnp.arange(4.0))
    lines = capsys.readouterr().out.splitlines()
    assert lines == ["v is JitTracer(float32[3])", "v is JitTracer(float32[4])"]
