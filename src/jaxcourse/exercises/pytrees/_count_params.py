"""Checker for the pytrees chapter's exercise on counting the parameters of any pytree."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import optax

from ...checks import call_answer, exercise_checker, require
from ._common import _Linear


def _count_params_cases() -> list[tuple[str, object, int]]:
    """(description, tree, number of scalars) triples, from flat to awkward."""
    mlp = [
        {"w": jnp.zeros((3, 16)), "b": jnp.zeros(16)},
        {"w": jnp.zeros((16, 2)), "b": jnp.zeros(2)},
    ]
    return [
        ("a single array of shape (4, 5)", jnp.zeros((4, 5)), 20),
        ("an empty dict (no leaves at all)", {}, 0),
        (
            "a dict holding an array of shape (0, 3) and a Python int",
            {"empty": jnp.zeros((0, 3)), "n": 7},
            1,
        ),
        ("a two-layer MLP (list of dicts)", mlp, 3 * 16 + 16 + 16 * 2 + 2),
        (
            "a nested dict with a NamedTuple, a None and a Python float",
            {
                "encoder": {"layer": _Linear(jnp.zeros((2, 3)), jnp.zeros(3)), "dropout": None},
                "temperature": 1.0,
            },
            2 * 3 + 3 + 1,
        ),
        (
            "a dict of a Python bool and a NumPy float64 array of shape (2, 3)",
            {"trainable": True, "scale": np.ones((2, 3), np.float64)},
            1 + 6,
        ),
        (
            "the optax.adam state of that MLP",
            optax.adam(1e-3).init(mlp),
            1 + 2 * (3 * 16 + 16 + 16 * 2 + 2),
        ),
    ]


@exercise_checker(
    hints=(
        "jax.tree.leaves(tree) lists every leaf, at every level of nesting, and skips None; add"
        " up how many numbers each leaf holds.",
        "jnp.size(leaf) counts the entries of an array and is 1 for a Python number (which has "
        "no .size); sum's start value 0 covers a tree with no leaves at all. Count entries, not"
        " leaves, and not bytes (nbytes).",
    )
)
def check_count_params(count_params) -> None:
    """Checks `count_params(tree) -> int`: the number of scalars in all the leaves of `tree`."""
    for description, tree, expected in _count_params_cases():
        leaves = jax.tree.leaves(tree)
        got = call_answer(
            count_params,
            tree,
            what="count_params",
            hints=(
                (
                    AttributeError,
                    "size",
                    "a Python number is a leaf too, and it has no .size; jnp.size(leaf) works for both.",
                ),
                (
                    AttributeError,
                    "shape",
                    "a Python number is a leaf too, and it has no .shape; jnp.size(leaf) works for both.",
                ),
                (
                    TypeError,
                    "reduce() of empty",
                    f"for {description}, functools.reduce without a start value fails on an empty "
                    "list of sizes: start the total at 0 (sum(...) does).",
                ),
            ),
        )
        require(got is not None, "count_params returned None: return the total as a number.")
        require(
            not isinstance(got, (tuple, list, dict))
            and np.ndim(got) == 0
            and float(got) == int(float(got)),
            f"for {description}, expected one whole number, got {got!r}.",
        )
        got = int(got)
        require(
            not (got == len(leaves) and got != expected),
            f"for {description} you returned {got}, the number of leaves (arrays). Count the "
            "numbers inside them: each leaf contributes its size, the product of its shape.",
        )
        require(
            got == expected,
            f"for {description}, expected {expected} scalars, got {got}" + _why(tree, got),
        )


def _why(tree, got: int) -> str:
    """The hint's second half: what a wrong count counted, where it can be named."""
    leaves = jax.tree.leaves(tree)
    sizes = [int(np.size(leaf)) for leaf in leaves]
    array_sizes = sum(
        size for leaf, size in zip(leaves, sizes) if isinstance(leaf, (jax.Array, np.ndarray))
    )
    n_none = sum(leaf is None for leaf in jax.tree.leaves(tree, is_leaf=lambda node: node is None))
    nbytes = sum(int(np.asarray(leaf).nbytes) for leaf in leaves)
    if got == nbytes and nbytes != sum(sizes):
        return (
            ": that is the number of bytes (nbytes; 4 per float32 entry), not of scalars. Count "
            "each leaf's entries, jnp.size(leaf)."
        )
    if n_none and got == sum(sizes) + n_none:
        return (
            f": one more per None in the tree ({n_none}). None is an empty subtree, not a leaf: "
            "jax.tree.leaves skips it, so do not make it a leaf with is_leaf."
        )
    if got == array_sizes and array_sizes != sum(sizes):
        return (
            ": you counted the array leaves only. Python scalars are leaves too, each one scalar "
            "(jnp.size(1.0) is 1)."
        )
    return (
        ". jax.tree.leaves goes through every level of nesting, skips None and accepts Python "
        "scalars (jnp.size(1.0) is 1); sum jnp.size over all the leaves."
    )
