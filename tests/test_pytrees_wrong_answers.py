"""More wrong answers to the pytrees chapter's exercises, written from the exercise texts alone as a
hurried learner would (issue 27): each must fail, with a hint that names what it did."""

import functools
import operator

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.tree_util import register_pytree_node_class
from wrong_answers import assert_fails_with

from jaxcourse.exercises.pytrees import (
    check_count_params,
    check_stack_records,
    check_standardizer,
    check_train_state,
)

# Exercise 1: count the parameters --------------------------------------------------------------


def count_leaves(tree):
    """Counts the leaves, not the numbers inside them."""
    return len(jax.tree.leaves(tree))


def count_array_leaves_only(tree):
    """Skips the Python scalars."""
    return sum(leaf.size for leaf in jax.tree.leaves(tree) if isinstance(leaf, jax.Array))


def count_bytes(tree):
    """Sums nbytes: bytes, not scalars."""
    return sum(jnp.asarray(leaf).nbytes for leaf in jax.tree.leaves(tree))


def count_none_as_a_leaf(tree):
    """Treats None as a leaf; np.size(None) is 1."""
    return sum(np.size(leaf) for leaf in jax.tree.leaves(tree, is_leaf=lambda x: x is None))


def count_with_reduce(tree):
    """functools.reduce without a start value: fails on a tree with no leaves."""
    return functools.reduce(operator.add, [jnp.size(leaf) for leaf in jax.tree.leaves(tree)])


def count_top_level_only(tree):
    """Sizes of the top-level values of a dict: nested containers are not looked into."""
    values = tree.values() if isinstance(tree, dict) else [tree]
    return sum(jnp.size(value) for value in values if not isinstance(value, (dict, list, tuple)))


@pytest.mark.parametrize(
    "wrong,hint",
    [
        (count_leaves, "the number of leaves"),
        (count_array_leaves_only, "Python scalars"),
        (count_bytes, "bytes"),
        (count_none_as_a_leaf, "None"),
        (count_with_reduce, "no leaves at all"),
        (count_top_level_only, "every level of nesting"),
    ],
)
def test_count_params_wrong_answers(wrong, hint):
    assert_fails_with(check_count_params(wrong), hint)


# Exercise 2: stack a list of records -----------------------------------------------------------


def _stack(records):
    return jax.tree.map(lambda *values: jnp.stack(values), *records)


def stack_without_check(records):
    """jax.tree.map alone, trusting it to reject a different record."""
    return _stack(records)


def stack_one_based_message(records):
    """Counts records from 1 in the message."""
    structure = jax.tree.structure(records[0])
    for index, record in enumerate(records):
        if jax.tree.structure(record) != structure:
            raise ValueError(f"record {index + 1} differs")
    return _stack(records)


def stack_type_error(records):
    """Raises TypeError instead of ValueError."""
    structure = jax.tree.structure(records[0])
    for index, record in enumerate(records):
        if jax.tree.structure(record) != structure:
            raise TypeError(f"record {index} differs")
    return _stack(records)


def stack_compares_leaf_counts(records):
    """Compares the numbers of leaves, not the structures."""
    n_leaves = len(jax.tree.leaves(records[0]))
    for index, record in enumerate(records):
        if len(jax.tree.leaves(record)) != n_leaves:
            raise ValueError(f"record {index} differs")
    return _stack(records)


def stack_compares_keys(records):
    """Compares the keys of the top-level dicts only."""
    for index, record in enumerate(records):
        if isinstance(record, dict) and set(record) != set(records[0]):
            raise ValueError(f"record {index} differs")
    return _stack(records)


def stack_as_lists(records):
    """jax.tree.transpose, as the chapter shows: lists of values, not arrays."""
    outer = jax.tree.structure([0] * len(records))
    return jax.tree.transpose(outer, None, records)


def stack_message_without_index(records):
    """Detects the difference, but the message does not say which record."""
    structure = jax.tree.structure(records[0])
    if any(jax.tree.structure(record) != structure for record in records):
        raise ValueError("the records do not all have the same structure")
    return _stack(records)


@pytest.mark.parametrize(
    "wrong,hint",
    [
        (stack_without_check, "raised TypeError"),
        (stack_one_based_message, "you named 'record 3'"),
        (stack_type_error, "raised TypeError"),
        (stack_compares_leaf_counts, "your own check let this difference through"),
        (stack_compares_keys, "raised TypeError"),
        (stack_as_lists, "A Python list of values is a container"),
        (stack_message_without_index, "should name the record that differs"),
    ],
)
def test_stack_records_wrong_answers(wrong, hint):
    assert_fails_with(check_stack_records(wrong), hint)


# Exercise 3: a Standardizer pytree --------------------------------------------------------------


class _Standardizer:
    def __init__(self, mean, scale, name):
        self.mean = mean
        self.scale = scale
        self.name = name


@register_pytree_node_class
class NameAmongChildren(_Standardizer):
    def tree_flatten(self):
        return (self.mean, self.scale, self.name), ()

    @classmethod
    def tree_unflatten(cls, aux_data, children):
        return cls(*children)


@register_pytree_node_class
class NameHardCoded(_Standardizer):
    def tree_flatten(self):
        return (self.mean, self.scale), (self.name,)

    @classmethod
    def tree_unflatten(cls, aux_data, children):
        return cls(*children, "height")


