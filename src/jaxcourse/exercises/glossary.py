"""Checker for the exercise of the glossary appendix."""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from ..checks import CheckFailed, call_answer, describe, exercise_checker, require, require_accepts


class _Layer(NamedTuple):
    w: jax.Array
    b: jax.Array | None


def _trees() -> dict[str, object]:
    return {
        "a dict with an array, None, a Python float and a Python int": {
            "w": jnp.ones((3, 2)),
            "b": None,
            "scale": 0.5,
            "steps": 3,
        },
        "a tuple of a float16 array and a boolean NumPy array": (
            jnp.ones(4, jnp.float16),
            np.ones(2, bool),
        ),
        "a list of a Python bool and a NumPy float64 array": [True, np.ones((2, 3), np.float64)],
        "a NamedTuple layer": _Layer(jnp.zeros((2, 2)), jnp.zeros(2)),
        "a single array": jnp.arange(5),
    }


def _expected_dtype(leaf) -> np.dtype:
    return np.dtype(jnp.result_type(leaf))  # Python scalars: JAX's default float32 / int32


_NUMBER_HINTS = (
    (
        AttributeError,
        "object has no attribute",
        "abstract_tree read .shape or .dtype of a leaf that has neither: the tree holds Python "
        "numbers (and None). jnp.shape(leaf) and jnp.result_type(leaf) work for every leaf.",
    ),
)


def _none_made_a_leaf(tree, answer) -> bool:
    """Whether `answer` has the structure of `tree` with its Nones counted as leaves."""
    is_none = lambda x: x is None  # noqa: E731
    with_nones = jax.tree.structure(tree, is_leaf=is_none)
    return jax.tree.structure(answer) == with_nones and with_nones != jax.tree.structure(tree)  # type: ignore[operator]  # jaxlib ships no stub for PyTreeDef


def _shape_and_dtype(abstract, case: str) -> tuple[tuple, np.dtype]:
    """The shape (a tuple) and NumPy dtype of an answer's leaf; a hint when they are no such thing."""
    try:
        return tuple(abstract.shape), np.dtype(abstract.dtype)
    except (TypeError, ValueError):
        raise CheckFailed(
            f"for {case}, a leaf's .shape should be a tuple of ints and its .dtype a dtype, got "
            f"{abstract.shape!r} and {abstract.dtype!r}: build it with jax.ShapeDtypeStruct(shape, dtype)."
        ) from None


@exercise_checker(
    hints=(
        "jax.tree.map(f, tree) keeps the structure and skips None; f builds one "
        "jax.ShapeDtypeStruct(shape, dtype) per leaf.",
        "Take the shape with jnp.shape(leaf) and the dtype with jnp.result_type(leaf), "
        "which also work for Python numbers (a float becomes float32, an int int32, a bool "
        "bool); leaf.dtype fails on them, and np.float64 is not what JAX traces with.",
    )
)
def check_abstract_tree(abstract_tree: Callable) -> None:
    """Checks `abstract_tree(tree)`: the same tree with a `jax.ShapeDtypeStruct` for every leaf."""
    require_accepts(abstract_tree, {"w": jnp.ones(2)}, what="abstract_tree")
    for case, tree in _trees().items():
        answer = call_answer(abstract_tree, tree, what="abstract_tree", hints=_NUMBER_HINTS)
        leaves, treedef = jax.tree.flatten(tree)
        answer_leaves, answer_treedef = jax.tree.flatten(answer)
        require(
            answer_treedef == treedef or not _none_made_a_leaf(tree, answer),  # type: ignore[operator]  # jaxlib ships no stub for PyTreeDef
            f"for {case}, None became a leaf with an abstract value of its own: None is an empty "
            "subtree, not a leaf. Keep it as None (jax.tree.map skips it unless is_leaf says "
            "otherwise).",
        )
        require(
            answer_treedef == treedef,  # type: ignore[operator]  # jaxlib ships no stub for PyTreeDef
            f"for {case}, the answer should keep the tree's structure (its treedef, {treedef}), got "
            f"{describe(answer)} with treedef {answer_treedef}: replace each leaf with jax.tree.map "
            "rather than listing the leaves.",
        )
        for leaf, abstract in zip(leaves, answer_leaves):
            require(
                not isinstance(abstract, (jax.Array, np.ndarray, int, float, bool)),
                f"for {case}, a leaf of your answer is still data ({type(abstract).__name__}); an abstract "
                "value has a shape and a dtype and no values: jax.ShapeDtypeStruct(shape, dtype).",
            )
            require(
                hasattr(abstract, "shape") and hasattr(abstract, "dtype"),
                f"for {case}, each leaf should be a jax.ShapeDtypeStruct (with .shape and .dtype), got "
                f"{type(abstract).__name__} {abstract!r}.",
            )
            shape, dtype = _shape_and_dtype(abstract, case)
            require(
                shape == np.shape(leaf),
                f"for {case}, a leaf of shape {np.shape(leaf)} got shape {shape}.",
            )
            expected = _expected_dtype(leaf)
            numpy_default = isinstance(leaf, (int, float)) and dtype == np.asarray(leaf).dtype
            require(
                dtype == expected,
                f"for {case}, the leaf {leaf!r} should have dtype {expected}, not {abstract.dtype}: "
                + (
                    "that is NumPy's dtype for a Python number; JAX computes Python floats in "
                    "float32 and Python ints in int32. Use jnp.result_type(leaf)."
                    if numpy_default
                    else "take each leaf's own dtype, jnp.result_type(leaf), rather than a fixed one."
                ),
            )
        try:  # what abstract values are for: compiling without data
            jax.jit(lambda t: jax.tree.map(lambda v: v * 2, t)).lower(answer)
        except (TypeError, ValueError) as error:
            raise CheckFailed(
                f"for {case}, jit could not lower a function for your answer: {error}"
            ) from None
