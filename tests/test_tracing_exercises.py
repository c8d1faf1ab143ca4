"""Checkers of the chapter 'Tracing, abstract values and static arguments': references pass, typical mistakes fail."""

import dataclasses
from functools import partial
from typing import NamedTuple

import jax
import jax.numpy as jnp
import pytest

from jaxcourse.exercises.tracing import (
    check_polynomial_class,
    check_polynomial_features,
    check_prefix_sum,
    check_solver_options,
)
from jaxcourse.tracecount import count_traces


def stub(*args, **kwargs):
    raise NotImplementedError


@pytest.mark.parametrize("checker", [check_prefix_sum, check_polynomial_features])
def test_stub_is_not_yet(checker):
    """A stub that raises NotImplementedError gets 'no answer yet', not an exception."""
    verdict = checker(stub)
    assert not verdict
    assert "no answer yet" in verdict.message


@pytest.mark.parametrize("checker", [check_solver_options, check_polynomial_class])
def test_none_is_not_yet(checker):
    """The class exercises start from `SolverOptions = None` and `Polynomial = None`."""
    verdict = checker(None)
    assert not verdict
    assert "no answer yet" in verdict.message


@pytest.mark.parametrize("checker", [check_prefix_sum, check_polynomial_features])
def test_missing_return_gets_hint(checker):
    """A function that computes but returns None gets a hint, not a crash in the checker."""

    def no_return(*args, **kwargs):
        jnp.zeros(3)

    verdict = checker(no_return)
    assert not verdict
    assert "returned None" in verdict.message


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


@dataclasses.dataclass(frozen=True)
class FrozenOptions:
    method: str
    n_iter: int


class TupleOptions(NamedTuple):
    method: str
    n_iter: int


@pytest.mark.parametrize(
    "answer", [FrozenOptions, TupleOptions], ids=["frozen-dataclass", "namedtuple"]
)
def test_solver_options_references_pass(answer):
    """Any class that is immutable, equal and hashed by its fields passes."""
    assert check_solver_options(answer)


class PlainOptions:
    def __init__(self, method, n_iter):
        self.method, self.n_iter = method, n_iter


@dataclasses.dataclass
class EqualButUnhashable:
    method: str
    n_iter: int


@dataclasses.dataclass(unsafe_hash=True)
class MutableOptions:
    method: str
    n_iter: int


@dataclasses.dataclass(frozen=True)
class ComparesMethodOnly:
    method: str
    n_iter: int = dataclasses.field(compare=False)


@pytest.mark.parametrize(
    ("wrong", "hint"),
    [
        (PlainOptions, "are equal (and hash) by identity"),
        (EqualButUnhashable, "sets __hash__ to None"),
        (MutableOptions, "an instance can be changed after it is made"),
        (ComparesMethodOnly, "== must compare every field"),
    ],
    ids=["plain-class", "dataclass-not-frozen", "unsafe-hash", "field-left-out-of-eq"],
)
def test_solver_options_wrong_answers_fail(wrong, hint):
    verdict = check_solver_options(wrong)
    assert not verdict
    assert hint in verdict.message


# Exercise 2 ------------------------------------------------------------------------------------


def test_prefix_sum_reference_passes():
    def prefix_sum(x, n):
        return jnp.sum(jnp.where(jnp.arange(x.shape[0]) < n, x, 0.0))

    assert check_prefix_sum(prefix_sum)


def test_prefix_sum_as_a_masked_dot_product_passes():
    """Any fixed-size mask of positions passes, not only jnp.where."""
    assert check_prefix_sum(lambda x, n: (jnp.arange(x.shape[0]) < n).astype(x.dtype) @ x)


def _cumsum_then_read(x, n):
    """The review's answer: right values, but every prefix computed and one read at position n."""
    return jnp.concatenate([jnp.zeros(1), jnp.cumsum(x)])[n]


def _fori_loop(x, n):
    return jax.lax.fori_loop(0, n, lambda i, total: total + x[i], jnp.zeros((), x.dtype))


def _dynamic_window(x, n):
    """A fixed-size window that starts at a traced position: x padded, read from position n."""
    padded = jnp.concatenate([x, jnp.zeros_like(x)])
    return jnp.sum(x) - jnp.sum(jax.lax.dynamic_slice(padded, (n,), (x.shape[0],)))


@pytest.mark.parametrize(
    ("wrong", "hint"),
    [
        (_cumsum_then_read, "a cumulative sum followed by a read at position n skips the lesson"),
        (_fori_loop, "this exercise practises the mask"),
        (_dynamic_window, "at a position computed from n"),
    ],
    ids=["cumsum-then-index", "fori-loop", "dynamic-slice"],
)
def test_prefix_sum_answers_that_skip_the_mask_fail(wrong, hint):
    """Right values by another method: the checker reads the jaxpr and names the method."""
    verdict = check_prefix_sum(wrong)
    assert not verdict
    assert hint in verdict.message


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
        (
            jax.jit(lambda x, degree: x[:, None] ** jnp.arange(degree + 1)),
            "static_argnames='degree'",
        ),
        (jax.jit(_features, static_argnums=(0, 1)), "only `degree` may be static"),
        (_features, "should be the jitted function itself"),
        (
            jax.jit(
                lambda x, degree: jnp.stack([x**k for k in range(degree, -1, -1)], axis=1),
                static_argnames="degree",
            ),
            "reverse order",
        ),
        (
            jax.jit(
                lambda x, degree: jnp.stack([x**k for k in range(degree)], axis=1),
                static_argnames="degree",
            ),
            "one column per power",
        ),
    ],
    ids=["not-static", "not-static-arange", "x-static", "not-jitted", "reversed", "missing-column"],
)
def test_polynomial_features_wrong_answers_fail(wrong, hint):
    verdict = check_polynomial_features(wrong)
    assert not verdict
    assert hint in verdict.message


