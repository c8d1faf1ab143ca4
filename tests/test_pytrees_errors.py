"""The errors shown in the pytrees chapter, pinned: class and a stable fragment of the message."""

import dataclasses
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.tree_util import register_pytree_node_class


def test_numpy_dict_comprehension_on_nested_dict():
    """Chapter: a one-level comprehension breaks on a nested dict of NumPy arrays."""
    flat_params = {"w": np.ones(3), "b": np.zeros(3)}
    nested_params = {"hidden": flat_params, "output": {"w": np.ones(3), "b": np.zeros(1)}}
    with pytest.raises(
        TypeError, match=r"unsupported operand type\(s\) for \*: 'float' and 'dict'"
    ):
        {name: 0.5 * value for name, value in nested_params.items()}


def test_namedtuple_field_cannot_be_assigned():
    """Chapter: a NamedTuple is immutable; _replace makes a new one, assignment raises."""

    class Affine(NamedTuple):
        w: jax.Array
        b: jax.Array

    model = Affine(jnp.ones((3, 2)), jnp.zeros(2))
    shifted = model._replace(b=model.b + 1.0)
    assert shifted.w is model.w and float(model.b[0]) == 0.0 and float(shifted.b[0]) == 1.0
    with pytest.raises(AttributeError, match="can't set attribute"):
        model.b = jnp.ones(2)


def test_tree_map_structure_mismatch():
    """Chapter: trees mapped together must have the same keys; the message names the path and the extra key."""
    with pytest.raises(
        ValueError,
        match=r"(?s)pytree structure error: different numbers of pytree children at key path\s+tree_map tree\n"
        r".*symmetric difference on key sets is\s+\['b'\]",
    ):
        jax.tree.map(lambda p, g: p - 0.1 * g, {"w": 1.0}, {"w": 1.0, "b": 2.0})


def test_tree_map_none_matches_only_none():
    """Chapter: None is an empty subtree, so it does not match a leaf; the message names path and types."""
    with pytest.raises(
        ValueError,
        match=r"(?s)pytree structure error: different types at key path\s+tree_map tree\['b'\]\n"
        r".*<class 'NoneType'>.*different type\s+<class 'float'>",
    ) as info:
        jax.tree.map(lambda mask, p: p if mask is None else mask * p, {"b": None}, {"b": 1.0})
    assert "is_leaf" not in str(info.value)  # the chapter says the message no longer names the fix


def test_tree_map_prefix_leaf_receives_a_whole_subtree():
    """Chapter: a leaf of the first tree may face a subtree of the others, which f gets in one piece."""
    assert jax.tree.map(lambda a, b: (a, b), {"a": 1}, {"a": [1, 2]}) == {"a": (1, [1, 2])}


def test_tree_map_is_leaf_none_fix():
    """Chapter: with is_leaf, the function receives the None and decides."""
    out = jax.tree.map(
        lambda mask, p: p if mask is None else mask * p,
        {"b": None, "w": 0.0},
        {"b": 1.0, "w": 2.0},
        is_leaf=lambda x: x is None,
    )
    assert out == {"b": 1.0, "w": 0.0}


class PlainAffine:
    """The chapter's unregistered class: to JAX, one leaf that is not an array."""

    def __init__(self, w, b):
        self.w = w
        self.b = b


def test_jit_rejects_plain_class():
    """Chapter: an unregistered class is one leaf, which jit cannot turn into an array."""

    plain = PlainAffine(jnp.ones((3, 2)), jnp.zeros(2))
    with pytest.raises(
        TypeError,
        match=r"as an abstract array.*PlainAffine'> and was passed to the function at path model",
    ):
        jax.jit(lambda model, x: x @ model.w + model.b)(plain, jnp.ones(3))


def test_scan_rejects_plain_class_carry():
    """Chapter (plain-class section): scan must take its carry apart into arrays, so a plain class fails."""

    plain = PlainAffine(jnp.ones((3, 2)), jnp.zeros(2))
    with pytest.raises(
        TypeError, match=r"of type '<class '.*PlainAffine'>' is not a valid JAX type"
    ):
        jax.lax.scan(lambda carry, _: (carry, None), plain, length=2)


