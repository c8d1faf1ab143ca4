"""Checkers for the exercises of the chapter 'Pytrees: nested containers of arrays'."""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import optax

from ..checks import exercise_checker, require, require_registered_pytree


class _Linear(NamedTuple):
    weight: jax.Array
    bias: jax.Array


def _count_params_cases() -> list[tuple[str, object, int]]:
    """(description, tree, number of scalars) triples, from flat to awkward."""
    mlp = [
        {"w": jnp.zeros((3, 16)), "b": jnp.zeros(16)},
        {"w": jnp.zeros((16, 2)), "b": jnp.zeros(2)},
    ]
    return [
        ("a single array of shape (4, 5)", jnp.zeros((4, 5)), 20),
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
            "the optax.adam state of that MLP",
            optax.adam(1e-3).init(mlp),
            1 + 2 * (3 * 16 + 16 + 16 * 2 + 2),
        ),
    ]


@exercise_checker("Exercise 1 (count the parameters)")
def check_count_params(count_params) -> None:
    """Checks `count_params(tree) -> int`: the number of scalars in all the leaves of `tree`."""
    for description, tree, expected in _count_params_cases():
        leaves = jax.tree.leaves(tree)
        got = count_params(tree)
        require(got is not None, "count_params returned None: return the total as a number.")
        require(
            np.ndim(got) == 0 and float(got) == int(float(got)),
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
            f"for {description}, expected {expected} scalars, got {got}. Use jax.tree.leaves, "
            "which goes through every level of nesting, skips None and accepts Python scalars "
            "(jnp.size(1.0) is 1).",
        )


def _records_cases() -> list[tuple[str, list]]:
    return [
        (
            "three flat records of scalars",
            [{"t": 0.0, "value": 1.5}, {"t": 1.0, "value": -0.5}, {"t": 2.0, "value": 2.0}],
        ),
        (
            "four nested records with vector fields",
            [
                {
                    "position": jnp.array([i, 2.0 * i]),
                    "meta": {"mass": jnp.float32(i + 1), "velocity": jnp.arange(3.0) * i},
                }
                for i in range(4)
            ],
        ),
        (
            "two records that are tuples",
            [(jnp.ones((2, 2)), jnp.zeros(5)), (2 * jnp.ones((2, 2)), jnp.ones(5))],
        ),
    ]


@exercise_checker("Exercise 2 (stack a list of records)")
def check_stack_records(stack_records) -> None:
    """Checks `stack_records(records)`: one record-shaped pytree with leaves stacked on axis 0."""
    for description, records in _records_cases():
        n = len(records)
        got = stack_records(records)
        require(got is not None, "stack_records returned None: return the stacked pytree.")
        expected_structure = jax.tree.structure(records[0])
        got_structure = jax.tree.structure(got)
        require(
            got_structure == expected_structure,
            f"for {description}, the result should have the structure of ONE record, "
            f"{expected_structure}, but it has {got_structure}. A Python list of values is a "
            "container for JAX, not a leaf: turn each field's values into one array with jnp.stack.",
        )
        for path, leaf in jax.tree.leaves_with_path(got):
            field = jax.tree_util.keystr(path)
            first = jnp.asarray(_leaf_at(records[0], path))
            require(
                isinstance(leaf, (jax.Array, np.ndarray)),
                f"for {description}, field {field} should be an array, got {type(leaf).__name__}.",
            )
            require(
                leaf.shape == (n, *first.shape),
                f"for {description}, field {field} should have shape {(n, *first.shape)} (a new "
                f"first axis of length {n}, one entry per record), got {leaf.shape}. "
                "jnp.stack adds that axis; jnp.concatenate or axis=-1 do not.",
            )
            expected = jnp.stack([jnp.asarray(_leaf_at(r, path)) for r in records])
            require(
                bool(jnp.allclose(leaf, expected)),
                f"for {description}, field {field} has the right shape but wrong values: entry i "
                "must come from record i.",
            )


def _leaf_at(tree, path):
    for entry in path:
        if isinstance(entry, jax.tree_util.DictKey):
            tree = tree[entry.key]
        elif isinstance(entry, jax.tree_util.SequenceKey):
            tree = tree[entry.idx]
        else:
            tree = getattr(tree, entry.name)
    return tree


