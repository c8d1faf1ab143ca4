"""Three properties every exercise checker holds, tried on every checker (issue 34), in one test
per checker that shares the checker's runs among them: a run of a PLN checker is a fit, and a
run of any checker compiles the rebuilt answer anew (issue 38: the full run's time).

The answers tried are built from the chapter's own reference solution (tests/exercise_references.py):

- an answer that changes its inputs in place fails, with a hint naming the argument
  (`checks.call_answer` compares each NumPy array, list and dict before and after the call);
  where the answer's code is given only values that cannot change (JAX arrays and tracers,
  numbers, strings), the test asserts that and that the unchanged answer passes;
- an answer that memorises the example, the reference's result for the first inputs it is given,
  returned for every later call, fails: each checker tries more than one input;
- the simulated costs of a measurement exercise are drawn afresh for each check, and an answer
  that returns a constant (the reference's first result) fails.

Each answer keeps the kind of object the reference is, so that the checker accepts the
unchanged wrapper as it accepts the reference (`_rebuilt`): a jitted function is jitted again
around the new code with the same static and donated arguments, a `jax.custom_jvp` keeps its
JVP rule around the new primal, and a class becomes a subclass, registered as a pytree the same
way, whose constructor (and, for the in-place property, every method) runs the new code. For a
class, the memorising and the constant answer are a constructor that builds the first example's
instance whatever it is given. Where a checker calls the answer only inside a trace (a jitted
function, a shard_map body), the memorised example is the reference's result on arrays of ones
of the first call's shapes.
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import types

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
    return reference_call(name.split(".")[-1], mesh)[0], extra


def _has_tracer(value) -> bool:
    return any(isinstance(leaf, jax.core.Tracer) for leaf in jax.tree.leaves(value))


def _rebuilt(reference, make, *, every_method: bool = False):
    """`reference` with its Python code replaced by `make(inner)`, where `inner` is that code
    (a callable of the answer's inputs) and `make` returns a callable of the same inputs, kept
    the kind of object it was, so that the checker accepts `make(lambda f: f)` as it accepts
    the reference:

    - a jitted function: `make` of its `__wrapped__`, jitted again with the same static and
      donated arguments (read from `_jit_info`, which `jax.jit` keeps);
    - a `jax.custom_jvp`: `make` of its `.fun`, with the reference's own JVP rule;
    - a class: a subclass of the same name, registered as a pytree the same way, whose
      constructor (with `every_method`, also each method that is not a dunder, and `__call__`)
      runs `make` of the reference's method bound to the instance;
    - a function or a partial: `make(reference)`.
    """
    if inspect.isclass(reference):
        return _subclass(reference, make, every_method)
    if isinstance(reference, jax.custom_jvp):
        rebuilt = jax.custom_jvp(make(reference.fun), nondiff_argnums=reference.nondiff_argnums)
        rebuilt.defjvp(reference.jvp, symbolic_zeros=reference.symbolic_zeros)
        return rebuilt
    info = getattr(reference, "_jit_info", None)
    if info is not None:
        assert not info.user_specified_in_shardings, "rebuild the shardings too"
        return jax.jit(
            make(reference.__wrapped__),
            static_argnums=info.static_argnums,
            static_argnames=info.static_argnames,
            donate_argnums=info.donate_argnums,
            donate_argnames=info.donate_argnames,
            keep_unused=info.keep_unused,
        )
    assert inspect.isfunction(reference) or isinstance(reference, functools.partial), (
        f"a reference of a new kind, {type(reference).__name__}: teach _rebuilt to rebuild it"
    )
    return make(reference)


def _subclass(cls: type, make, every_method: bool) -> type:
    functions = {
        name: value
        for klass in reversed(cls.__mro__[:-1])  # not object's; a subclass's method wins
        for name, value in vars(klass).items()
        if inspect.isfunction(value)
    }
    subclass = type(cls.__name__, (cls,), {"__qualname__": cls.__qualname__})
    for name, function in functions.items():
        function = _rebound(function, cls.__name__, subclass)
        if name == "__init__" or (
            every_method and (name == "__call__" or not name.startswith("__"))
        ):
            function = _through(make, function)
        setattr(subclass, name, function)
    if hasattr(cls, "tree_flatten"):
        jax.tree_util.register_pytree_node_class(subclass)
    elif dataclasses.is_dataclass(cls):
        probe = object.__new__(cls)  # a registered dataclass flattens into its fields
        for field in dataclasses.fields(cls):
            object.__setattr__(probe, field.name, 0)
        if jax.tree.leaves(probe) != [probe]:
            jax.tree_util.register_dataclass(subclass)
    return subclass


def _rebound(function, name: str, value):
    """`function`, reading `value` where its code reads the global `name` (a method that makes
    a new instance with the class's name, `Polynomial(...)`, makes one of the subclass)."""
    if name not in function.__code__.co_names:
        return function
    rebound = types.FunctionType(
        function.__code__,
        {**function.__globals__, name: value},
        function.__name__,
        function.__defaults__,
        function.__closure__,
    )
    rebound.__kwdefaults__ = function.__kwdefaults__
    rebound.__qualname__ = function.__qualname__
    return rebound


def _through(make, method):
    """The method that runs `make` of `method` bound to the instance."""

    def rebuilt(self, *args, **kwargs):
        return make(functools.partial(method, self))(*args, **kwargs)

    return rebuilt


def _recording(calls: list):
    """A `make` for `_rebuilt`: runs the code, recording the arguments and result of each call."""

    def make(inner):
        @functools.wraps(inner)
        def recording(*args, **kwargs):
            result = inner(*args, **kwargs)
            calls.append((args, kwargs, result))
            return result

        return recording

    return make


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


def _memorising(calls):
    """A `make` for `_rebuilt`: an answer that returns the code's result for the first example
    (for a class, a constructor that builds the first example's instance), whatever it is
    given. A checker that calls the code only inside a trace (a shard_map body, a jitted
    function) never shows it a concrete value: there, the example is an array of ones of the
    first call's shapes and dtypes, so the answer still ignores what it is given."""
    assert calls, "the checker never called the answer"
    concrete = next((call for call in calls if not _has_tracer(call[:2])), None)
    args, kwargs = calls[0][:2] if concrete is None else concrete[:2]

    def ones_like(leaf):
        if isinstance(leaf, jax.core.Tracer):
            return jax.numpy.ones(leaf.shape, leaf.dtype)
        return leaf

    def make(inner):
        @functools.wraps(inner)
        def ignores_its_inputs(*_args, **_kwargs):
            return inner(*jax.tree.map(ones_like, args), **jax.tree.map(ones_like, kwargs))

        return ignores_its_inputs

    return make


def _changing_its_inputs(mutated: list, calls: list):
    """A `make` for `_rebuilt`: runs the code and records the call (`_recording`), then changes
    every argument it can in place (`_mutate`), noting their positions in `mutated`."""
    record = _recording(calls)

    def make(inner):
        recorded = record(inner)

        @functools.wraps(inner)
        def changes_its_inputs(*args, **kwargs):
            result = recorded(*args, **kwargs)
            mutated.extend(position for position, arg in enumerate(args) if _mutate(arg))
            return result

        return changes_its_inputs

    return make


def _run_recorded(checker, reference, extra, calls: list):
    """The checker's verdict on the reference rebuilt to record its calls, and the simulated
    costs that run drew."""
    start = len(checks.SIMULATED_COSTS)
    verdict = checker(_rebuilt(reference, _recording(calls)), *extra)
    return verdict, checks.SIMULATED_COSTS[start:]


@pytest.mark.parametrize("name,checker", CHECKERS, ids=IDS)
def test_changed_inputs_memorised_and_constant_answers_fail(name, checker, extra_arguments):
    """The three properties, from as few runs of the checker as they need (a run of a PLN
    checker fits): the answer that changes its inputs in place runs first; where its code got
    only values that cannot change, that run is the reference's, rebuilt, and must pass, and
    its recorded calls serve the memorising answer. A checker that drew simulated costs is
    run once more, to show that it draws them afresh."""
    reference, extra = _setup(name, checker, extra_arguments)
    mutated, calls = [], []
    start = len(checks.SIMULATED_COSTS)
    verdict = checker(
        _rebuilt(reference, _changing_its_inputs(mutated, calls), every_method=True), *extra
    )
    first_draw = checks.SIMULATED_COSTS[start:]
    if mutated:
        assert not verdict, f"{name} passed an answer that changed its inputs"
        assert "in place" in verdict.message and "changed its argument" in verdict.message, (
            verdict.message
        )
    else:  # the answer's code ran and got only values that cannot change (JAX arrays and
        # tracers, numbers, strings, functions): the property holds by construction, and the
        # unchanged wrapper still passes
        assert calls, f"{name}: the checker never ran the answer's code"
        assert verdict, f"{name}: the reference, rebuilt, fails: {verdict.message}"
    if mutated or inspect.isclass(reference):
        # the in-place run is no reference run (it failed, or, for a class, it recorded every
        # method's calls, not only the constructor's): record one
        calls = []
        verdict, first_draw = _run_recorded(checker, reference, extra, calls)
        assert verdict, f"{name}: the reference, rebuilt, fails: {verdict.message}"
    if first_draw:
        verdict, second_draw = _run_recorded(checker, reference, extra, [])
        assert verdict, f"{name}: the reference, rebuilt, fails: {verdict.message}"
        assert first_draw != second_draw, f"{name} drew the same costs twice"

    memorising = _memorising(calls)
    assert not checker(_rebuilt(reference, memorising), *extra), (
        f"{name} passed an answer that only knows the first example's result"
    )
    first = next((call for call in calls if not _has_tracer(call[2])), None)
    if first is None or inspect.isclass(reference):
        # called only inside a trace, the constant is computed from fixed inputs; a class's
        # constant is the first example's instance, whatever the constructor is given: both
        # are the memorising answer, already refused
        return

    def constant_answer(inner):
        @functools.wraps(inner)
        def constant(*_args, **_kwargs):
            return first[2]

        return constant

    assert not checker(_rebuilt(reference, constant_answer), *extra), (
        f"{name} passed a constant answer"
    )


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
