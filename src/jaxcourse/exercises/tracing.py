"""Checkers for the exercises of the chapter 'Tracing, abstract values and static arguments'."""

from __future__ import annotations

import inspect
from typing import Callable

import jax
import jax.numpy as jnp
import numpy as np

from ..checks import CheckFailed, exercise_checker, require
from ..tracecount import count_traces

_NON_HASHABLE_STATIC = "Non-hashable static arguments"
_ARRAY_METADATA = "metadata fields"


def _run(call: Callable, hints: list[tuple[type, str, str]]):
    """Runs `call()`; a JAX error matching one of `hints` becomes a `CheckFailed` with its hint.

    Each hint is `(error class, message fragment or "", hint)`; the first match wins, so
    subclasses must come before their parents. Other exceptions propagate unchanged.
    """
    try:
        return call()
    except NotImplementedError:
        raise
    except Exception as error:
        for error_class, fragment, hint in hints:
            if isinstance(error, error_class) and fragment in str(error):
                raise CheckFailed(f"{hint} (JAX raised {type(error).__name__}.)") from None
        raise


def _close(actual, expected, rtol: float = 1e-5, atol: float = 1e-5) -> bool:
    actual = np.asarray(actual)
    return actual.shape == np.shape(expected) and bool(np.allclose(actual, expected, rtol=rtol, atol=atol))


# Exercise 1 ------------------------------------------------------------------------------------


def _mean_of_positives_inputs() -> list[np.ndarray]:
    rng = np.random.default_rng(1)
    samples = [np.array([-2.0, 0.0, 1.0, 3.0, -1.0, 0.0], dtype=np.float32)]
    for size in (6, 6, 50):
        x = rng.normal(size=size).astype(np.float32)
        x[0] = abs(x[0]) + 0.5  # at least one positive entry
        x[1] = 0.0  # zeros are not positive
        samples.append(x)
    return samples


@exercise_checker("Exercise 1 (mean of the positive entries under jit)")
def check_mean_of_positives(mean_of_positives: Callable) -> None:
    """Checks `mean_of_positives(x)`: the mean of the strictly positive entries of a 1-D array."""
    require(callable(mean_of_positives), "pass the function itself, e.g. check_mean_of_positives(mean_of_positives).")
    jitted = jax.jit(mean_of_positives)
    hints = [
        (
            jax.errors.NonConcreteBooleanIndexError,
            "",
            "x[x > 0] has a shape that depends on the data, which jit cannot compile. Keep the "
            "shape fixed: jnp.where(x > 0, x, 0.0) zeroes the others, and jnp.sum(x > 0) counts.",
        ),
        (
            jax.errors.TracerBoolConversionError,
            "",
            "a Python `if` (or `and`/`or`) on a traced value cannot be decided while tracing; "
            "select values with jnp.where instead of branching.",
        ),
        (
            jax.errors.ConcretizationTypeError,
            "",
            "your function needs a concrete value that only exists at run time (float(), .item(), "
            "jnp.unique without size=...). Use jnp.where and jnp.sum, which keep shapes fixed.",
        ),
    ]
    for x in _mean_of_positives_inputs():
        positives = x[x > 0]
        expected = positives.sum(dtype=np.float64) / positives.size
        actual = _run(lambda: jitted(jnp.asarray(x)), hints)
        require(np.shape(actual) == (), f"the result must be a scalar, got shape {np.shape(actual)}.")
        if _close(actual, expected):
            continue
        require(
            not _close(actual, positives.sum(dtype=np.float64) / x.size),
            "you averaged over every entry: divide the sum of the positive entries by how many "
            "there are (jnp.sum(x > 0)), not by x.size.",
        )
        nonnegative = x[x >= 0]
        require(
            not _close(actual, nonnegative.sum(dtype=np.float64) / nonnegative.size),
            "zeros are not positive: use x > 0, not x >= 0, so they are not counted.",
        )
        require(False, f"wrong value for x = {np.round(x, 3).tolist()}: expected {expected:.5f}, got {float(actual):.5f}.")


# Exercise 2 ------------------------------------------------------------------------------------


@exercise_checker("Exercise 2 (prefix sum with a traced length)")
def check_prefix_sum(prefix_sum: Callable) -> None:
    """Checks `prefix_sum(x, n)`: the sum of the first `n` entries, with `n` traced, one trace in all."""
    require(callable(prefix_sum), "pass the function itself, e.g. check_prefix_sum(prefix_sum).")
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
        actual = _run(lambda: jitted(jnp.asarray(x), n), hints)
        require(np.shape(actual) == (), f"the result must be a scalar, got shape {np.shape(actual)}.")
        if _close(actual, expected):
            continue
        if _close(actual, x[: n + 1].sum(dtype=np.float64)):
            require(False, "off by one: the first n entries are positions 0 ... n-1, so use < n, not <= n.")
        require(False, f"prefix_sum(x, {n}) should be {expected:.5f}, got {float(actual):.5f}.")
    require(
        counted.traces == 1,
        f"your function was traced {counted.traces} times for {x.size + 1} values of n; one trace "
        "should serve every n of the same type.",
    )
    y = rng.normal(size=11).astype(np.float32)
    actual = _run(lambda: jitted(jnp.asarray(y), 9), hints)
    require(
        _close(actual, y[:9].sum(dtype=np.float64)),
        "wrong for a longer x (11 entries, n = 9): use x.shape[0], not a fixed length, to build the mask.",
    )


