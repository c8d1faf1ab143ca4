"""Checkers for the exercises of the chapter 'Tracing, abstract values and static arguments'."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np

from ..checks import (
    call_answer,
    close,
    exercise_checker,
    require,
    require_array,
    require_callable,
    require_registered_pytree,
)
from ..tracecount import count_traces
from ._jaxpr import primitive_names, traced_program

_NON_HASHABLE_STATIC = "Non-hashable static arguments"
_ARRAY_METADATA = "metadata fields"


def _run(fn: Callable, *args, hints: list[tuple[type, str, str]], what: str = "your function"):
    """Calls the learner's `fn(*args)` through `call_answer`: a JAX error matching one of `hints`
    (error class, message fragment or "", hint; subclasses before their parents) becomes that
    hint, and a result of None fails with a hint about a missing `return`."""
    result = call_answer(fn, *args, what=what, hints=tuple(hints))
    require(
        result is not None,
        "your code returned None: is a `return` missing? (A pure function or method returns its "
        "result instead of storing it.)",
    )
    return result


# Exercise 1 ------------------------------------------------------------------------------------


def solve(x, options):
    """The exercise's function: `options.method` picks a Python branch and `options.n_iter` a loop
    length, so `options` must be a static argument."""
    for _ in range(options.n_iter):
        x = jnp.cos(x) if options.method == "cos" else jnp.sin(x)
    return x


def _expected_solve(x: np.ndarray, method: str, n_iter: int) -> np.ndarray:
    step = np.cos if method == "cos" else np.sin
    for _ in range(n_iter):
        x = step(x)
    return x


_SETTINGS = (("cos", 3), ("cos", 3), ("sin", 3), ("cos", 4), ("sin", 3))
"""The checker's calls, in order: an equal instance made afresh, then each field changed, then back."""


@exercise_checker("Exercise 1 (a configuration that jit can key on)")
def check_solver_options(SolverOptions: type) -> None:
    """Checks a class `SolverOptions(method, n_iter)` used as a static argument of
    `jax.jit(solve, static_argnums=1)`: equal instances share one trace, instances that differ in
    any field get their own, results are right, and an instance cannot be changed."""
    require(
        inspect.isclass(SolverOptions),
        "pass the class itself, e.g. check_solver_options(SolverOptions).",
    )
    hints = [
        (
            ValueError,
            _NON_HASHABLE_STATIC,
            "jit could not hash your instance. A @dataclasses.dataclass with eq=True (the default) sets "
            "__hash__ to None; make it frozen=True, which gives a __hash__ from the fields.",
        ),
        (
            jax.errors.TracerBoolConversionError,
            "",
            "a field reached jit as a tracer: the instance must be the static argument itself, not a pytree.",
        ),
    ]
    counted = count_traces(solve)
    jitted = jax.jit(counted, static_argnums=1)
    x = np.linspace(-1.0, 1.0, 5, dtype=np.float32)
    seen: dict[tuple, int] = {}
    for method, n_iter in _SETTINGS:
        options = _run(
            SolverOptions, method, n_iter, hints=hints, what=f"SolverOptions({method!r}, {n_iter})"
        )
        for field, value in (("method", method), ("n_iter", n_iter)):
            require(
                getattr(options, field, None) == value,
                f"SolverOptions({method!r}, {n_iter}).{field} should be {value!r}: keep both fields, in this order.",
            )
        before = counted.traces
        result = _run(
            jitted, jnp.asarray(x), options, hints=hints, what="jax.jit(solve, static_argnums=1)"
        )
        require(
            close(result, _expected_solve(x, method, n_iter), rtol=1e-5, atol=1e-6),
            f"solve(x, SolverOptions({method!r}, {n_iter})) reused a program compiled for other options: "
            "== must compare every field (and __hash__ use only fields that == compares).",
        )
        if (method, n_iter) in seen:
            require(
                counted.traces == before,
                f"a new SolverOptions({method!r}, {n_iter}), equal to one already used, traced again: your "
                "instances are equal (and hash) by identity, Python's default. Compare and hash by the "
                "fields, e.g. @dataclasses.dataclass(frozen=True).",
            )
        seen[(method, n_iter)] = counted.traces
    require(
        counted.traces == 3,
        f"three distinct settings should give three traces, got {counted.traces}.",
    )
    options = _run(SolverOptions, "cos", 3, hints=hints, what="SolverOptions('cos', 3)")
    try:
        options.n_iter = 5
    except (AttributeError, TypeError):
        return
    require(
        False,
        "an instance can be changed after it is made (options.n_iter = 5 worked). jit keys its cache on "
        "the instance, so a changed one would find the program compiled for its old value, or break the "
        "cache's dictionary: make the class immutable, e.g. @dataclasses.dataclass(frozen=True).",
    )


# Exercise 2 ------------------------------------------------------------------------------------


