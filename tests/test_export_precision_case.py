"""The case study's export: level 5's fit, exported with the number of samples symbolic, loaded in
a fresh Python process from its bytes alone (that process imports jax and numpy, nothing of the
course), returns what the same bytes return here, and agrees with `level5.fit`."""

import ast

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax import export

from jaxcourse.export import FRESH_PROCESS_SCRIPT, call_in_fresh_process
from jaxcourse.pln import exported, level5, load_oaks
from jaxcourse.pln.profiled import prepare

# Two compilations of the whole fit and a fresh process: left out of the fast tier.
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def fit_bytes() -> bytes:
    return bytes(exported.export_fit().serialize())


def test_the_fresh_process_imports_only_jax_and_numpy():
    imported = {
        alias.name.split(".")[0]
        for node in ast.walk(ast.parse(FRESH_PROCESS_SCRIPT))
        if isinstance(node, (ast.Import, ast.ImportFrom))
        for alias in (node.names if isinstance(node, ast.Import) else [ast.alias(node.module)])
    }
    assert imported == {"sys", "numpy", "jax"}


def test_the_exported_fit_is_symbolic_in_n_p_and_d(fit_bytes):
    loaded = export.deserialize(bytearray(fit_bytes))
    shapes = [aval.shape for aval in loaded.in_avals]
    assert [str(dim) for dim in shapes[0]] == ["n", "p"] and [str(d) for d in shapes[2]] == [
        "n",
        "d",
    ]
    assert len(loaded.out_avals) == len(exported.OUTPUTS)


def test_a_fresh_process_fits_new_data_from_the_bytes_alone(fit_bytes):
    """The oaks data stacked twice (n = 232). With as many CPU devices as this process has (the
    tests simulate 4, which changes how XLA:CPU splits its work and so the last bits of the
    sums), the fresh process returns exactly what the same bytes return here; with its own
    default of one device, the same ELBO to float32 precision, and the ELBO of `level5.fit`."""
    data = load_oaks(2)
    inputs = exported.fit_inputs(data)
    same_devices = {"JAX_NUM_CPU_DEVICES": str(len(jax.devices("cpu")))}
    fresh = call_in_fresh_process(fit_bytes, *inputs, env=same_devices)
    here = [np.asarray(out) for out in export.deserialize(bytearray(fit_bytes)).call(*inputs)]
    assert fresh.jaxcourse_modules == ()
    assert len(fresh.outputs) == len(here) == len(exported.OUTPUTS)
    for name, got, want in zip(exported.OUTPUTS, fresh.outputs, here):
        np.testing.assert_array_equal(got, want, err_msg=name)
    default = call_in_fresh_process(fit_bytes, *inputs, env={"JAX_NUM_CPU_DEVICES": "1"})
    np.testing.assert_allclose(float(default.outputs[0]), float(here[0]), rtol=1e-6)
    source = level5.fit(
        data, exported.EXPORT_N_ITER, optimizer=level5.NEWTON_MOMENTUM, separation_limit=False
    )
    np.testing.assert_allclose(float(here[0]), float(source.elbo_trace[-1]), rtol=1e-6)


def test_the_traced_problem_matches_prepare():
    data = load_oaks()
    traced = jax.jit(exported.traced_problem)(data.counts, data.offsets, data.covariates)
    prepared = prepare(data)
    for name, got, want in zip(prepared._fields, traced, prepared):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-4, err_msg=name)


def test_a_fresh_process_that_fails_says_why():
    with pytest.raises(RuntimeError, match="the fresh process failed"):
        call_in_fresh_process(b"not an exported program", jnp.ones(2))