# Exercise 3 ------------------------------------------------------------------------------------


@exercise_checker("Exercise 3 (polynomial features with a static degree)")
def check_polynomial_features(polynomial_features: Callable) -> None:
    """Checks a jitted `polynomial_features(x, degree)` -> columns x**0 ... x**degree, degree static."""
    require(callable(polynomial_features), "pass the jitted function, e.g. check_polynomial_features(polynomial_features).")
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
        for how, call in (
            ("positionally", lambda: polynomial_features(jnp.asarray(x), degree)),
            ("by keyword", lambda: polynomial_features(jnp.asarray(x), degree=degree)),
        ):
            actual = _run(call, hints)
            require(
                np.shape(actual) == expected.shape,
                f"for len(x) = {x.size} and degree = {degree} the result needs shape {expected.shape} "
                f"(one column per power 0 ... degree), got {np.shape(actual)} (degree passed {how}).",
            )
            if _close(actual, expected, rtol=1e-4):
                continue
            require(
                not _close(actual, expected[:, ::-1], rtol=1e-4),
                "the columns are in reverse order: column k must be x**k, starting with a column of ones.",
            )
            require(False, f"wrong values for degree = {degree} (degree passed {how}).")
    require(
        hasattr(polynomial_features, "lower"),
        "the values are right, but polynomial_features should be the jitted function itself: wrap "
        "it with jax.jit(..., static_argnames='degree') (or decorate it with functools.partial).",
    )


# Exercise 4 ------------------------------------------------------------------------------------


def _reference_dense(weight, bias, activation, x):
    z = x @ weight + bias
    return {"relu": np.maximum(z, 0.0), "tanh": np.tanh(z), "identity": z}[activation]


@exercise_checker("Exercise 4 (a dense layer as a pytree)")
def check_dense(Dense: type) -> None:
    """Checks a pytree class `Dense(weight=, bias=, activation=)` whose instances share compilations."""
    require(inspect.isclass(Dense), "pass the class itself, e.g. check_dense(Dense).")
    rng = np.random.default_rng(4)

    def make(activation: str, shift: float = 0.0):
        weight = jnp.asarray(rng.normal(size=(3, 2)).astype(np.float32) + shift)
        bias = jnp.asarray(rng.normal(size=2).astype(np.float32))
        return Dense(weight=weight, bias=bias, activation=activation), weight, bias

    first, w1, b1 = make("tanh")
    leaves = jax.tree.leaves(first)
    require(
        not (len(leaves) == 1 and leaves[0] is first),
        "JAX sees a Dense as one opaque leaf: register the class as a pytree, e.g. with "
        "@jax.tree_util.register_dataclass on a @dataclasses.dataclass.",
    )
    require(
        not any(isinstance(leaf, str) for leaf in leaves),
        "activation is a leaf, and jit cannot trace a string: declare it with "
        "activation: str = jax.tree.static(default='relu') (or register it as static metadata).",
    )
    require(
        len(leaves) == 2,
        f"a Dense should have exactly two leaves, weight and bias; yours has {len(leaves)}. "
        "Arrays must be leaves (traced), never static fields.",
    )
    hints = [
        (
            ValueError,
            _ARRAY_METADATA,
            "an array ended up in the static metadata: weight and bias must be ordinary "
            "(leaf) fields, only activation is static.",
        ),
        (
            ValueError,
            _NON_HASHABLE_STATIC,
            "the instance is passed as a static argument, but it is not hashable (a dataclass with "
            "eq=True is not). Don't mark self static: a pytree goes through jit as an argument.",
        ),
        (
            TypeError,
            "as an abstract array",
            "jit could not turn an argument into an abstract array: register Dense as a pytree "
            "with activation as a static field.",
        ),
    ]

    def forward(model, x):
        return model(x)

    counted = count_traces(forward)
    apply = jax.jit(counted)
    x = jnp.asarray(rng.normal(size=(4, 3)).astype(np.float32))
    second, w2, b2 = make("tanh", shift=1.0)
    third, w3, b3 = make("relu")
    for model, weight, bias, activation in (
        (first, w1, b1, "tanh"),
        (second, w2, b2, "tanh"),
        (third, w3, b3, "relu"),
    ):
        expected = _reference_dense(np.asarray(weight), np.asarray(bias), activation, np.asarray(x))
        eager = _run(lambda: model(x), hints)
        require(
            _close(eager, expected),
            f"model(x) is wrong for activation={activation!r}: it should be "
            "activation(x @ weight + bias), with 'relu', 'tanh' or 'identity'.",
        )
        through_jit = _run(lambda: apply(model, x), hints)
        require(_close(through_jit, expected), f"jax.jit(lambda m, x: m(x)) gives a wrong result for activation={activation!r}.")
        if model is second:
            require(
                counted.traces == 1,
                "two layers with the same shapes and activation were traced twice: weight and "
                "bias should be traced leaves, so one compilation serves both.",
            )
    require(
        counted.traces == 2,
        "changing the activation should trigger a new trace (it is static); it did not: is it "
        "declared static?",
    )
