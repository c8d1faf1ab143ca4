"""Helpers shared by the pytrees chapter's checkers: a small NamedTuple, a leaf by its path, and
the round-trip and hashability checks of a registered class."""

from __future__ import annotations

from typing import NamedTuple

import jax

from ...checks import close, require


class _Linear(NamedTuple):
    weight: jax.Array
    bias: jax.Array


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


def require_hashable_structure(obj) -> None:
    """Fails unless the aux data of `obj`'s own class (the top node of its treedef) is hashable."""
    _, aux_data = jax.tree.structure(obj).node_data()  # type: ignore[attr-defined]  # jaxlib ships no stub for PyTreeDef
    try:
        hash(aux_data)
    except TypeError as error:
        require(
            False,
            f"the aux data cannot be hashed ({error}): JAX's documentation asks for hashable aux data "
            "(a list happens to pass jit's == test, but nothing promises it). Return a tuple of small "
            "Python values: no list, dict or array.",
        )


def _require_round_trip(obj, fields: dict) -> None:
    """A flatten/unflatten round trip, and an identity under jit, must give back every field."""
    cls = type(obj)
    leaves, treedef = jax.tree.flatten(obj)
    for how, rebuild in (
        ("a flatten/unflatten round trip", lambda: jax.tree.unflatten(treedef, leaves)),
        ("jax.jit(lambda obj: obj)", lambda: jax.jit(lambda x: x)(obj)),
    ):
        restored = rebuild()
        require(
            isinstance(restored, cls),
            f"after {how} expected a {cls.__name__}, got {type(restored).__name__}. Make "
            "tree_unflatten a classmethod returning cls(...).",
        )
        for field, expected in fields.items():
            value = getattr(restored, field, _MISSING)
            require(
                value is not _MISSING,
                f"after {how} the field '{field}' is missing: tree_unflatten must rebuild every "
                "field, from the children AND the aux data.",
            )
            if isinstance(expected, str):
                require(
                    not (isinstance(value, (tuple, list)) and expected in value),
                    f"after {how} the field '{field}' is {value!r}, the whole aux-data tuple, not "
                    f"{expected!r}: unpack it in tree_unflatten, for example (name,) = aux_data.",
                )
                require(
                    value == expected,
                    f"after {how} the field '{field}' is {value!r}, not {expected!r}: tree_unflatten "
                    "must take it from the aux data, not hard-code one value.",
                )
            else:
                require(
                    close(value, expected),
                    f"after {how} the field '{field}' changed: put the children back in the order "
                    "tree_flatten returned them.",
                )
