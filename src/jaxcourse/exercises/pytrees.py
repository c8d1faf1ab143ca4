"""Checkers for the exercises of the chapter 'Pytrees: nested containers of arrays'."""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import optax

from ..checks import call_answer, close, exercise_checker, require, require_registered_pytree


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
        ("a single record", [{"t": jnp.float32(3.0), "xy": jnp.array([1.0, 2.0])}]),
        (
            "two records that are NamedTuples",
            [_Linear(jnp.ones((2, 3)), jnp.zeros(3)), _Linear(jnp.zeros((2, 3)), jnp.ones(3))],
        ),
    ]


@exercise_checker("Exercise 2 (stack a list of records)")
def check_stack_records(stack_records) -> None:
    """Checks `stack_records(records)`: one record-shaped pytree with leaves stacked on axis 0, and a
    ValueError naming the first record whose tree structure differs from record 0's."""
    for description, records in _records_cases():
        n = len(records)
        got = call_answer(stack_records, records, what="stack_records")
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
                close(leaf, expected),
                f"for {description}, field {field} has the right shape but wrong values: entry i "
                "must come from record i.",
            )
    _require_structure_check(stack_records)


def _mismatched_cases() -> list[tuple[str, list, int]]:
    """Lists of records in which one record's structure differs from record 0's, with its index."""
    return [
        (
            "record 2's 'a' is a tuple of two numbers where records 0 and 1 hold an array of two",
            [
                {"a": jnp.ones(2), "b": 1.0},
                {"a": jnp.zeros(2), "b": 2.0},
                {"a": (1.0, 2.0), "b": 3.0},
            ],
            2,
        ),
        (
            "record 1 has a key 'b' that record 0 lacks",
            [{"a": 1.0}, {"a": 2.0, "b": 4.0}, {"a": 3.0}],
            1,
        ),
        (
            "record 1 is a list where record 0 is a tuple",
            [(jnp.ones(2), 1.0), [jnp.ones(2), 2.0]],
            1,
        ),
    ]


