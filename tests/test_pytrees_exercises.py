"""The pytrees chapter's checkers accept the reference solutions and reject typical wrong answers."""

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.tree_util import register_pytree_node_class

from jaxcourse.exercises import pytrees as exercises

# Exercise 1: count the parameters -------------------------------------------------------------


def count_params(tree):
    return sum(jnp.size(leaf) for leaf in jax.tree.leaves(tree))


def test_count_params_reference_passes():
    """Summing the sizes of all leaves counts every scalar."""
    verdict = exercises.check_count_params(count_params)
    assert verdict, verdict.message


def test_count_params_stub_is_not_yet():
    """A stub raising NotImplementedError gets 'not yet'."""

    def stub(tree):
        raise NotImplementedError

    verdict = exercises.check_count_params(stub)
    assert not verdict
    assert "no answer yet" in verdict.message


def test_count_params_counting_leaves_fails():
    """Counting arrays instead of their entries is the typical slip."""
    verdict = exercises.check_count_params(lambda tree: len(jax.tree.leaves(tree)))
    assert not verdict
    assert "number of leaves" in verdict.message


def test_count_params_top_level_only_fails():
    """Looking only at the top level misses nested containers."""

    def top_level(tree):
        values = tree.values() if isinstance(tree, dict) else [tree]
        return sum(np.size(v) for v in values if v is not None)

    verdict = exercises.check_count_params(top_level)
    assert not verdict
    assert "expected" in verdict.message


# Exercise 2: stack a list of records ----------------------------------------------------------


def _stack_unchecked(records):
    """The chapter's transpose cell with list changed to jnp.stack: right on matching records."""
    return jax.tree.map(lambda *xs: jnp.stack(xs), *records)


def stack_records(records):
    structure = jax.tree.structure(records[0])
    for index, record in enumerate(records):
        if jax.tree.structure(record) != structure:
            raise ValueError(
                f"record {index} has structure {jax.tree.structure(record)}, record 0 {structure}"
            )
    return _stack_unchecked(records)


def test_stack_records_reference_passes():
    """Checking every structure against record 0's, then mapping jnp.stack over the records."""
    verdict = exercises.check_stack_records(stack_records)
    assert verdict, verdict.message


def _array_maker(records):
    """jnp.array takes a tuple of numbers as data: a prefix mismatch is stacked silently."""
    return jax.tree.map(lambda *xs: jnp.array(xs), *records)


def _top_level_type_only(records):
    """Compares only the type of each record with record 0's: nested differences slip through."""
    for index, record in enumerate(records):
        if type(record) is not type(records[0]):
            raise ValueError(f"record {index} is a {type(record).__name__}")
    return _stack_unchecked(records)


def _unnamed_error(records):
    if any(jax.tree.structure(r) != jax.tree.structure(records[0]) for r in records):
        raise ValueError("the records do not all have the same structure")
    return _stack_unchecked(records)


@pytest.mark.parametrize(
    ("wrong", "hint"),
    [
        (_stack_unchecked, "your function raised TypeError ("),
        (_array_maker, "stacked the records anyway"),
        (
            _top_level_type_only,
            "compare each record's jax.tree.structure with record 0's before stacking",
        ),
        (_unnamed_error, "should name the record that differs, 'record 2'"),
    ],
    ids=["chapter-cell-with-stack", "jnp-array", "top-level-type-only", "unnamed-record"],
)
def test_stack_records_without_a_structure_check_fails(wrong, hint):
    """Right on matching records; the checker then passes records whose structures differ."""
    verdict = exercises.check_stack_records(wrong)
    assert not verdict and hint in verdict.message


def test_stack_records_lists_fail():
    """jax.tree.transpose alone gives lists, which are containers, not leaves."""

    def as_lists(records):
        outer = jax.tree.structure([0] * len(records))
        return jax.tree.transpose(outer, None, records)

    verdict = exercises.check_stack_records(as_lists)
    assert not verdict
    assert "structure of ONE record" in verdict.message


