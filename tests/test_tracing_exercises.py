"""Checkers of the chapter 'Tracing, abstract values and static arguments': references pass, typical mistakes fail."""

import dataclasses
from functools import partial

import jax
import jax.numpy as jnp
import pytest

from jaxcourse.exercises.tracing import (
    check_dense,
    check_mean_of_positives,
    check_polynomial_features,
    check_prefix_sum,
)
from jaxcourse.tracecount import count_traces


def stub(*args, **kwargs):
    raise NotImplementedError


@pytest.mark.parametrize("checker", [check_mean_of_positives, check_prefix_sum, check_polynomial_features])
def test_stub_is_not_yet(checker):
    """A stub that raises NotImplementedError gets 'no answer yet', not an exception."""
    verdict = checker(stub)
    assert not verdict
    assert "no answer yet" in verdict.message


def test_none_is_not_yet():
    """The class exercise starts from `Dense = None`."""
    verdict = check_dense(None)
    assert not verdict
    assert "no answer yet" in verdict.message


def test_count_traces_counts_traces_not_calls():
    """Under jit, the wrapper's count grows only when JAX traces."""
    counted = count_traces(lambda x, n: x * n)
    fast = jax.jit(counted, static_argnames="n")
    fast(jnp.ones(3), 2)
    fast(jnp.zeros(3), 2)
    assert counted.traces == 1
    fast(jnp.ones(3), n=3)
    assert counted.traces == 2


# Exercise 1 ------------------------------------------------------------------------------------


def test_mean_of_positives_reference_passes():
    def mean_of_positives(x):
        positive = x > 0
        return jnp.sum(jnp.where(positive, x, 0.0)) / jnp.sum(positive)

    assert check_mean_of_positives(mean_of_positives)


@pytest.mark.parametrize(
    ("wrong", "hint"),
    [
        (lambda x: x[x > 0].mean(), "jnp.where(x > 0, x, 0.0)"),
        (lambda x: jnp.mean(jnp.where(x > 0, x, 0.0)), "not by x.size"),
        (lambda x: jnp.sum(jnp.where(x >= 0, x, 0.0)) / jnp.sum(x >= 0), "zeros are not positive"),
        (lambda x: jnp.where(x > 0, x, 0.0), "must be a scalar"),
    ],
    ids=["boolean-mask", "mean-over-all", "counts-zeros", "not-reduced"],
)
def test_mean_of_positives_wrong_answers_fail(wrong, hint):
    verdict = check_mean_of_positives(wrong)
    assert not verdict
    assert hint in verdict.message


def test_mean_of_positives_python_if_gets_hint():
    def with_if(x):
        total = 0.0
        for value in x:
            if value > 0:
                total = total + value
        return total

    verdict = check_mean_of_positives(with_if)
    assert not verdict
    assert "select values with jnp.where" in verdict.message


# Exercise 2 ------------------------------------------------------------------------------------


def test_prefix_sum_reference_passes():
    def prefix_sum(x, n):
        return jnp.sum(jnp.where(jnp.arange(x.shape[0]) < n, x, 0.0))

    assert check_prefix_sum(prefix_sum)


def test_prefix_sum_fori_loop_also_passes():
    def prefix_sum(x, n):
        return jax.lax.fori_loop(0, n, lambda i, total: total + x[i], jnp.zeros((), x.dtype))

    assert check_prefix_sum(prefix_sum)


@pytest.mark.parametrize(
    ("wrong", "hint"),
    [
        (lambda x, n: jnp.sum(x[:n]), "x[:n] needs a concrete n"),
        (lambda x, n: sum(x[i] for i in range(n)), "range(n) needs a concrete Python int"),
        (jax.jit(lambda x, n: jnp.sum(x[:n]), static_argnums=1), "n must stay a traced argument"),
        (lambda x, n: jnp.sum(jnp.where(jnp.arange(x.shape[0]) <= n, x, 0.0)), "off by one"),
        (lambda x, n: jnp.sum(jnp.where(jnp.arange(7) < n, x[:7], 0.0)), "use x.shape[0]"),
    ],
    ids=["traced-slice", "python-range", "static-n", "off-by-one", "hard-coded-length"],
)
def test_prefix_sum_wrong_answers_fail(wrong, hint):
    verdict = check_prefix_sum(wrong)
    assert not verdict
    assert hint in verdict.message


# Exercise 3 ------------------------------------------------------------------------------------


def _features(x, degree):
    return jnp.stack([x**k for k in range(degree + 1)], axis=1)


def test_polynomial_features_reference_passes():
    polynomial_features = jax.jit(_features, static_argnames="degree")
    assert check_polynomial_features(polynomial_features)


