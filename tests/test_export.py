"""jaxcourse.export: a small exported function called in a fresh process returns what it returns
here, and the child imports nothing of the course."""

import jax
import jax.numpy as jnp
import numpy as np
from jax import export

from jaxcourse.export import call_in_fresh_process


def test_a_small_export_runs_in_a_fresh_process():
    def f(x, y):
        return jnp.sin(x) @ y, {"sum": jnp.sum(y)}

    x, y = jnp.arange(6.0).reshape(2, 3), jnp.ones((3, 4))
    blob = export.export(jax.jit(f))(x, y).serialize()
    fresh = call_in_fresh_process(blob, x, y)
    want = jax.tree.leaves(f(x, y))
    assert fresh.jaxcourse_modules == ()
    assert len(fresh.outputs) == len(want)
    for got, expected in zip(fresh.outputs, want):
        np.testing.assert_array_equal(got, expected)
