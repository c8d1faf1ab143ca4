"""Every exercise checker of every chapter answers a malformed answer with a verdict, never a crash.

The checkers are found automatically (`checks.is_checker`: each function made by
`checks.exercise_checker` carries its hints), so a new chapter's checkers are covered without editing this file.
A malformed answer must get 'not yet' with a hint ("Hint: ..."), or "your code raised ..." only
when the malformed answer is a function that itself raises; a checker that crashes in its own
code says "checker error, please report it", which fails here.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil

import jax
import jax.numpy as jnp
import pytest

import jaxcourse.exercises
from jaxcourse import checks

# More than a few seconds: left out of the fast tier (scripts/test.sh --fast).
pytestmark = pytest.mark.slow


def _all_checkers() -> list[tuple[str, object]]:
    found = []
    for module_info in pkgutil.iter_modules(jaxcourse.exercises.__path__):
        module = importlib.import_module(f"jaxcourse.exercises.{module_info.name}")
        for name, value in sorted(vars(module).items()):
            if (
                checks.is_checker(value)
                # a chapter split into a package defines its checkers in private submodules
                and value.__module__.split("._")[0] == module.__name__
            ):
                found.append((f"{module_info.name}.{name}", value))
    return found


CHECKERS = _all_checkers()


def _raises(*args, **kwargs):
    raise RuntimeError("a learner's bug")


class _EmptyClass:
    """A class with no fields and no methods: wrong for every class exercise."""


# name -> (answer, whether the answer's own code raises when the checker calls it)
MALFORMED = {
    "a string": ("my answer", False),
    "an int": (3, False),
    "a function that raises": (_raises, True),
    "a function returning a tuple": (lambda *args, **kwargs: (1.0, 2.0, 3.0), False),
    "a function returning a dict": (lambda *args, **kwargs: {"answer": 1.0}, False),
    "a function returning None": (lambda *args, **kwargs: None, False),
    "a function returning a string": (lambda *args, **kwargs: "42", False),
    "a function returning a wrong-shaped array": (
        lambda *args, **kwargs: jnp.ones((2, 7, 3)),
        False,
    ),
    "a lambda of wrong arity": (lambda: 1.0, False),
    "an empty class": (_EmptyClass, False),
}


def test_checkers_are_discovered():
    """Every chapter module with exercises contributes checkers (a broken marker would hide them)."""
    modules = {name.split(".")[0] for name, _ in CHECKERS}
    assert {"jit", "tracing", "vmap", "control_flow", "sharding", "prng", "pytrees"} <= modules, (
        modules
    )
    assert len(CHECKERS) >= 20


@pytest.mark.parametrize("malformed", list(MALFORMED), ids=list(MALFORMED))
@pytest.mark.parametrize("name,checker", CHECKERS, ids=[name for name, _ in CHECKERS])
def test_checker_answers_malformed_input_with_a_hint(name, checker, malformed, extra_arguments):
    """A verdict that did not pass, with a learner-facing message, and no exception."""
    answer, raises_itself = MALFORMED[malformed]
    extra = [extra_arguments[p] for p in list(inspect.signature(checker).parameters)[1:]]
    verdict = checker(answer, *extra)
    assert isinstance(verdict, checks.Verdict)
    assert not verdict.passed, f"{name} passed {malformed}"
    assert checks.CHECKER_ERROR not in verdict.message, (
        f"{name} crashed on {malformed}: {verdict.message}"
    )
    allowed = ("Hint:", "your code raised") if raises_itself else ("Hint:",)
    assert verdict.message.startswith(allowed), f"{name} on {malformed}: {verdict.message}"


def test_the_wrapper_reports_its_own_crash_as_a_checker_error():
    """A bug in a checker (not in the learner's code) is reported as such, not blamed on the learner."""

    @checks.exercise_checker()
    def buggy_checker(answer):
        checks.call_answer(answer, 1.0)
        {}["missing"]  # the checker's own bug

    import jaxcourse.checks as module

    # The checker above lives in this test file, which the wrapper would take for learner code;
    # give it the package's filename as a real checker has.
    buggy_checker.__wrapped__.__code__ = buggy_checker.__wrapped__.__code__.replace(
        co_filename=module.__file__
    )
    verdict = buggy_checker(lambda x: x)
    assert verdict.message.startswith(checks.CHECKER_ERROR), verdict.message
    raised = buggy_checker(_raises)
    assert raised.message.startswith("your code raised RuntimeError"), raised.message


def test_call_answer_reports_a_python_if_on_a_traced_value():
    def python_if(x):
        return x if x > 0 else -x

    with pytest.raises(checks.CheckFailed, match="traced value"):
        checks.call_answer(jax.jit(python_if), 1.0)
    with pytest.raises(checks.CheckFailed, match="should be a function"):
        checks.call_answer("not a function", 1.0)
    with pytest.raises(checks.AnswerRaised, match="RuntimeError"):
        checks.call_answer(_raises, 1.0)