def test_polynomial_features_static_argnums_also_passes():
    @partial(jax.jit, static_argnums=1)
    def polynomial_features(x, degree):
        return x[:, None] ** jnp.arange(degree + 1)

    assert check_polynomial_features(polynomial_features)


@pytest.mark.parametrize(
    ("wrong", "hint"),
    [
        (jax.jit(_features), "static_argnames='degree'"),
        (jax.jit(lambda x, degree: x[:, None] ** jnp.arange(degree + 1)), "static_argnames='degree'"),
        (jax.jit(_features, static_argnums=(0, 1)), "only `degree` may be static"),
        (_features, "should be the jitted function itself"),
        (
            jax.jit(lambda x, degree: jnp.stack([x**k for k in range(degree, -1, -1)], axis=1), static_argnames="degree"),
            "reverse order",
        ),
        (jax.jit(lambda x, degree: jnp.stack([x**k for k in range(degree)], axis=1), static_argnames="degree"), "needs shape"),
    ],
    ids=["not-static", "not-static-arange", "x-static", "not-jitted", "reversed", "missing-column"],
)
def test_polynomial_features_wrong_answers_fail(wrong, hint):
    verdict = check_polynomial_features(wrong)
    assert not verdict
    assert hint in verdict.message


# Exercise 4 ------------------------------------------------------------------------------------


def _activate(activation, z):
    if activation == "relu":
        return jax.nn.relu(z)
    if activation == "tanh":
        return jnp.tanh(z)
    return z


@jax.tree_util.register_dataclass
@dataclasses.dataclass
class ReferenceDense:
    weight: jax.Array
    bias: jax.Array
    activation: str = jax.tree.static(default="relu")

    def __call__(self, x):
        return _activate(self.activation, x @ self.weight + self.bias)


def test_dense_reference_passes():
    assert check_dense(ReferenceDense)


def test_dense_with_jitted_method_passes():
    @jax.tree_util.register_dataclass
    @dataclasses.dataclass
    class Dense:
        weight: jax.Array
        bias: jax.Array
        activation: str = jax.tree.static(default="relu")

        @jax.jit
        def __call__(self, x):
            return _activate(self.activation, x @ self.weight + self.bias)

    assert check_dense(Dense)


class PlainDense:
    def __init__(self, weight, bias, activation="relu"):
        self.weight, self.bias, self.activation = weight, bias, activation

    def __call__(self, x):
        return _activate(self.activation, x @ self.weight + self.bias)


class StaticSelfDense(PlainDense):
    @partial(jax.jit, static_argnums=0)
    def __call__(self, x):
        return _activate(self.activation, x @ self.weight + self.bias)


@jax.tree_util.register_dataclass
@dataclasses.dataclass
class StringLeafDense:
    weight: jax.Array
    bias: jax.Array
    activation: str = "relu"

    def __call__(self, x):
        return _activate(self.activation, x @ self.weight + self.bias)


@jax.tree_util.register_dataclass
@dataclasses.dataclass
class StaticWeightDense:
    weight: jax.Array = jax.tree.static()
    bias: jax.Array = jax.tree.static()
    activation: str = jax.tree.static(default="relu")

    def __call__(self, x):
        return _activate(self.activation, x @ self.weight + self.bias)


@jax.tree_util.register_dataclass
@dataclasses.dataclass
class IgnoresActivationDense:
    weight: jax.Array
    bias: jax.Array
    activation: str = jax.tree.static(default="relu")

    def __call__(self, x):
        return jnp.tanh(x @ self.weight + self.bias)


@pytest.mark.parametrize(
    ("wrong", "hint"),
    [
        (PlainDense, "register the class as a pytree"),
        (StaticSelfDense, "register the class as a pytree"),
        (StringLeafDense, "activation is a leaf"),
        (StaticWeightDense, "exactly two leaves"),
        (IgnoresActivationDense, "model(x) is wrong for activation='relu'"),
    ],
    ids=["plain-class", "static-self", "string-leaf", "static-arrays", "ignores-activation"],
)
def test_dense_wrong_answers_fail(wrong, hint):
    verdict = check_dense(wrong)
    assert not verdict
    assert hint in verdict.message


def test_dense_static_self_on_pytree_gets_hint():
    """A pytree dataclass (eq=True, unhashable) with a static `self` cannot be hashed."""

    @jax.tree_util.register_dataclass
    @dataclasses.dataclass
    class Dense:
        weight: jax.Array
        bias: jax.Array
        activation: str = jax.tree.static(default="relu")

        @partial(jax.jit, static_argnums=0)
        def __call__(self, x):
            return _activate(self.activation, x @ self.weight + self.bias)

    verdict = check_dense(Dense)
    assert not verdict
    assert "Don't mark self static" in verdict.message
