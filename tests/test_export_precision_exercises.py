"""The export-precision chapter's checkers: a stub is 'not yet', the chapter's solutions pass
(written here once more, eagerly and jitted where the exercise allows both), and the checkers never
crash on what the chapter's own helpers return."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax import export

from jaxcourse.exercises.export_precision import (
    CANDIDATES,
    check_cheapest_dtype,
    check_export_rows,
    check_mixed_step,
    check_stops_counting,
    matmul_in,
)

CHECKERS = (check_export_rows, check_stops_counting, check_mixed_step, check_cheapest_dtype)


def export_rows(f, n_features):
    (b,) = export.symbolic_shape("b")
    return export.export(jax.jit(f))(jax.ShapeDtypeStruct((b, n_features), jnp.float32)).serialize()


def stops_counting(dtype):
    x = jnp.asarray(1, dtype)
    while x + 1 != x:
        x = x * 2
    return int(x)


def mixed_step(params, x, y, lr):
    def loss(params):
        half = jax.tree.map(lambda p: p.astype(jnp.bfloat16), params)
        residual = x.astype(jnp.bfloat16) @ half["w"] + half["b"] - y.astype(jnp.bfloat16)
        return jnp.mean(residual**2)

    grads = jax.grad(loss)(params)
    return jax.tree.map(lambda p, g: p - lr * g, params, grads)


def cheapest_dtype(a, b, rtol):
    exact = np.asarray(a, np.float64) @ np.asarray(b, np.float64)
    for dtype in CANDIDATES:
        error = np.max(np.abs(np.asarray(matmul_in(a, b, dtype), np.float64) - exact))
        if error <= rtol * np.max(np.abs(exact)):
            return dtype
    return None


@pytest.mark.parametrize("checker", CHECKERS, ids=lambda c: c.__name__)
def test_a_stub_is_not_yet(checker):
    def stub(*args):
        raise NotImplementedError

    verdict = checker(stub)
    assert not verdict and "no answer yet" in verdict.message


@pytest.mark.parametrize(
    "checker,answer",
    [
        (check_export_rows, export_rows),
        (check_stops_counting, stops_counting),
        (check_mixed_step, mixed_step),
        (check_mixed_step, jax.jit(mixed_step)),
        (check_cheapest_dtype, cheapest_dtype),
    ],
    ids=["export_rows", "stops_counting", "mixed_step", "mixed_step jitted", "cheapest_dtype"],
)
def test_the_reference_passes(checker, answer):
    verdict = checker(answer)
    assert verdict, verdict.message


def test_other_spellings_of_a_right_answer_pass():
    """A dtype's name for cheapest_dtype, a bfloat16 scalar for stops_counting, a symbolic
    feature dimension for export_rows."""

    def by_name(a, b, rtol):
        found = cheapest_dtype(a, b, rtol)
        return None if found is None else jnp.dtype(found).name

    def both_symbolic(f, n_features):
        spec = jax.ShapeDtypeStruct(export.symbolic_shape("b, k"), jnp.float32)
        return export.export(jax.jit(f))(spec).serialize()

    assert check_cheapest_dtype(by_name)
    assert check_stops_counting(lambda dtype: jnp.asarray(stops_counting(dtype), dtype))
    assert check_export_rows(both_symbolic)


def test_the_cheapest_dtype_cases_have_four_different_answers():
    from jaxcourse.exercises.export_precision._cheapest_dtype import CASES

    answers = [cheapest_dtype(a, b, rtol) for a, b, rtol in CASES]
    assert [None if a is None else jnp.dtype(a).name for a in answers] == [
        "bfloat16",
        "float16",
        "float32",
        None,
    ]
