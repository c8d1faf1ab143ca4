"""Wrong answers to the glossary's exercise, written from the exercise text alone as a hurried
learner would (issue 27, point 4): each must fail, with a hint that names what the answer did."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxcourse.exercises.glossary import check_abstract_tree


def leaf_dtype_attribute(tree):
    """leaf.dtype: a Python number has none."""
    return jax.tree.map(lambda leaf: jax.ShapeDtypeStruct(leaf.shape, leaf.dtype), tree)


def numpy_dtype(tree):
    """NumPy's dtype of a Python float is float64, not what JAX traces with."""
    return jax.tree.map(
        lambda leaf: jax.ShapeDtypeStruct(np.shape(leaf), np.asarray(leaf).dtype), tree
    )


def always_float32(tree):
    """The right shapes, but every dtype float32."""
    return jax.tree.map(lambda leaf: jax.ShapeDtypeStruct(jnp.shape(leaf), jnp.float32), tree)


def the_leaves_themselves(tree):
    """Arrays in place of abstract values: the data, not their shapes and dtypes."""
    return jax.tree.map(jnp.asarray, tree)


def flat_list(tree):
    """The abstract values, but as a flat list of leaves: the structure is lost."""
    return [jax.ShapeDtypeStruct(jnp.shape(x), jnp.result_type(x)) for x in jax.tree.leaves(tree)]


def python_numbers_left_as_they_are(tree):
    """Arrays get abstract values; a Python number, which has no .shape, is kept as it is."""
    return jax.tree.map(
        lambda leaf: (
            jax.ShapeDtypeStruct(leaf.shape, leaf.dtype) if hasattr(leaf, "shape") else leaf
        ),
        tree,
    )


def none_as_a_scalar(tree):
    """None treated as a leaf and given an abstract value of its own."""
    return jax.tree.map(
        lambda leaf: (
            jax.ShapeDtypeStruct((), jnp.float32)
            if leaf is None
            else jax.ShapeDtypeStruct(jnp.shape(leaf), jnp.result_type(leaf))
        ),
        tree,
        is_leaf=lambda leaf: leaf is None,
    )


def transposed_shapes(tree):
    """Shapes reversed (a hurried reading of a matrix's shape)."""
    return jax.tree.map(
        lambda leaf: jax.ShapeDtypeStruct(jnp.shape(leaf)[::-1], jnp.result_type(leaf)), tree
    )


@pytest.mark.parametrize(
    ("wrong", "hint"),
    [
        (leaf_dtype_attribute, "a leaf that has neither: the tree holds Python numbers"),
        (numpy_dtype, "NumPy's dtype for a Python number"),
        (always_float32, "rather than a fixed one"),
        (the_leaves_themselves, "still data (ArrayImpl)"),
        (flat_list, "got a list of 3 items"),
        (python_numbers_left_as_they_are, "still data (float)"),
        (none_as_a_scalar, "None became a leaf"),
        (transposed_shapes, "a leaf of shape (3, 2) got shape (2, 3)"),
    ],
)
def test_abstract_tree_wrong_answers_fail(wrong, hint):
    verdict = check_abstract_tree(wrong)
    assert not verdict, f"{wrong.__name__} passed"
    assert hint in verdict.message, verdict.message
