"""More wrong answers to the tracing chapter's exercises, written from the exercise texts alone as
a hurried learner would (issue 27): each must fail, with a hint that names what the answer did."""

import dataclasses
from functools import partial

import jax
import jax.numpy as jnp
import pytest
from wrong_answers import assert_fails_with

from jaxcourse.exercises.tracing import (
    check_polynomial_class,
    check_polynomial_features,
    check_prefix_sum,
    check_solver_options,
)


# Exercise 1 -------------------------------------------------------------
class options_plain:
    def __init__(self, method, n_iter):
        self.method, self.n_iter = method, n_iter


@dataclasses.dataclass
class options_mutable_dataclass:
    method: str
    n_iter: int


@dataclasses.dataclass(unsafe_hash=True)
class options_unsafe_hash:
    method: str
    n_iter: int


class options_eq_on_method_only:
    def __init__(self, method, n_iter):
        object.__setattr__(self, "method", method)
        object.__setattr__(self, "n_iter", n_iter)

    def __eq__(self, other):
        return self.method == other.method

    def __hash__(self):
        return hash(self.method)

    def __setattr__(self, name, value):
        raise AttributeError("frozen")


@dataclasses.dataclass(frozen=True)
class options_fields_swapped:
    n_iter: int
    method: str


class options_constant_hash:
    __slots__ = ("method", "n_iter")

    def __init__(self, method, n_iter):
        object.__setattr__(self, "method", method)
        object.__setattr__(self, "n_iter", n_iter)

    def __eq__(self, other):
        return True

    def __hash__(self):
        return 0

    def __setattr__(self, name, value):
        raise AttributeError("frozen")


# Exercise 2 -------------------------------------------------------------


def prefix_fixed_length(x, n):
    return jnp.sum(jnp.where(jnp.arange(7) < n, x[:7], 0.0))


def prefix_returns_masked(x, n):
    return jnp.where(jnp.arange(x.shape[0]) < n, x, 0.0)


def prefix_mask_by_value(x, n):
    return jnp.sum(jnp.where(x < n, x, 0.0))


def prefix_python_range(x, n):
    return sum(x[i] for i in range(n))


def prefix_from_the_end(x, n):
    return jnp.sum(jnp.where(jnp.arange(x.shape[0]) >= x.shape[0] - n, x, 0.0))


def prefix_integer_sum(x, n):
    return jnp.sum(jnp.where(jnp.arange(x.shape[0]) < n, x, 0.0)).astype(jnp.int32)


# Exercise 3 -------------------------------------------------------------
def features_not_jitted(x, degree):
    """The right columns from a plain function: the exercise asks for the jitted function itself."""
    return jnp.stack([x**k for k in range(degree + 1)], axis=1)


@jax.jit
def features_degree_traced(x, degree):
    """Jitted without marking `degree` static: `range(degree + 1)` receives a tracer and raises
    TracerIntegerConversionError."""
    return jnp.stack([x**k for k in range(degree + 1)], axis=1)


@partial(jax.jit, static_argnames="degree")
def features_no_constant(x, degree):
    return jnp.stack([x**k for k in range(1, degree + 1)], axis=1)


@partial(jax.jit, static_argnames="degree")
def features_transposed(x, degree):
    return jnp.stack([x**k for k in range(degree + 1)], axis=0)


@partial(jax.jit, static_argnames="degree")
def features_one_short(x, degree):
    return jnp.stack([x**k for k in range(degree)] + [jnp.zeros_like(x)], axis=1)


@partial(jax.jit, static_argnums=1)
def features_vander(x, degree):
    return jnp.vander(x, degree + 1)


# Exercise 4 -------------------------------------------------------------


@jax.tree_util.register_dataclass
@dataclasses.dataclass
class poly_wrong_powers:
    coefficients: jax.Array

    def __call__(self, x):
        return jnp.polyval(self.coefficients, x)

    def derivative(self):
        n = self.coefficients.shape[0] - 1
        return poly_wrong_powers(self.coefficients[:-1] * jnp.arange(1, n + 1))


@jax.tree_util.register_dataclass
@dataclasses.dataclass
class poly_derivative_returns_array:
    coefficients: jax.Array

    def __call__(self, x):
        return jnp.polyval(self.coefficients, x)

    def derivative(self):
        n = self.coefficients.shape[0] - 1
        return self.coefficients[:-1] * jnp.arange(n, 0, -1)


@jax.tree_util.register_dataclass
@dataclasses.dataclass
class poly_lowest_first:
    coefficients: jax.Array

    def __call__(self, x):
        return jnp.polyval(self.coefficients[::-1], x)

    def derivative(self):
        n = self.coefficients.shape[0] - 1
        return poly_lowest_first(self.coefficients[:-1] * jnp.arange(n, 0, -1))


@jax.tree_util.register_dataclass
@dataclasses.dataclass(frozen=True)
class poly_static_coefficients:
    coefficients: jax.Array = jax.tree.static()

    def __call__(self, x):
        return jnp.polyval(self.coefficients, x)

    def derivative(self):
        n = self.coefficients.shape[0] - 1
        return poly_static_coefficients(self.coefficients[:-1] * jnp.arange(n, 0, -1))


