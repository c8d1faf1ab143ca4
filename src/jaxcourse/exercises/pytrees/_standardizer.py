"""Checker for the pytrees chapter's exercise on a Standardizer registered as a pytree."""

from __future__ import annotations

import jax
import jax.numpy as jnp

from ...checks import call_answer, close, exercise_checker, require, require_registered_pytree
from ._common import _require_round_trip, require_hashable_structure


@exercise_checker(
    hints=(
        "tree_flatten returns (children, aux_data): the arrays JAX should trace go in the "
        "children, the settings that pick the program go in the aux data. tree_unflatten gets "
        "both back and builds a new object with cls(...).",
        "The children are the two arrays; the aux data is a tuple holding the name (hashable: "
        "no list, no array). In tree_unflatten unpack both, in the order tree_flatten wrote "
        "them, and take the name out of the aux-data tuple rather than writing a name in.",
    )
)
def check_standardizer(standardizer_cls) -> None:
    """Checks a class `Standardizer(mean, scale, name)` registered as a pytree.

    `mean` and `scale` (arrays) must be leaves, `name` (a string) static aux data, and a
    flatten/unflatten round trip must restore all three fields.
    """
    require(
        isinstance(standardizer_cls, type),
        "pass the class itself: check_standardizer(Standardizer).",
    )
    mean, scale = jnp.array([1.0, 2.0, 3.0]), jnp.array([0.5, 1.0, 2.0])
    s = call_answer(standardizer_cls, mean, scale, "height", what="Standardizer(mean, scale, name)")
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
        same = jax.tree.structure(s) == jax.tree.structure(other)  # type: ignore[operator]  # jaxlib ships no stub for PyTreeDef
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
        jax.tree.structure(s) != jax.tree.structure(standardizer_cls(mean, scale, "weight")),  # type: ignore[operator]  # jaxlib ships no stub for PyTreeDef
        "instances with different names have the same tree structure: the name is not in the "
        "aux data, so JAX cannot tell them apart (and tree_unflatten cannot restore it).",
    )

    require_hashable_structure(s)
    for name in ("height", "weight"):
        _require_round_trip(
            standardizer_cls(mean, scale, name), {"mean": mean, "scale": scale, "name": name}
        )

    doubled = jax.tree.map(lambda leaf: 2 * leaf, s)
    require(
        close(doubled.mean, 2 * mean)
        and close(doubled.scale, 2 * scale)
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
    require(close(got, (x - mean) / scale), "jit gives wrong values with your class.")
    standardize(other, x)
    require(
        len(traces) == 1,
        "jit traced again for an instance with new array values but the same name: the aux "
        "data must not depend on the arrays.",
    )
    standardize(standardizer_cls(mean, scale, "weight"), x)
    require(len(traces) == 2, "a new name should cause exactly one new trace.")
