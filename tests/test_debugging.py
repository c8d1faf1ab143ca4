"""jaxcourse.debugging: the float64 parity check and the traceback filter."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxcourse import debugging, jit_parity


def test_compare_with_float64_agrees_on_a_correct_function():
    """A plain sum: jit, eager and float64 agree, with the default and a NumPy reference."""
    x = jit_parity.sample((1_000,))
    parity = debugging.compare_with_float64(jnp.sum, x)
    assert parity.jit_agrees and parity.eager_agrees
    assert parity.float64 == pytest.approx(float(np.sum(x.astype(np.float64))))
    assert debugging.compare_with_float64(jnp.sum, x, reference=np.sum).jit_agrees


def test_compare_with_float64_flags_a_wrong_jitted_value():
    """A function that is wrong only while traced: jit disagrees, eager agrees."""

    def wrong_under_jit(x):
        total = jnp.sum(x)
        return total * 1.01 if isinstance(x, jax.core.Tracer) else total

    parity = debugging.compare_with_float64(wrong_under_jit, jit_parity.sample((100,)))
    assert not parity.jit_agrees and parity.eager_agrees
    assert debugging.compare_with_float64(
        wrong_under_jit, jit_parity.sample((100,)), rtol=0.1
    ).jit_agrees


@pytest.mark.parametrize(
    "kwargs, error, match",
    [
        ({"fn": "sum", "x": np.ones(3, np.float32)}, TypeError, "must be functions"),
        ({"fn": jnp.sum, "x": np.ones(3)}, TypeError, "float32 array"),
        (
            {"fn": jnp.sum, "x": np.ones(3, np.float32), "rtol": 0.0},
            ValueError,
            "rtol must be positive",
        ),
        (
            {"fn": lambda x: 2 * x, "x": np.ones(3, np.float32)},
            ValueError,
            "fn must return a scalar",
        ),
    ],
)
def test_compare_with_float64_rejects_bad_input(kwargs, error, match):
    fn, x = kwargs.pop("fn"), kwargs.pop("x")
    with pytest.raises(error, match=match):
        debugging.compare_with_float64(fn, x, **kwargs)


def test_frames_outside_jax_end_at_the_operation_that_made_the_nan():
    def inner(x):
        return jnp.log(x)

    with pytest.raises(FloatingPointError) as info:
        with jax.debug_nans(True):
            jax.jit(inner)(jnp.array([-1.0]))
    frames = debugging.frames_outside_jax(info.value)
    assert frames[-1] == "inner: return jnp.log(x)"
    assert not any("site-packages/jax" in frame for frame in frames)


def test_frames_outside_jax_rejects_a_non_exception():
    with pytest.raises(TypeError, match="expected an exception"):
        debugging.frames_outside_jax("not an error")