def test_stack_records_wrong_axis_fails():
    """Stacking on the last axis gives the wrong shape for vector fields."""
    verdict = exercises.check_stack_records(
        lambda records: jax.tree.map(lambda *xs: jnp.stack(xs, axis=-1), *records)
    )
    assert not verdict
    assert "new first axis" in verdict.message


def test_stack_records_concatenate_fails():
    """Concatenating merges the records instead of adding an axis."""
    verdict = exercises.check_stack_records(
        lambda records: jax.tree.map(
            lambda *xs: jnp.concatenate([jnp.atleast_1d(x) for x in xs]), *records
        )
    )
    assert not verdict
    assert "new first axis" in verdict.message


def test_stack_records_stub_is_not_yet():
    def stub(records):
        raise NotImplementedError

    assert "no answer yet" in exercises.check_stack_records(stub).message


# Exercise 3: a Standardizer pytree ------------------------------------------------------------


@register_pytree_node_class
class Standardizer:
    def __init__(self, mean, scale, name):
        self.mean, self.scale, self.name = mean, scale, name

    def tree_flatten(self):
        return (self.mean, self.scale), self.name

    @classmethod
    def tree_unflatten(cls, aux_data, children):
        return cls(*children, aux_data)


def test_standardizer_reference_passes():
    """Arrays as children, the name as aux data, every field restored."""
    verdict = exercises.check_standardizer(Standardizer)
    assert verdict, verdict.message


def test_standardizer_dataclass_passes():
    """register_dataclass with a static name is an equally good answer."""

    @jax.tree_util.register_dataclass
    @dataclasses.dataclass
    class DataclassStandardizer:
        mean: jax.Array
        scale: jax.Array
        name: str = jax.tree.static()

    verdict = exercises.check_standardizer(DataclassStandardizer)
    assert verdict, verdict.message


def test_standardizer_stub_is_not_yet():
    """The chapter's skeleton, whose methods raise NotImplementedError, gets 'not yet'."""

    @register_pytree_node_class
    class Skeleton:
        def __init__(self, mean, scale, name):
            self.mean, self.scale, self.name = mean, scale, name

        def tree_flatten(self):
            raise NotImplementedError

        @classmethod
        def tree_unflatten(cls, aux_data, children):
            raise NotImplementedError

    verdict = exercises.check_standardizer(Skeleton)
    assert not verdict
    assert "no answer yet" in verdict.message


def test_standardizer_unregistered_fails():
    class Plain:
        def __init__(self, mean, scale, name):
            self.mean, self.scale, self.name = mean, scale, name

    verdict = exercises.check_standardizer(Plain)
    assert not verdict
    assert "not registered" in verdict.message


def test_standardizer_dropped_field_fails():
    """tree_unflatten that forgets a field (the source tutorial's level-4 bug)."""

    @register_pytree_node_class
    class DropsName:
        def __init__(self, mean, scale, name):
            self.mean, self.scale, self.name = mean, scale, name

        def tree_flatten(self):
            return (self.mean, self.scale), self.name

        @classmethod
        def tree_unflatten(cls, aux_data, children):
            new = object.__new__(cls)
            new.mean, new.scale = children
            return new

    verdict = exercises.check_standardizer(DropsName)
    assert not verdict
    assert "'name' is missing" in verdict.message


def test_standardizer_arrays_in_aux_fail():
    """Putting an array in the aux data (the source tutorial's other level-4 bug)."""

    @register_pytree_node_class
    class ScaleInAux:
        def __init__(self, mean, scale, name):
            self.mean, self.scale, self.name = mean, scale, name

        def tree_flatten(self):
            return (self.mean,), (self.scale, self.name)

        @classmethod
        def tree_unflatten(cls, aux_data, children):
            return cls(children[0], *aux_data)

    verdict = exercises.check_standardizer(ScaleInAux)
    assert not verdict
    assert "never in the aux data" in verdict.message