_MISSING = object()


@exercise_checker("Exercise 3 (a Standardizer pytree)")
def check_standardizer(standardizer_cls) -> None:
    """Checks a class `Standardizer(mean, scale, name)` registered as a pytree.

    `mean` and `scale` (arrays) must be leaves, `name` (a string) static aux data, and a
    flatten/unflatten round trip must restore all three fields.
    """
    mean, scale = jnp.array([1.0, 2.0, 3.0]), jnp.array([0.5, 1.0, 2.0])
    s = standardizer_cls(mean, scale, "height")
    leaves = require_registered_pytree(
        s,
        "JAX sees the whole object as one leaf: the class is not registered. Decorate it with "
        "@jax.tree_util.register_pytree_node_class (and define tree_flatten/tree_unflatten).",
    )
    require(
        not any(isinstance(leaf, str) for leaf in leaves),
        "the name ended up among the leaves (children). A string is not an array, so jit would "
        "reject it: return it in the aux data instead.",
    )
    n_arrays = sum(isinstance(leaf, jax.Array) for leaf in leaves)
    require(
        n_arrays == 2 and len(leaves) == 2,
        f"expected exactly two leaves, mean and scale, but tree_flatten gave {len(leaves)} "
        f"leaves ({n_arrays} arrays). Arrays are data: they belong in the children, never in "
        "the aux data.",
    )
    other = standardizer_cls(mean + 1.0, scale * 3.0, "height")
    try:
        same = jax.tree.structure(s) == jax.tree.structure(other)
    except ValueError:
        same = None
    require(
        same is not None,
        "comparing the structures of two instances failed: the aux data contains an array. "
        "Aux data must be hashable, compared with ==, and never hold arrays.",
    )
    require(
        same,
        "two instances with the same name but different mean/scale values have different tree "
        "structures: the aux data depends on the array values. Keep only the name there.",
    )
    require(
        jax.tree.structure(s) != jax.tree.structure(standardizer_cls(mean, scale, "weight")),
        "instances with different names have the same tree structure: the name is not in the "
        "aux data, so JAX cannot tell them apart (and tree_unflatten cannot restore it).",
    )

    leaves, treedef = jax.tree.flatten(s)
    restored = jax.tree.unflatten(treedef, leaves)
    require(
        isinstance(restored, standardizer_cls),
        f"tree_unflatten should return a {standardizer_cls.__name__}, got "
        f"{type(restored).__name__}. Make it a classmethod returning cls(...).",
    )
    for field, expected in (("mean", mean), ("scale", scale), ("name", "height")):
        value = getattr(restored, field, _MISSING)
        require(
            value is not _MISSING,
            f"after a flatten/unflatten round trip the field '{field}' is missing: tree_unflatten "
            "must rebuild every field, from the children AND the aux data.",
        )
        if field == "name":
            require(value == expected, f"the round trip changed name to {value!r}.")
        else:
            require(
                isinstance(value, jax.Array) and bool(jnp.array_equal(value, expected)),
                f"the round trip changed '{field}': put the children back in the order "
                "tree_flatten returned them.",
            )

    doubled = jax.tree.map(lambda leaf: 2 * leaf, s)
    require(
        bool(jnp.allclose(doubled.mean, 2 * mean)) and bool(jnp.allclose(doubled.scale, 2 * scale))
        and doubled.name == "height",
        "jax.tree.map(lambda x: 2 * x, s) should double mean and scale and keep the name.",
    )

    traces = []

    @jax.jit
    def standardize(standardizer, x):
        traces.append(standardizer.name)  # runs once per trace, not per call
        return (x - standardizer.mean) / standardizer.scale

    x = jnp.array([2.0, 2.0, 2.0])
    got = standardize(s, x)
    require(bool(jnp.allclose(got, (x - mean) / scale)), "jit gives wrong values with your class.")
    standardize(other, x)
    require(
        len(traces) == 1,
        "jit traced again for an instance with new array values but the same name: the aux "
        "data must not depend on the arrays.",
    )
    standardize(standardizer_cls(mean, scale, "weight"), x)
    require(len(traces) == 2, "a new name should cause exactly one new trace.")