# Exercise 4 ------------------------------------------------------------------------------------


@jax.tree_util.register_dataclass
@dataclasses.dataclass
class ReferencePolynomial:
    coefficients: jax.Array

    def __call__(self, x):
        return jnp.polyval(self.coefficients, x)

    def derivative(self):
        degree = self.coefficients.shape[0] - 1
        return ReferencePolynomial(self.coefficients[:-1] * jnp.arange(degree, 0, -1))


def test_polynomial_class_reference_passes():
    assert check_polynomial_class(ReferencePolynomial)


@jax.tree_util.register_pytree_node_class
class NodeClassPolynomial:
    """The same answer with register_pytree_node_class, and a jitted method."""

    def __init__(self, coefficients):
        self.coefficients = coefficients

    @jax.jit
    def __call__(self, x):
        return jnp.polyval(self.coefficients, x)

    def derivative(self):
        degree = self.coefficients.shape[0] - 1
        return NodeClassPolynomial(self.coefficients[:-1] * jnp.arange(degree, 0, -1))

    def tree_flatten(self):
        return (self.coefficients,), None

    @classmethod
    def tree_unflatten(cls, aux_data, children):
        return cls(*children)


def test_polynomial_class_node_class_passes():
    assert check_polynomial_class(NodeClassPolynomial)


class PlainPolynomial:
    def __init__(self, coefficients):
        self.coefficients = coefficients

    def __call__(self, x):
        return jnp.polyval(self.coefficients, x)

    def derivative(self):
        degree = self.coefficients.shape[0] - 1
        return type(self)(self.coefficients[:-1] * jnp.arange(degree, 0, -1))


class StaticSelfPolynomial(PlainPolynomial):
    @partial(jax.jit, static_argnums=0)
    def __call__(self, x):
        return jnp.polyval(self.coefficients, x)


@jax.tree_util.register_dataclass
@dataclasses.dataclass
class MutatingPolynomial:
    coefficients: jax.Array

    def __call__(self, x):
        return jnp.polyval(self.coefficients, x)

    def derivative(self):
        degree = self.coefficients.shape[0] - 1
        self.coefficients = self.coefficients[:-1] * jnp.arange(degree, 0, -1)
        return self


@jax.tree_util.register_dataclass
@dataclasses.dataclass
class ArrayDerivativePolynomial:
    coefficients: jax.Array

    def __call__(self, x):
        return jnp.polyval(self.coefficients, x)

    def derivative(self):
        degree = self.coefficients.shape[0] - 1
        return self.coefficients[:-1] * jnp.arange(degree, 0, -1)


@jax.tree_util.register_dataclass
@dataclasses.dataclass
class PowerlessPolynomial:
    coefficients: jax.Array

    def __call__(self, x):
        return jnp.polyval(self.coefficients, x)

    def derivative(self):
        return PowerlessPolynomial(self.coefficients[:-1])


@jax.tree_util.register_dataclass
@dataclasses.dataclass
class ReversedPolynomial:
    coefficients: jax.Array

    def __call__(self, x):
        return jnp.polyval(self.coefficients[::-1], x)

    def derivative(self):
        return self


@jax.tree_util.register_pytree_node_class
class AuxPolynomial(PlainPolynomial):
    """Coefficients in aux data: no leaves at all."""

    def tree_flatten(self):
        return (), tuple(float(c) for c in self.coefficients)

    @classmethod
    def tree_unflatten(cls, aux_data, children):
        return cls(jnp.asarray(aux_data))


@pytest.mark.parametrize(
    ("wrong", "hint"),
    [
        (PlainPolynomial, "register the class as a pytree"),
        (StaticSelfPolynomial, "register the class as a pytree"),
        (AuxPolynomial, "your Polynomial has no leaves"),
        (ReversedPolynomial, "highest power first"),
        (MutatingPolynomial, "changed the polynomial it was called on"),
        (ArrayDerivativePolynomial, "should return a new Polynomial"),
        (PowerlessPolynomial, "wrong derivative"),
    ],
    ids=[
        "plain-class",
        "static-self",
        "aux-data",
        "reversed",
        "mutating",
        "returns-array",
        "no-powers",
    ],
)
def test_polynomial_class_wrong_answers_fail(wrong, hint):
    verdict = check_polynomial_class(wrong)
    assert not verdict
    assert hint in verdict.message


def test_polynomial_class_static_self_on_pytree_gets_hint():
    """A pytree dataclass (eq=True, so unhashable) with a static `self` fails with a hint."""

    @jax.tree_util.register_dataclass
    @dataclasses.dataclass
    class Polynomial:
        coefficients: jax.Array

        @partial(jax.jit, static_argnums=0)
        def __call__(self, x):
            return jnp.polyval(self.coefficients, x)

        def derivative(self):
            degree = self.coefficients.shape[0] - 1
            return Polynomial(self.coefficients[:-1] * jnp.arange(degree, 0, -1))

    verdict = check_polynomial_class(Polynomial)
    assert not verdict
    assert "Don't mark self static" in verdict.message
