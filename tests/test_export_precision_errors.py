"""The errors shown in the export-precision chapter, pinned, and the claims its prose makes about
dtypes, each checked by running it."""

import pickle
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax import export

from jaxcourse import precision
from jaxcourse.pln import FLOAT32_EXACT_COUNT, level5, load_oaks, make_data


def score(x, w):
    return jnp.sum(jnp.tanh(x @ w), axis=1)


X, W = jnp.ones((5, 4)), jnp.ones((4, 3))


def test_a_shape_that_breaks_the_symbolic_specification_is_refused():
    """Cell 'exported_square.call(jnp.ones((2, 3)))': (a, a) called with (2, 3)."""
    (side,) = export.symbolic_shape("a")
    exported = export.export(jax.jit(lambda m: m @ m))(
        jax.ShapeDtypeStruct((side, side), jnp.float32)
    )
    with pytest.raises(
        ValueError, match=r"Input shapes do not match the polymorphic shapes specification"
    ):
        exported.call(jnp.ones((2, 3)))
    np.testing.assert_allclose(exported.call(jnp.ones((3, 3))), 3 * np.ones((3, 3)))


def test_a_symbolic_export_serves_every_batch_size_from_its_bytes():
    (n,) = export.symbolic_shape("n")
    blob = export.export(jax.jit(score))(jax.ShapeDtypeStruct((n, 4), jnp.float32), W).serialize()
    for rows in (2, 7):
        x = jnp.arange(rows * 4.0).reshape(rows, 4) / 10
        np.testing.assert_allclose(export.deserialize(blob).call(x, W), score(x, W), rtol=1e-6)


def test_an_export_for_cuda_alone_refuses_to_run_on_the_cpu():
    """Cell 'exported_gpu.call(x_score, w_score)': lowering for CUDA works on a CPU machine,
    calling it there does not."""
    exported = export.export(jax.jit(score), platforms=("cuda",))(X, W)
    with pytest.raises(
        ValueError, match=r"was exported for platforms '\('cuda',\)' but it is used"
    ):
        exported.call(X, W)


def test_a_cpu_and_cuda_export_runs_here():
    exported = export.export(jax.jit(score), platforms=("cpu", "cuda"))(X, W)
    assert exported.platforms == ("cpu", "cuda")
    np.testing.assert_allclose(exported.call(X, W), score(X, W))


def test_a_namedtuple_output_cannot_be_serialized():
    """Cell 'export.export(jax.jit(both_scores))(...).serialize()': the export works, the bytes
    cannot be written."""

    class Scores(NamedTuple):
        total: jax.Array
        largest: jax.Array

    exported = export.export(jax.jit(lambda x, w: Scores(jnp.sum(score(x, w)), jnp.max(x))))(X, W)
    with pytest.raises(
        ValueError, match=r"Cannot serialize PyTreeDef containing an unregistered type"
    ):
        exported.serialize()
    assert export.export(jax.jit(lambda x, w: (jnp.sum(score(x, w)), jnp.max(x))))(X, W).serialize()


def test_a_jitted_function_cannot_be_pickled():
    """Cell 'pickle.dumps(jax.jit(score))', the 'what export is not' table's pickle row, and the
    sharp-bits row: the error's class depends on the function, it fails either way."""
    with pytest.raises(AttributeError, match=r"Can't get local object"):
        pickle.dumps(jax.jit(score))
    with pytest.raises(pickle.PicklingError, match=r"Can't pickle"):
        pickle.dumps(jax.jit(jnp.sin))


def test_the_calling_convention_version_is_in_the_supported_window():
    version = export.export(jax.jit(score))(X, W).calling_convention_version
    low = export.minimum_supported_calling_convention_version
    assert low <= version <= export.maximum_supported_calling_convention_version


def test_x64_reaches_only_what_is_created_inside_the_block():
    """Cell 'made inside ... computed outside': the array keeps float64, new work is float32."""
    with jax.enable_x64(True):
        inside = jnp.arange(3.0)
    assert inside.dtype == jnp.float64
    with pytest.warns(UserWarning, match=r"Explicitly requested dtype float64"):
        assert (inside + 1).dtype == jnp.float32


def test_bfloat16_loses_a_small_step_near_one_and_float32_keeps_it():
    one, step = jnp.float32(1.0), jnp.float32(1e-3)
    assert one - step != one
    assert one.astype(jnp.bfloat16) - step.astype(jnp.bfloat16) == one.astype(jnp.bfloat16)


def test_a_float16_gradient_underflows_and_loss_scaling_recovers_it():
    tiny = jnp.full(4, 1e-4, jnp.float16)

    def half_loss(w, scale):
        return scale * jnp.sum(w * tiny * tiny)

    w = jnp.ones(4, jnp.float16)
    assert not jnp.any(jax.grad(half_loss)(w, jnp.float16(1.0)))
    scaled = jax.grad(half_loss)(w, jnp.float16(2.0**14)).astype(jnp.float32) / 2.0**14
    np.testing.assert_allclose(scaled, 1e-8, rtol=0.01)


def test_precision_does_not_change_a_float32_product_on_the_cpu():
    """The matmul table: on a CPU, default, high and highest give the same numbers; only the
    program's attribute differs."""
    cpu = jax.devices("cpu")[0]  # the claim is about the CPU, also on a machine with a GPU
    a = jax.device_put(jax.random.normal(jax.random.key(2), (256, 256)), cpu)
    products = [jnp.dot(a, a, precision=level) for level in ("default", "high", "highest")]
    for product in products[1:]:
        np.testing.assert_array_equal(product, products[0])
    text = jax.jit(lambda a: jnp.dot(a, a, precision="highest")).lower(a).as_text()
    assert "precision = [HIGHEST, HIGHEST]" in text


def test_level5_cannot_fit_in_bfloat16():
    """Cell 'level5.fit(precision.cast(oaks, jnp.bfloat16), ...)': Cholesky has no bfloat16."""
    with pytest.raises(TypeError, match=r"cholesky does not accept dtype bfloat16"):
        level5.fit(precision.cast(load_oaks(), jnp.bfloat16), 5, optimizer=level5.NEWTON_MOMENTUM)


def test_counts_above_two_to_the_24_are_refused_in_float32_and_kept_in_float64():
    """Cells 'make_data(...FLOAT32_EXACT_COUNT + 1...)': refused, then float64 under x64."""
    counts = np.array([[FLOAT32_EXACT_COUNT + 1, 3]])
    assert int(np.float32(FLOAT32_EXACT_COUNT + 1)) == FLOAT32_EXACT_COUNT
    with pytest.raises(ValueError, match=r"counts above 2\^24 = 16777216 cannot be held exactly"):
        make_data(counts)
    with jax.enable_x64(True):
        data = make_data(counts)
        assert (
            data.counts.dtype == jnp.float64 and int(data.counts[0, 0]) == FLOAT32_EXACT_COUNT + 1
        )
