"""Checker of the tracing chapter's exercise on a polynomial class that jit accepts."""

from __future__ import annotations

import inspect

import jax
import jax.numpy as jnp
import numpy as np

from ...checks import close, exercise_checker, require, require_registered_pytree
from ...tracecount import count_traces
from ._common import _ARRAY_METADATA, _NON_HASHABLE_STATIC, _run


@exercise_checker(
    hints=(
        "For jit to trace an instance, JAX must know how to take it apart: register the class "
        "as a pytree whose one leaf is the coefficients array, and let methods return new "
        "objects instead of changing self.",
        "`@jax.tree_util.register_dataclass` on a `@dataclasses.dataclass` with the one field "
        "`coefficients`; __call__ is jnp.polyval(self.coefficients, x), and derivative() "
        "returns a new Polynomial of coefficients[:-1] times the powers degree, ..., 1 (degree "
        "from the shape). The traps: a static coefficients field, powers 1, 2, 3 in the wrong "
        "order, and mutating self.",
    )
)
def check_polynomial_class(Polynomial: type) -> None:
    """Checks a pytree class `Polynomial(coefficients)` with `__call__(x)` and a pure `derivative()`."""
    require(
        inspect.isclass(Polynomial),
        "pass the class itself, e.g. check_polynomial_class(Polynomial).",
    )
    rng = np.random.default_rng(4)
    cubic = rng.normal(size=4).astype(np.float32)
    other_cubic = rng.normal(size=4).astype(np.float32)
    quadratic = rng.normal(size=3).astype(np.float32)
    x = jnp.asarray(rng.uniform(-1.5, 1.5, size=5).astype(np.float32))
    hints = [
        (
            ValueError,
            _NON_HASHABLE_STATIC,
            "the instance is passed as a static argument, but it is not hashable (a dataclass with "
            "eq=True is not). Don't mark self static: a pytree goes through jit as an argument.",
        ),
        (
            ValueError,
            _ARRAY_METADATA,
            "the coefficients ended up in the static metadata: they must be a leaf (traced).",
        ),
        (
            TypeError,
            "as an abstract array",
            "jit could not turn an argument into an abstract array: register Polynomial as a pytree "
            "whose only leaf is `coefficients`.",
        ),
        (
            jax.errors.ConcretizationTypeError,
            "",
            "derivative() needs a concrete number while tracing: take the degree from "
            "self.coefficients.shape, which is concrete, not from the coefficient values.",
        ),
    ]

    first = _run(Polynomial, jnp.asarray(cubic), hints=hints, what="Polynomial(coefficients)")
    leaves = require_registered_pytree(
        first,
        "JAX sees a Polynomial as one opaque leaf: register the class as a pytree, e.g. with "
        "@jax.tree_util.register_dataclass on a @dataclasses.dataclass.",
    )
    require(
        len(leaves) > 0,
        "your Polynomial has no leaves: its coefficients are static metadata (jax.tree.static or a "
        "static field), so jit would hash the array and compile once per polynomial. Make "
        "`coefficients` an ordinary field, a leaf that jit traces.",
    )
    require(
        len(leaves) == 1 and np.shape(leaves[0]) == cubic.shape,
        f"a Polynomial should have exactly one leaf, its coefficients array; yours has {len(leaves)} "
        f"leaves of shapes {[np.shape(leaf) for leaf in leaves]}.",
    )
    eager = _run(first, x, hints=hints, what="Polynomial.__call__")
    require(
        close(eager, np.polyval(cubic, np.asarray(x)), rtol=1e-4, atol=1e-5),
        "p(x) is wrong: evaluate with the highest power first, e.g. jnp.polyval(self.coefficients, x).",
    )

    def evaluate(polynomial, x):
        return polynomial(x)

    counted = count_traces(evaluate)
    apply = jax.jit(counted)
    for coefficients in (cubic, other_cubic, quadratic):
        polynomial = _run(
            Polynomial, jnp.asarray(coefficients), hints=hints, what="Polynomial(coefficients)"
        )
        result = _run(apply, polynomial, x, hints=hints, what="jax.jit(lambda p, x: p(x))")
        require(
            close(result, np.polyval(coefficients, np.asarray(x)), rtol=1e-4, atol=1e-5),
            "jax.jit(lambda p, x: p(x)) gives a wrong result: are the coefficients a traced leaf?",
        )
        if coefficients is other_cubic:
            require(
                counted.traces == 1,
                "two cubics were traced twice: the coefficients must be a traced leaf, so that one "
                "compilation serves every polynomial of the same degree.",
            )
    require(
        counted.traces == 2,
        "a polynomial of another degree has a new shape, so it should trace again.",
    )

    derivative = _run(getattr(first, "derivative", None), hints=hints, what="Polynomial.derivative")
    require(
        isinstance(derivative, Polynomial),
        f"derivative() should return a new Polynomial, got {type(derivative).__name__}.",
    )
    require(
        close(_run(first, x, hints=hints, what="Polynomial.__call__"), eager, atol=1e-5),
        "derivative() changed the polynomial it was called on: a pure method returns a new object "
        "and leaves self alone.",
    )
    expected = np.polyval(np.polyder(cubic), np.asarray(x))
    got = _run(derivative, x, hints=hints, what="the derivative's __call__")
    if not close(got, expected, rtol=1e-4, atol=1e-5):
        powers_reversed = np.polyval(cubic[:-1] * np.arange(1, 4), np.asarray(x))
        require(
            not close(got, powers_reversed, rtol=1e-4, atol=1e-5),
            "wrong derivative: you multiplied the coefficients by 1, 2, 3, but they come highest "
            "power first, so a cubic's are multiplied by 3, 2, 1 (jnp.arange(degree, 0, -1)).",
        )
        kept_constant = np.polyval(cubic[1:] * np.arange(3, 0, -1), np.asarray(x))
        require(
            not close(got, kept_constant, rtol=1e-4, atol=1e-5),
            "wrong derivative: you dropped the first coefficient (the highest power's) and kept the "
            "constant term; drop the last one, coefficients[:-1], the constant whose derivative is 0.",
        )
        require(
            False,
            "wrong derivative: drop the constant term (the last coefficient) and multiply each other "
            "coefficient by its power (for a cubic: 3, 2, 1).",
        )
    jitted = _run(
        jax.jit(lambda p: p.derivative()),
        first,
        hints=hints,
        what="jax.jit(lambda p: p.derivative())",
    )
    require(
        isinstance(jitted, Polynomial)
        and close(
            _run(jitted, x, hints=hints, what="the derivative's __call__"),
            expected,
            rtol=1e-4,
            atol=1e-5,
        ),
        "jax.jit(lambda p: p.derivative()) should return the derivative as a Polynomial.",
    )