@exercise_checker("Exercise 2 (prefix sum with a traced length)")
def check_prefix_sum(prefix_sum: Callable) -> None:
    """Checks `prefix_sum(x, n)`: the sum of the first `n` entries, with `n` traced, one trace in all."""
    require_callable(prefix_sum, "prefix_sum")
    counted = count_traces(prefix_sum)
    jitted = jax.jit(counted)  # n is an ordinary (traced) argument here, on purpose
    hints = [
        (
            ValueError,
            _NON_HASHABLE_STATIC,
            "n must stay a traced argument: marking it static recompiles for every n, which is "
            "what this exercise avoids.",
        ),
        (
            jax.errors.TracerIntegerConversionError,
            "",
            "range(n) needs a concrete Python int, but n is traced. Compare positions instead: "
            "jnp.arange(x.shape[0]) < n (x.shape is concrete while tracing).",
        ),
        (
            IndexError,
            "static",
            "x[:n] needs a concrete n, because the slice's shape would depend on it. Keep the shape "
            "fixed and mask: jnp.where(jnp.arange(x.shape[0]) < n, x, 0).",
        ),
        (
            TypeError,
            "Shapes must be 1D sequences of concrete values",
            "an array whose shape depends on n cannot be built under jit. Keep the shape "
            "x.shape and mask the entries at positions >= n.",
        ),
        (
            jax.errors.ConcretizationTypeError,
            "",
            "your function needs the value of n while tracing; it only has n's shape and dtype. "
            "Build a mask with jnp.arange(x.shape[0]) < n.",
        ),
    ]
    rng = np.random.default_rng(2)
    x = rng.normal(size=7).astype(np.float32)
    for n in range(x.size + 1):
        expected = x[:n].sum(dtype=np.float64)
        eager = _run(prefix_sum, jnp.asarray(x), n, hints=hints, what="prefix_sum")
        require_array(eager, (), what="prefix_sum", expected="the sum, a scalar")
        actual = _run(jitted, jnp.asarray(x), n, hints=hints, what="prefix_sum under jax.jit")
        actual = require_array(
            actual, (), what="prefix_sum under jax.jit", expected="the sum, a scalar"
        )
        if close(actual, expected, rtol=1e-5, atol=1e-5) and close(
            eager, expected, rtol=1e-5, atol=1e-5
        ):
            continue
        if close(actual, x[: n + 1].sum(dtype=np.float64), atol=1e-5):
            require(
                False,
                "off by one: the first n entries are positions 0 ... n-1, so use < n, not <= n.",
            )
        require(False, f"prefix_sum(x, {n}) should be {expected:.5f}, got {float(actual):.5f}.")
    require(
        counted.traces == 1,
        f"your function was traced {counted.traces} times for {x.size + 1} values of n; one trace "
        "should serve every n of the same type.",
    )
    y = rng.normal(size=11).astype(np.float32)
    actual = _run(jitted, jnp.asarray(y), 9, hints=hints, what="prefix_sum under jax.jit")
    require(
        close(actual, y[:9].sum(dtype=np.float64), atol=1e-5),
        "wrong for a longer x (11 entries, n = 9): use x.shape[0], not a fixed length, to build the mask.",
    )
    _require_one_masked_pass(prefix_sum, jnp.asarray(x), jnp.int32(3), hints)


_CUMULATIVE = {"cumsum", "cumprod", "cummax", "cummin", "cumlogsumexp"}
_READ_AT_A_POSITION = {
    "dynamic_slice",
    "gather",
    "dynamic_update_slice",
    "scatter",
    "scatter-add",
    "scatter_add",
}


def _require_one_masked_pass(prefix_sum: Callable, x, n, hints) -> None:
    """The method: one pass over all of x, selected by a mask of positions compared with n. The
    jaxpr must hold no cumulative primitive, no read at a position computed from n, no loop."""
    primitives = set(
        primitive_names(traced_program(prefix_sum, x, n, what="prefix_sum", hints=tuple(hints)))
    )
    require(
        not primitives & _CUMULATIVE,
        "the values are right, but a cumulative sum followed by a read at position n skips the lesson: "
        "it computes every prefix to keep one. Compare positions with n instead, "
        "jnp.arange(x.shape[0]) < n, and sum the entries the mask keeps.",
    )
    require(
        "while" not in primitives,
        "the values are right, but a loop whose trip count is n (lax.fori_loop) is the other fix; this "
        "exercise practises the mask: jnp.where(jnp.arange(x.shape[0]) < n, x, 0.0), then one sum.",
    )
    require(
        not primitives & _READ_AT_A_POSITION,
        "the values are right, but your program reads x (or an array made from it) at a position "
        "computed from n (an index x[n] or a dynamic_slice). Keep every read fixed and select with a "
        "mask: jnp.arange(x.shape[0]) < n.",
    )
    require(
        "iota" in primitives,
        "the values are right, but no mask of positions was built: compare jnp.arange(x.shape[0]) with n.",
    )


# Exercise 3 ------------------------------------------------------------------------------------


@exercise_checker("Exercise 3 (polynomial features with a static degree)")
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
            require(False, f"wrong values for degree = {degree} (degree passed {how}).")
    require(
        hasattr(polynomial_features, "lower"),
        "the values are right, but polynomial_features should be the jitted function itself: wrap "
        "it with jax.jit(..., static_argnames='degree') (or decorate it with functools.partial).",
    )


# Exercise 4 ------------------------------------------------------------------------------------


@exercise_checker("Exercise 4 (a polynomial class as a pytree, with a pure method)")
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
    require(
        close(
            _run(derivative, x, hints=hints, what="the derivative's __call__"),
            expected,
            rtol=1e-4,
            atol=1e-5,
        ),
        "wrong derivative: drop the constant term and multiply each coefficient by its power "
        "(for a cubic: 3, 2, 1).",
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
