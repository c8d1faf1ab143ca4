"""Checker of the tracing chapter's exercise on polynomial features with a static degree."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np

from ...checks import close, exercise_checker, require, require_array, require_callable
from ._common import _NON_HASHABLE_STATIC, _run


@exercise_checker(
    hints=(
        "The degree sets the output's shape, so it must be concrete while tracing: make it a "
        "static argument of the jitted function, by name so that both ways of passing it work.",
        'Decorate with `@partial(jax.jit, static_argnames="degree")` and stack the columns '
        "x**0, x**1, ..., x**degree along axis 1. The traps: an un-jitted function, a traced "
        "degree, columns in reverse order (jnp.vander), a missing column of ones, and stacking "
        "along axis 0.",
    )
)
def check_polynomial_features(polynomial_features: Callable) -> None:
    """Checks a jitted `polynomial_features(x, degree)` -> columns x**0 ... x**degree, degree static."""
    require_callable(polynomial_features, "polynomial_features")
    hints = [
        (
            ValueError,
            _NON_HASHABLE_STATIC,
            "only `degree` may be static: x is an array, and arrays are not hashable, so they cannot "
            "be static arguments.",
        ),
        (
            jax.errors.TracerIntegerConversionError,
            "",
            "degree reached range() as a tracer: mark it static with static_argnames='degree'.",
        ),
        (
            TypeError,
            "Shapes must be 1D sequences of concrete values",
            "the output shape depends on degree, so degree must be static: static_argnames='degree'.",
        ),
        (
            jax.errors.ConcretizationTypeError,
            "",
            "degree is traced, but the output shape needs its value: mark it static with "
            "static_argnames='degree'.",
        ),
    ]
    rng = np.random.default_rng(3)
    x = rng.uniform(-1.5, 1.5, size=5).astype(np.float32)
    for degree in (1, 3, 0):
        expected = np.vander(x, degree + 1, increasing=True)
        for how, call, args in (
            ("positionally", polynomial_features, (jnp.asarray(x), degree)),
            ("by keyword", partial(polynomial_features, degree=degree), (jnp.asarray(x),)),
        ):
            actual = require_array(
                _run(call, *args, hints=hints, what=f"polynomial_features (degree passed {how})"),
                expected.shape,
                what=f"polynomial_features(x, {degree}) with len(x) = {x.size} (degree passed {how})",
                expected="one column per power 0 ... degree",
            )
            if close(actual, expected, rtol=1e-4, atol=1e-5):
                continue
            require(
                not close(actual, expected[:, ::-1], rtol=1e-4, atol=1e-5),
                "the columns are in reverse order: column k must be x**k, starting with a column of ones.",
            )
            wrong = [
                k
                for k in range(degree + 1)
                if not close(np.asarray(actual)[:, k], expected[:, k], rtol=1e-4, atol=1e-5)
            ]
            require(
                False,
                f"wrong values for degree = {degree} (degree passed {how}): column {wrong[0]} should "
                f"be x**{wrong[0]}, {np.round(expected[:, wrong[0]], 3).tolist()}, got "
                f"{np.round(np.asarray(actual)[:, wrong[0]], 3).tolist()}.",
            )
    require(
        hasattr(polynomial_features, "lower"),
        "the values are right, but polynomial_features should be the jitted function itself: wrap "
        "it with jax.jit(..., static_argnames='degree') (or decorate it with functools.partial).",
    )