def test_standardizer_name_as_child_fails():
    """A string among the children would be rejected by jit."""

    @register_pytree_node_class
    class NameAsChild:
        def __init__(self, mean, scale, name):
            self.mean, self.scale, self.name = mean, scale, name

        def tree_flatten(self):
            return (self.mean, self.scale, self.name), None

        @classmethod
        def tree_unflatten(cls, aux_data, children):
            return cls(*children)

    verdict = exercises.check_standardizer(NameAsChild)
    assert not verdict
    assert "among the leaves" in verdict.message


def test_standardizer_swapped_children_fail():
    """Restoring the children in the wrong order changes the fields."""

    @register_pytree_node_class
    class Swapped:
        def __init__(self, mean, scale, name):
            self.mean, self.scale, self.name = mean, scale, name

        def tree_flatten(self):
            return (self.mean, self.scale), self.name

        @classmethod
        def tree_unflatten(cls, aux_data, children):
            return cls(children[1], children[0], aux_data)

    verdict = exercises.check_standardizer(Swapped)
    assert not verdict
    assert "field 'mean' changed" in verdict.message


def test_standardizer_extra_array_in_aux_fails():
    """Right children, but a copy of an array also kept in the aux data."""

    @register_pytree_node_class
    class MeanAlsoInAux:
        def __init__(self, mean, scale, name):
            self.mean, self.scale, self.name = mean, scale, name

        def tree_flatten(self):
            return (self.mean, self.scale), (self.name, self.mean)

        @classmethod
        def tree_unflatten(cls, aux_data, children):
            return cls(*children, aux_data[0])

    verdict = exercises.check_standardizer(MeanAlsoInAux)
    assert not verdict
    assert "aux data contains an array" in verdict.message


# Edge cases and second values that the first checkers never tried --------------------------------


def test_count_params_leaf_size_attribute_fails_on_python_numbers():
    """leaf.size works for arrays only; the Python int leaf gets a hint naming jnp.size."""
    verdict = exercises.check_count_params(
        lambda tree: sum(leaf.size for leaf in jax.tree.leaves(tree))
    )
    assert not verdict and "jnp.size(leaf)" in verdict.message


def test_count_params_one_per_empty_array_fails():
    """Counting at least one scalar per leaf is wrong for an array of shape (0, 3)."""
    verdict = exercises.check_count_params(
        lambda tree: sum(max(1, int(jnp.size(leaf))) for leaf in jax.tree.leaves(tree))
    )
    assert not verdict and "shape (0, 3)" in verdict.message


def test_count_params_returning_a_list_fails_with_the_expected_structure():
    verdict = exercises.check_count_params(
        lambda tree: [jnp.size(leaf) for leaf in jax.tree.leaves(tree)]
    )
    assert not verdict and "one whole number" in verdict.message


def test_stack_records_only_dicts_fails_on_namedtuples():
    """Rebuilding a dict by hand works for dict records only."""

    def dicts_only(records):
        return {k: jnp.stack([r[k] for r in records]) for k in records[0]}

    verdict = exercises.check_stack_records(dicts_only)
    assert not verdict


def test_stack_records_skipping_a_single_record_fails():
    """Returning the record itself when there is only one misses the new axis."""

    def lazy(records):
        if len(records) == 1:
            return records[0]
        return jax.tree.map(lambda *values: jnp.stack(values), *records)

    verdict = exercises.check_stack_records(lazy)
    assert (
        not verdict and "a single record" in verdict.message and "new first axis" in verdict.message
    )


@register_pytree_node_class
class HardCodedName(Standardizer):
    """Keeps the name in the aux data but rebuilds every object with the name 'height'."""

    @classmethod
    def tree_unflatten(cls, aux_data, children):
        return cls(*children, "height")


def test_standardizer_hard_coded_name_fails_on_a_second_name():
    verdict = exercises.check_standardizer(HardCodedName)
    assert not verdict and "hard-code" in verdict.message and "'weight'" in verdict.message


@register_pytree_node_class
class ListAux(Standardizer):
    def tree_flatten(self):
        return (self.mean, self.scale), [self.name]

    @classmethod
    def tree_unflatten(cls, aux_data, children):
        return cls(*children, aux_data[0])


