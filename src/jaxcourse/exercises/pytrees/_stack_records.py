"""Checker for the pytrees chapter's exercise on stacking a list of records into one record."""

from __future__ import annotations

import re

import jax
import jax.numpy as jnp
import numpy as np

from ...checks import call_answer, close, exercise_checker, require, shorten
from ._common import _leaf_at, _Linear


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


@exercise_checker(
    hints=(
        "Two parts: first compare each record's jax.tree.structure with record 0's and raise a "
        "ValueError naming the first record that differs; then jax.tree.map(f, *records) hands "
        "f one field's values from every record.",
        "Compare whole structures (a list and a tuple, or an array and a tuple of numbers, can "
        "have the same number of leaves or keys but different structures), and name the record "
        "as Python indexes the list, from 0: 'record 2' for the third. Turn each field's values"
        " into one array with a new first axis: jnp.stack does, while a list of values stays a "
        "container and jnp.concatenate adds no axis.",
    )
)
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
            got_structure == expected_structure,  # type: ignore[operator]  # jaxlib ships no stub for PyTreeDef
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


def _require_names_record(message: str, description: str, index: int) -> None:
    """The ValueError raised for a differing record must name it, 'record <index>'."""
    if re.search(rf"\brecord {index}\b", message):
        return
    require(
        "pytree structure error" not in message,
        f"when {description}, jax.tree.map raised its own ValueError ({shorten(message, 60)!r}), which "
        "does not say which record: your own check let this difference through. Compare each "
        "record's whole jax.tree.structure with record 0's (not only its keys or its number of "
        f"leaves), and raise ValueError naming 'record {index}'.",
    )
    named = re.findall(r"\brecord (\d+)\b", message)
    require(
        not named,
        f"when {description}, you named 'record {named[0] if named else ''}', but the record that "
        f"differs is 'record {index}': count from 0, as Python indexes the list.",
    )
    require(
        False,
        f"when {description}, you raised ValueError({shorten(message, 80)!r}), but the message "
        f"should name the record that differs, 'record {index}': compare each record's "
        "jax.tree.structure with record 0's and raise your own error.",
    )


def _require_structure_check(stack_records) -> None:
    """A list whose records differ in structure must raise ValueError naming the first one that differs."""
    for description, records, index in _mismatched_cases():
        try:
            result = stack_records(records)
        except ValueError as error:
            _require_names_record(str(error), description, index)
            continue
        except Exception as error:  # the learner's code: any other error is the wrong kind
            require(
                False,
                f"when {description}, your function raised {type(error).__name__} "
                f"({shorten(str(error), 80)!r}), not a ValueError naming 'record {index}': compare each "
                "record's jax.tree.structure with record 0's before stacking, and raise ValueError "
                "yourself.",
            )
        require(
            False,
            f"when {description}, your function stacked the records anyway (into "
            f"{jax.tree.structure(result)}): jax.tree.map(f, *records) only asks record 0 to be a "
            "prefix of the others, and an array maker such as jnp.array takes a tuple as data. Compare "
            "each record's jax.tree.structure with record 0's, and raise ValueError naming "
            f"'record {index}'.",
        )