@jax.tree_util.register_dataclass
@dataclasses.dataclass
class poly_degree_leaf:
    coefficients: jax.Array
    degree: int

    def __init__(self, coefficients, degree=None):
        self.coefficients = coefficients
        self.degree = coefficients.shape[0] - 1 if degree is None else degree

    def __call__(self, x):
        return jnp.polyval(self.coefficients, x)

    def derivative(self):
        return poly_degree_leaf(self.coefficients[:-1] * jnp.arange(self.degree, 0, -1))


@jax.tree_util.register_dataclass
@dataclasses.dataclass
class poly_keeps_constant:
    coefficients: jax.Array

    def __call__(self, x):
        return jnp.polyval(self.coefficients, x)

    def derivative(self):
        n = self.coefficients.shape[0] - 1
        return poly_keeps_constant(self.coefficients[1:] * jnp.arange(n, 0, -1))


# The tests --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("answer", "fragment"),
    [
        (options_plain, "equal (and hash) by identity"),
        (options_mutable_dataclass, "jit could not hash your instance"),
        (options_unsafe_hash, "an instance can be changed after it is made"),
        (options_eq_on_method_only, "reused a program compiled for other options"),
        (options_fields_swapped, "should be 'cos', got 3"),
        (options_constant_hash, "== must compare every field"),
    ],
)
def test_solver_options_wrong_answers(answer, fragment):
    assert_fails_with(check_solver_options(answer), fragment)


@pytest.mark.parametrize(
    ("answer", "fragment"),
    [
        (prefix_mask_by_value, "your mask compares x with n"),
        (prefix_from_the_end, "the sum of the *last* 1 entries"),
        (prefix_integer_sum, "your sum is an integer (int32)"),
        (prefix_fixed_length, "not a fixed length"),
        (prefix_returns_masked, "got an array of shape (7,)"),
        (prefix_python_range, "range(n) needs a concrete Python int"),
    ],
)
def test_prefix_sum_wrong_answers(answer, fragment):
    assert_fails_with(check_prefix_sum(answer), fragment)


def prefix_full_length_loop(x, n):
    """A loop over all of x that masks each entry by its index: the page allows it."""
    return jax.lax.fori_loop(
        0, x.shape[0], lambda i, total: total + jnp.where(i < n, x[i], 0.0), jnp.zeros((), x.dtype)
    )


def prefix_full_length_while(x, n):
    """The same with a while_loop over all of x (its trip count is x's length, not n)."""

    def body(state):
        i, total = state
        return i + 1, total + jnp.where(i < n, x[i], 0.0)

    return jax.lax.while_loop(lambda s: s[0] < x.shape[0], body, (0, jnp.zeros((), x.dtype)))[1]


def test_prefix_sum_a_full_length_loop_that_masks_by_index_passes():
    """It reads x[i] at the loop's index, every i, for every n: no read at a position from n."""
    verdict = check_prefix_sum(prefix_full_length_loop)
    assert verdict, verdict.message
    verdict = check_prefix_sum(prefix_full_length_while)
    assert verdict, verdict.message


def prefix_loop_reads_at_n(x, n):
    """A full-length loop that reads x at a position computed from n, x[n - 1 - i]."""
    return jax.lax.fori_loop(
        0,
        x.shape[0],
        lambda i, total: total + jnp.where(i < n, x[jnp.maximum(n - 1 - i, 0)], 0.0),
        jnp.zeros((), x.dtype),
    )


def prefix_while_up_to_n(x, n):
    """A while_loop whose condition compares its counter with n: n iterations."""

    def body(state):
        i, total = state
        return i + 1, total + x[i]

    return jax.lax.while_loop(lambda s: s[0] < n, body, (0, jnp.zeros((), x.dtype)))[1]


@pytest.mark.parametrize(
    ("answer", "fragment"),
    [
        (prefix_loop_reads_at_n, "at a position computed from n"),
        (prefix_while_up_to_n, "a loop whose trip count is n"),
    ],
)
def test_prefix_sum_loops_that_depend_on_n_still_fail(answer, fragment):
    assert_fails_with(check_prefix_sum(answer), fragment)


@pytest.mark.parametrize(
    ("answer", "fragment"),
    [
        (features_not_jitted, "should be the jitted function itself"),
        (features_degree_traced, "degree reached range() as a tracer"),
        (features_no_constant, "got an array of shape (5, 1)"),
        (features_transposed, "got an array of shape (2, 5)"),
        (features_one_short, "column 1 should be x**1"),
        (features_vander, "the columns are in reverse order"),
    ],
)
def test_polynomial_features_wrong_answers(answer, fragment):
    assert_fails_with(check_polynomial_features(answer), fragment)


@pytest.mark.parametrize(
    ("answer", "fragment"),
    [
        (poly_static_coefficients, "your Polynomial has no leaves"),
        (poly_wrong_powers, "you multiplied the coefficients by 1, 2, 3"),
        (poly_keeps_constant, "you dropped the first coefficient"),
        (poly_lowest_first, "evaluate with the highest power first"),
        (poly_derivative_returns_array, "should return a new Polynomial, got ArrayImpl"),
        (poly_degree_leaf, "yours has 2 leaves"),
    ],
)
def test_polynomial_class_wrong_answers(answer, fragment):
    assert_fails_with(check_polynomial_class(answer), fragment)