@register_pytree_node_class
class AuxTupleNotUnpacked(_Standardizer):
    def tree_flatten(self):
        return (self.mean, self.scale), (self.name,)

    @classmethod
    def tree_unflatten(cls, aux_data, children):
        return cls(*children, aux_data)


@register_pytree_node_class
class ChildrenSwapped(_Standardizer):
    def tree_flatten(self):
        return (self.mean, self.scale), (self.name,)

    @classmethod
    def tree_unflatten(cls, aux_data, children):
        scale, mean = children
        return cls(mean, scale, aux_data[0])


@register_pytree_node_class
class NameForgotten(_Standardizer):
    def tree_flatten(self):
        return (self.mean, self.scale), (self.name,)

    @classmethod
    def tree_unflatten(cls, aux_data, children):
        obj = object.__new__(cls)
        obj.mean, obj.scale = children
        return obj


@register_pytree_node_class
class AuxAsList(_Standardizer):
    def tree_flatten(self):
        return (self.mean, self.scale), [self.name]

    @classmethod
    def tree_unflatten(cls, aux_data, children):
        return cls(*children, aux_data[0])


@register_pytree_node_class
class ScaleInAux(_Standardizer):
    def tree_flatten(self):
        return (self.mean,), (self.scale, self.name)

    @classmethod
    def tree_unflatten(cls, aux_data, children):
        return cls(children[0], *aux_data)


@pytest.mark.parametrize(
    "wrong,hint",
    [
        (NameAmongChildren, "the name ended up among the leaves"),
        (NameHardCoded, "not hard-code one value"),
        (AuxTupleNotUnpacked, "the whole aux-data tuple"),
        (ChildrenSwapped, "in the order tree_flatten returned them"),
        (NameForgotten, "the field 'name' is missing"),
        (AuxAsList, "cannot be hashed"),
        (ScaleInAux, "expected exactly two leaves"),
    ],
)
def test_standardizer_wrong_answers(wrong, hint):
    assert_fails_with(check_standardizer(wrong), hint)


# Exercise 4: what goes in the aux data ---------------------------------------------------------


class _TrainState:
    def __init__(self, params, step, learning_rate, schedule):
        self.params = params
        self.step = step
        self.learning_rate = learning_rate
        self.schedule = schedule

    def rate(self):
        if self.schedule == "constant":
            return self.learning_rate
        return self.learning_rate / (1.0 + self.step)

    def apply(self, grads):
        new_params = self.params - self.rate() * grads
        return type(self)(new_params, self.step + 1, self.learning_rate, self.schedule)


@register_pytree_node_class
class OnlyParamsAreChildren(_TrainState):
    """Everything but the array in the aux data."""

    def tree_flatten(self):
        return (self.params,), (self.step, self.learning_rate, self.schedule)

    @classmethod
    def tree_unflatten(cls, aux_data, children):
        return cls(children[0], *aux_data)


@register_pytree_node_class
class StepInAux(_TrainState):
    """The step is an int, so it goes with the schedule."""

    def tree_flatten(self):
        return (self.params, self.learning_rate), (self.step, self.schedule)

    @classmethod
    def tree_unflatten(cls, aux_data, children):
        params, learning_rate = children
        step, schedule = aux_data
        return cls(params, step, learning_rate, schedule)


@register_pytree_node_class
class EverythingAChild(_TrainState):
    """All four fields as children, the schedule string included."""

    def tree_flatten(self):
        return (self.params, self.step, self.learning_rate, self.schedule), ()

    @classmethod
    def tree_unflatten(cls, aux_data, children):
        return cls(*children)


@register_pytree_node_class
class ScheduleHardCoded(_TrainState):
    def tree_flatten(self):
        return (self.params, self.step, self.learning_rate), (self.schedule,)

    @classmethod
    def tree_unflatten(cls, aux_data, children):
        return cls(*children, "decay")


@register_pytree_node_class
class ChildrenReordered(_TrainState):
    """tree_unflatten reads the children in another order than tree_flatten wrote them."""

    def tree_flatten(self):
        return (self.params, self.step, self.learning_rate), (self.schedule,)

    @classmethod
    def tree_unflatten(cls, aux_data, children):
        params, learning_rate, step = children
        return cls(params, step, learning_rate, aux_data[0])


@register_pytree_node_class
class ScheduleAuxAsDict(_TrainState):
    def tree_flatten(self):
        return (self.params, self.step, self.learning_rate), {"schedule": self.schedule}

    @classmethod
    def tree_unflatten(cls, aux_data, children):
        return cls(*children, aux_data["schedule"])


@pytest.mark.parametrize(
    "wrong,hint",
    [
        (OnlyParamsAreChildren, "the learning rate is in the aux data"),
        (StepInAux, "the step is in the aux data"),
        (EverythingAChild, "the schedule (a string) is among the children"),
        (ScheduleHardCoded, "not hard-code one value"),
        (ChildrenReordered, "in the order tree_flatten returned them"),
        (ScheduleAuxAsDict, "cannot be hashed"),
    ],
)
def test_train_state_wrong_answers(wrong, hint):
    assert_fails_with(check_train_state(wrong), hint)