def _require_structure_check(stack_records) -> None:
    """A list whose records differ in structure must raise ValueError naming the first one that differs."""
    for description, records, index in _mismatched_cases():
        try:
            result = stack_records(records)
        except ValueError as error:
            require(
                f"record {index}" in str(error),
                f"when {description}, you raised ValueError({str(error)[:80]!r}...), but the message "
                f"should name the record that differs, 'record {index}': compare each record's "
                "jax.tree.structure with record 0's and raise your own error.",
            )
            continue
        except Exception as error:  # the learner's code: any other error is the wrong kind
            require(
                False,
                f"when {description}, your function raised {type(error).__name__}, not a ValueError "
                f"naming 'record {index}': compare each record's jax.tree.structure with record 0's "
                "before stacking, and raise ValueError yourself.",
            )
        require(
            False,
            f"when {description}, your function stacked the records anyway (into "
            f"{jax.tree.structure(result)}): jax.tree.map(f, *records) only asks record 0 to be a "
            "prefix of the others, and an array maker such as jnp.array takes a tuple as data. Compare "
            "each record's jax.tree.structure with record 0's, and raise ValueError naming "
            f"'record {index}'.",
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


def require_hashable_structure(obj) -> None:
    """Fails unless the aux data of `obj`'s own class (the top node of its treedef) is hashable."""
    _, aux_data = jax.tree.structure(obj).node_data()
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


@exercise_checker("Exercise 3 (a Standardizer pytree)")
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


# Exercise 4 ------------------------------------------------------------------------------------

SCHEDULES = ("constant", "decay")
"""The two values of TrainState's static field; each compiles its own program."""


def _train_state_leaves(state) -> list:
    """The leaves of a TrainState, after the checks that name a misplaced field."""
    leaves = require_registered_pytree(
        state,
        "JAX sees the whole TrainState as one leaf: register the class with "
        "@jax.tree_util.register_pytree_node_class and write tree_flatten/tree_unflatten.",
    )
    require(
        not any(isinstance(leaf, str) for leaf in leaves),
        "the schedule (a string) is among the children, and jit rejects a string leaf. It decides "
        "which program is built (the Python if in rate()): put it in the aux data.",
    )
    require(
        any(isinstance(leaf, jax.Array) and leaf.shape == state.params.shape for leaf in leaves),
        "params is not among the children: an array in the aux data is compared with == at every "
        "call, which raises on the second call with new (equal) arrays. Arrays are children.",
    )
    return leaves


def _require_scan_over_steps(cls, schedule: str) -> None:
    """Three `apply` steps in a `lax.scan`, under jit, give the hand-computed parameters."""
    learning_rate, grads = 0.1, jnp.ones((3, 2))
    start = cls(jnp.zeros(2), 0, learning_rate, schedule)
    run = jax.jit(
        lambda state, grads: jax.lax.scan(lambda s, g: (s.apply(g), None), state, grads)[0]
    )
    try:
        final = run(start, grads)
    except TypeError as error:
        require(
            "carry" not in str(error) or "metadata" not in str(error),
            "lax.scan rejects the state: the step count is in the aux data, so the carry's "
            "structure changes at every iteration. A counter that changes inside a compiled loop "
            "is data: make step a child.",
        )
        raise
    rates = [learning_rate if schedule == "constant" else learning_rate / (1 + k) for k in range(3)]
    require(
        close(final.params, -sum(rates) * jnp.ones(2)) and close(final.step, 3),
        f"three steps of apply with the '{schedule}' schedule, in a lax.scan, should give params "
        f"{-sum(rates):.4f} and step 3; got {final.params} and {final.step}. Restore every field in "
        "tree_unflatten, each from where tree_flatten put it.",
    )


def _traces_for(cls, states: list) -> int:
    """How often a jitted loss traces when called with each of `states` in turn."""
    traces = []

    @jax.jit
    def loss(state):
        traces.append(None)  # runs once per trace
        return jnp.sum(state.params**2) * state.rate()

    for state in states:
        loss(state)
    return len(traces)


def _require_one_trace_per_schedule(cls) -> None:
    params = jnp.array([1.0, 2.0])
    try:
        same_arrays = _traces_for(
            cls, [cls(jnp.array([1.0, 2.0]), 0, 0.1, "decay") for _ in range(2)]
        )
    except ValueError as error:
        require(
            "metadata" not in str(error),
            "the second call with new, equal arrays raised: an array sits in the aux data, and "
            "comparing two arrays with == has no single truth value. Arrays are children.",
        )
        raise
    require(
        same_arrays == 1,
        f"two calls with equal new arrays traced {same_arrays} times: an array "
        "in the aux data is a new cache key every time. Arrays are children.",
    )
    sweep = _traces_for(cls, [cls(params, 0, rate, "decay") for rate in (0.1, 0.2, 0.3)])
    require(
        sweep == 1,
        f"three learning rates traced the loss {sweep} times: the learning rate is in the aux data, "
        "so every new value compiles again. A number the program computes with is a child.",
    )
    steps = _traces_for(cls, [cls(params, step, 0.1, "decay") for step in (0, 1, 2)])
    require(
        steps == 1,
        f"three step counts traced the loss {steps} times: the step is in the aux data. Make it a child.",
    )
    schedules = _traces_for(
        cls, [cls(params, 0, 0.1, schedule) for schedule in (*SCHEDULES, *SCHEDULES)]
    )
    require(
        schedules == 2,
        f"two schedules, each used twice, traced the loss {schedules} times; expected 2, one program "
        "per schedule: the schedule belongs in the aux data.",
    )


@exercise_checker("Exercise 4 (what goes in the aux data)")
def check_train_state(train_state_cls) -> None:
    """Checks `TrainState(params, step, learning_rate, schedule)` registered as a pytree.

    `params`, `step` and `learning_rate` must be children (new values neither fail nor
    recompile, and `step` may change inside a `lax.scan`); `schedule` must be hashable aux
    data, restored by `tree_unflatten` for each of its values.
    """
    require(
        isinstance(train_state_cls, type), "pass the class itself: check_train_state(TrainState)."
    )
    state = call_answer(
        train_state_cls,
        jnp.array([1.0, 2.0]),
        0,
        0.1,
        "decay",
        what="TrainState(params, step, learning_rate, schedule)",
    )
    leaves = _train_state_leaves(state)
    require_hashable_structure(state)
    for schedule in SCHEDULES:
        fields = {
            "params": jnp.array([1.0, 2.0]),
            "step": 4,
            "learning_rate": 0.25,
            "schedule": schedule,
        }
        _require_round_trip(train_state_cls(**fields), fields)
    _require_one_trace_per_schedule(train_state_cls)
    for schedule in SCHEDULES:
        _require_scan_over_steps(train_state_cls, schedule)
    require(
        len(leaves) == 3,
        f"tree_flatten gave {len(leaves)} children; expected 3: params, step and learning_rate. "
        "Only the schedule, which picks the program, is aux data.",
    )