def test_register_dataclass_string_field_not_static():
    """Chapter: a str field not marked jax.tree.static becomes a leaf, and jit rejects it."""

    @jax.tree_util.register_dataclass
    @dataclasses.dataclass(frozen=True)
    class DenseForgotStatic:
        w: jax.Array
        activation: str = "tanh"

    with pytest.raises(
        TypeError,
        match=r"of type <class 'str'> and was passed to the function at path layer.activation",
    ):
        jax.jit(lambda layer: layer.w)(DenseForgotStatic(jnp.ones(2)))


def test_array_in_aux_data_fails_on_second_call():
    """Chapter: an array in aux data works once, then the cache comparison fails."""

    @register_pytree_node_class
    class ScaleInAux:
        def __init__(self, w, scale):
            self.w = w
            self.scale = scale

        def tree_flatten(self):
            return (self.w,), (self.scale,)

        @classmethod
        def tree_unflatten(cls, aux_data, children):
            return cls(children[0], aux_data[0])

    scaled = jax.jit(lambda m: m.w * m.scale)
    first = scaled(ScaleInAux(jnp.ones(3), jnp.arange(3.0)))
    assert jnp.allclose(first, jnp.arange(3.0))
    with pytest.raises(
        ValueError,
        match=r"(?s)pytree node of type .*ScaleInAux.*arrays cannot be passed as metadata fields",
    ):
        scaled(ScaleInAux(jnp.ones(3), jnp.arange(3.0)))


def test_scan_carry_with_changing_static_field():
    """Chapter: a static field that changes in a scan carry changes the carry's structure."""

    @jax.tree_util.register_dataclass
    @dataclasses.dataclass(frozen=True)
    class Iterate:
        x: jax.Array
        step: int = jax.tree.static(default=0)

    def halve(state, _):
        return Iterate(0.5 * state.x, state.step + 1), None

    with pytest.raises(
        TypeError, match="carry input and carry output must have the same pytree structure"
    ):
        jax.lax.scan(halve, Iterate(jnp.ones(2)), length=3)


def test_aux_data_is_compared_with_eq_not_hashed():
    """The aux-data section (and the tracing and PLN-levels chapters): jit compares aux data with
    ==, it does not hash it. A list works, an equal list reuses the trace, an unequal one retraces,
    and treedefs that differ only in aux data hash alike."""

    @register_pytree_node_class
    class Box:
        def __init__(self, x, meta):
            self.x, self.meta = x, meta

        def tree_flatten(self):
            return (self.x,), self.meta

        @classmethod
        def tree_unflatten(cls, meta, children):
            return cls(children[0], meta)

    traces = []

    @jax.jit
    def total(box):
        traces.append(None)
        return jnp.sum(box.x) * len(box.meta)

    for meta in ([1, 2], [1, 2], [1, 3]):
        total(Box(jnp.ones(2), meta))
    assert len(traces) == 2
    first, other = jax.tree.structure(Box(1.0, [1, 2])), jax.tree.structure(Box(1.0, (5,)))
    assert hash(first) == hash(other) and first != other


def test_a_key_path_entry_is_not_the_string_it_holds():
    """Section sec-pytrees-key-paths: comparing a path entry with a string is silently False, so
    a mask built that way masks nothing; comparing its .key (or keystr) works."""
    params = [
        {"w": jnp.ones((1, 3)), "b": jnp.zeros(3)},
        {"w": jnp.ones((3, 1)), "b": jnp.zeros(1)},
    ]
    by_string = jax.tree.map_with_path(lambda path, _: path[-1] == "w", params)
    by_key = jax.tree.map_with_path(lambda path, _: path[-1].key == "w", params)
    assert not any(jax.tree.leaves(by_string))
    assert by_key == [{"b": False, "w": True}, {"b": False, "w": True}]
    paths = [jax.tree_util.keystr(path) for path, _ in jax.tree.leaves_with_path(params)]
    assert paths == ["[0]['b']", "[0]['w']", "[1]['b']", "[1]['w']"]