def test_standardizer_list_aux_fails_as_unhashable():
    verdict = exercises.check_standardizer(ListAux)
    assert not verdict and "hashed" in verdict.message and "tuple" in verdict.message


# Exercise 4: what goes in the aux data ----------------------------------------------------------


class TrainStateBase:
    """The chapter's TrainState without its two pytree methods."""

    def __init__(self, params, step, learning_rate, schedule):
        self.params, self.step, self.learning_rate, self.schedule = (
            params,
            step,
            learning_rate,
            schedule,
        )

    def rate(self):
        if self.schedule == "constant":
            return self.learning_rate
        return self.learning_rate / (1.0 + self.step)

    def apply(self, grads):
        return type(self)(
            self.params - self.rate() * grads, self.step + 1, self.learning_rate, self.schedule
        )


def train_state(flatten, unflatten):
    """A TrainState class registered with the given flatten and unflatten functions."""
    methods = {"tree_flatten": flatten, "tree_unflatten": classmethod(unflatten)}
    return register_pytree_node_class(type("TrainState", (TrainStateBase,), methods))


REFERENCE_FLATTEN = lambda s: ((s.params, s.step, s.learning_rate), (s.schedule,))
REFERENCE_UNFLATTEN = lambda cls, aux, children: cls(*children, *aux)


def test_train_state_reference_passes():
    verdict = exercises.check_train_state(train_state(REFERENCE_FLATTEN, REFERENCE_UNFLATTEN))
    assert verdict, verdict.message


def test_train_state_dataclass_passes():
    @jax.tree_util.register_dataclass
    @dataclasses.dataclass(frozen=True)
    class TrainState(TrainStateBase):
        params: jax.Array
        step: jax.Array
        learning_rate: float
        schedule: str = jax.tree.static()

    verdict = exercises.check_train_state(TrainState)
    assert verdict, verdict.message


@pytest.mark.parametrize(
    ("flatten", "unflatten", "hint"),
    [
        pytest.param(
            lambda s: ((s.params, s.learning_rate), (s.step, s.schedule)),
            lambda cls, aux, ch: cls(ch[0], aux[0], ch[1], aux[1]),
            "step is in the aux data",
            id="step-in-aux",
        ),
        pytest.param(
            lambda s: ((s.params, s.step), (s.learning_rate, s.schedule)),
            lambda cls, aux, ch: cls(*ch, *aux),
            "learning rate is in the aux data",
            id="learning-rate-in-aux",
        ),
        pytest.param(
            lambda s: ((s.step, s.learning_rate), (s.params, s.schedule)),
            lambda cls, aux, ch: cls(aux[0], *ch, aux[1]),
            "params is not among the children",
            id="array-in-aux",
        ),
        pytest.param(
            REFERENCE_FLATTEN,
            lambda cls, aux, ch: cls(*ch, "decay"),
            "hard-code",
            id="schedule-hard-coded",
        ),
        pytest.param(
            lambda s: ((s.params, s.step, s.learning_rate), [s.schedule]),
            REFERENCE_UNFLATTEN,
            "cannot be hashed",
            id="list-aux",
        ),
        pytest.param(
            lambda s: ((s.params, s.step, s.learning_rate, s.schedule), ()),
            lambda cls, aux, ch: cls(*ch),
            "jit rejects a string leaf",
            id="schedule-as-child",
        ),
        pytest.param(
            REFERENCE_FLATTEN,
            lambda cls, aux, ch: cls(ch[0], ch[2], ch[1], *aux),
            "order tree_flatten returned them",
            id="children-swapped",
        ),
    ],
)
def test_train_state_mistakes_get_their_hint(flatten, unflatten, hint):
    verdict = exercises.check_train_state(train_state(flatten, unflatten))
    assert not verdict and hint in verdict.message


def test_train_state_stub_is_not_yet():
    def stub(self):
        raise NotImplementedError

    verdict = exercises.check_train_state(train_state(stub, lambda cls, aux, ch: stub(None)))
    assert not verdict and "no answer yet" in verdict.message
