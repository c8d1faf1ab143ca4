"""Three properties every exercise checker holds, each tried on every checker at once (issue 34).

The answers tried are built from the chapter's own reference solution (tests/exercise_references.py):

- an answer that changes its inputs in place fails, with a hint naming the argument
  (`checks.call_answer` compares each NumPy array, list and dict before and after the call);
- an answer that memorises the example, the reference's result for the first inputs it is given,
  returned for every later call, fails: each checker tries more than one input;
- the simulated costs of a measurement exercise are drawn afresh for each check, and an answer
  that returns a constant (the reference's first result) fails.

A reference that is not a plain function (a class, a jitted function, a custom_jvp) cannot be
wrapped without changing what it is; for those the test checks that the reference passes. Where a
checker calls the answer only inside a trace, the memorised example is the reference's result on
arrays of ones of the first call's shapes.
"""

from __future__ import annotations

import functools
import inspect

import jax
import numpy as np
import pytest
from exercise_references import reference_call
from test_checkers_never_crash import CHECKERS

from jaxcourse import checks

# Every checker, several times: left out of the fast tier (scripts/test.sh --fast).
pytestmark = pytest.mark.slow

IDS = [name for name, _ in CHECKERS]


def _setup(name, checker, extra_arguments):
    extra = [extra_arguments[p] for p in list(inspect.signature(checker).parameters)[1:]]
    mesh = extra_arguments["mesh"] if extra else None
    reference = reference_call(name.split(".")[-1], mesh)[0]
    wrappable = inspect.isfunction(reference) or isinstance(reference, functools.partial)
    return reference, extra, wrappable


def _has_tracer(value) -> bool:
    return any(isinstance(leaf, jax.core.Tracer) for leaf in jax.tree.leaves(value))


def _recorded(reference):
    """`reference`, recording the arguments and result of each call."""
    calls = []

    @functools.wraps(reference)
    def recording(*args, **kwargs):
        result = reference(*args, **kwargs)
        calls.append((args, kwargs, result))
        return result

    return recording, calls


def _mutate(value) -> bool:
    """Changes `value` in place where it can be (True then): a NumPy array, a list, a dict, or
    one of those inside a tuple."""
    if isinstance(value, np.ndarray) and value.size and value.flags.writeable:
        if value.dtype.kind == "b":
            value.flat[0] = not value.flat[0]
        elif value.dtype.kind in "iufc":
            value.flat[0] = value.flat[0] + 1
        else:
            return False
        return True
    if isinstance(value, list):
        value.append(value[-1] if value else None)
        return True
    if isinstance(value, dict):
        value["added by the answer"] = None
        return True
    if isinstance(value, tuple):
        return any(_mutate(item) for item in value)
    return False


@pytest.mark.parametrize("name,checker", CHECKERS, ids=IDS)
def test_an_answer_that_changes_its_inputs_fails_naming_the_argument(
    name, checker, extra_arguments
):
    reference, extra, wrappable = _setup(name, checker, extra_arguments)
    if not wrappable:
        assert checker(reference, *extra), f"{name}: the chapter's reference fails"
        return
    mutated = []

    @functools.wraps(reference)
    def changes_its_inputs(*args, **kwargs):
        result = reference(*args, **kwargs)
        mutated.extend(position for position, arg in enumerate(args) if _mutate(arg))
        return result

    verdict = checker(changes_its_inputs, *extra)
    if mutated:
        assert not verdict, f"{name} passed an answer that changed its inputs"
        assert "in place" in verdict.message and "changed its argument" in verdict.message, (
            verdict.message
        )
    else:  # the checker gives only values that cannot change (JAX arrays, numbers, functions)
        assert verdict, f"{name}: the reference, wrapped, fails: {verdict.message}"


@pytest.mark.parametrize("name,checker", CHECKERS, ids=IDS)
def test_an_answer_that_memorises_the_example_fails(name, checker, extra_arguments):
    reference, extra, wrappable = _setup(name, checker, extra_arguments)
    if not wrappable:
        assert checker(reference, *extra), f"{name}: the chapter's reference fails"
        return
    recording, calls = _recorded(reference)
    verdict = checker(recording, *extra)
    assert verdict, f"{name}: the reference, wrapped, fails: {verdict.message}"
    verdict = checker(_memoriser(reference, calls), *extra)
    assert not verdict, f"{name} passed an answer that only knows the first example's result"


def _memoriser(reference, calls):
    """An answer that returns the reference's result for the first example, whatever it is
    given. A checker that calls the answer only inside a trace (a shard_map body, a jitted
    step) never shows it a concrete value: there, the example is an array of ones of the first
    call's shapes and dtypes, so the answer still ignores what it is given."""
    concrete = next((call for call in calls if not _has_tracer(call[:2])), None)
    if concrete is not None:
        args, kwargs = concrete[0], concrete[1]

        @functools.wraps(reference)
        def memorised(*_args, **_kwargs):
            return reference(*args, **kwargs)

        return memorised
    assert calls, "the checker never called the answer"
    traced_args, traced_kwargs = calls[0][0], calls[0][1]

    def ones_like(leaf):
        if isinstance(leaf, jax.core.Tracer):
            return jax.numpy.ones(leaf.shape, leaf.dtype)
        return leaf

    @functools.wraps(reference)
    def ignores_its_inputs(*_args, **_kwargs):
        return reference(
            *jax.tree.map(ones_like, traced_args), **jax.tree.map(ones_like, traced_kwargs)
        )

    return ignores_its_inputs


@pytest.mark.parametrize("name,checker", CHECKERS, ids=IDS)
def test_simulated_costs_are_fresh_and_no_constant_passes(name, checker, extra_arguments):
    reference, extra, wrappable = _setup(name, checker, extra_arguments)
    if not wrappable:
        assert checker(reference, *extra), f"{name}: the chapter's reference fails"
        return
    draws = []
    for _ in range(2):
        start = len(checks.SIMULATED_COSTS)
        recording, calls = _recorded(reference)
        assert checker(recording, *extra), f"{name}: the reference fails"
        draws.append(checks.SIMULATED_COSTS[start:])
    assert not draws[0] or draws[0] != draws[1], f"{name} drew the same costs twice"
    first = next((call for call in calls if not _has_tracer(call[2])), None)
    if first is None:  # called only inside a trace: the constant is computed from fixed inputs
        constant = _memoriser(reference, calls)
    else:

        @functools.wraps(reference)
        def constant(*_args, **_kwargs):
            return first[2]

    assert not checker(constant, *extra), f"{name} passed a constant answer"


def test_call_answer_names_the_argument_an_answer_changed():
    def sorts_in_place(values, table, weights):
        values.sort()
        return len(values)

    with pytest.raises(checks.CheckFailed, match="argument `values` in place"):
        checks.call_answer(sorts_in_place, [3, 1, 2], {}, np.ones(2))

    def scales_weights(values, table, weights):
        weights *= 2
        table["seen"] = True

    with pytest.raises(checks.CheckFailed, match="argument `table` in place.*keys were added"):
        checks.call_answer(scales_weights, [1], {}, np.ones(2))
    with pytest.raises(checks.CheckFailed, match="argument `weights` in place.*overwritten"):
        checks.call_answer(lambda values, table, weights: weights.fill(0), [1], {}, np.ones(2))
    assert checks.call_answer(lambda values, table, weights: sorted(values), [3, 1], {}, 0) == [
        1,
        3,
    ]
