"""Exercise checkers: a clear pass or 'not yet' with a hint, never an exception in a notebook."""

from __future__ import annotations

import dataclasses
import functools
import os
from typing import Callable

ENFORCE_ENV = "JAXCOURSE_ENFORCE_VERDICTS"
"""When this environment variable is "1" (CI sets it), `exercise_summary` raises on a verdict
other than the one expected, so a broken solution or a stub that passes fails the notebook."""


@dataclasses.dataclass(frozen=True)
class Verdict:
    """The outcome of checking one exercise; true when it passed."""

    exercise: str
    passed: bool
    message: str

    def __bool__(self) -> bool:
        return self.passed

    def __str__(self) -> str:
        mark = "PASSED" if self.passed else "NOT YET"
        return f"[{mark}] {self.exercise}: {self.message}"

    __repr__ = __str__


_VERDICTS: list[Verdict] = []
"""Every verdict given in this Python session, in order (read by `exercise_summary`)."""


class ExerciseSummary(str):
    """A Markdown table of the last verdict of each exercise checked in this session."""

    def _repr_markdown_(self) -> str:
        return str(self)


def exercise_summary(expect: str | None = None) -> ExerciseSummary:
    """Summarises the exercises checked so far: the last verdict of each.

    Args:
        expect: "passed" (solution notebooks) or "not yet" (student notebooks). When the
            `JAXCOURSE_ENFORCE_VERDICTS` environment variable is "1", any other last verdict,
            or no verdict at all, raises `AssertionError`; otherwise nothing is raised.
    """
    if expect not in (None, "passed", "not yet"):
        raise ValueError(f"expect must be 'passed', 'not yet' or None, got {expect!r}.")
    last = {verdict.exercise: verdict for verdict in _VERDICTS}
    rows = [f"| {name} | {'PASSED' if v.passed else 'NOT YET'} |" for name, v in last.items()]
    table = "\n".join(["| exercise | verdict |", "|---|---|", *rows]) if rows else "No exercise checked yet."
    if expect is not None and os.environ.get(ENFORCE_ENV) == "1":
        wrong = [name for name, v in last.items() if v.passed != (expect == "passed")]
        if not last or wrong:
            raise AssertionError(f"expected every exercise to be '{expect}'; not so for: {wrong or 'no exercise'}")
    return ExerciseSummary(table)


class CheckFailed(Exception):
    """Raised inside a checker to fail with a hint for the learner."""


def require(condition: bool, hint: str) -> None:
    """Fails the current check with `hint` unless `condition` holds."""
    if not condition:
        raise CheckFailed(hint)


def require_registered_pytree(obj, hint: str) -> list:
    """Fails with `hint` if JAX sees `obj` as one opaque leaf (its class is not a registered
    pytree); otherwise returns its leaves."""
    import jax

    leaves = jax.tree.leaves(obj)
    require(not (len(leaves) == 1 and leaves[0] is obj), hint)
    return leaves


def exercise_checker(exercise: str) -> Callable:
    """Turns `check(answer, ...)`, which raises `CheckFailed` on a wrong answer, into a checker.

    The wrapped checker returns a `Verdict`, shown as one line when it is the last
    expression of a cell. A stub that raises `NotImplementedError` or returns `None` gets
    'not yet'; any other exception from the learner's code is reported, not raised.
    """

    def decorate(check: Callable) -> Callable[..., Verdict]:
        @functools.wraps(check)
        def checker(*args, **kwargs) -> Verdict:
            verdict = _verdict(*args, **kwargs)
            _VERDICTS.append(verdict)
            return verdict

        def _verdict(*args, **kwargs) -> Verdict:
            if any(arg is None for arg in args):
                return Verdict(exercise, False, "no answer yet: fill in the stub, then run this cell again.")
            try:
                check(*args, **kwargs)
            except CheckFailed as failure:
                return Verdict(exercise, False, f"Hint: {failure}")
            except NotImplementedError:
                return Verdict(exercise, False, "no answer yet: the stub still raises NotImplementedError.")
            except Exception as error:  # the learner's code failed: report it, never crash the notebook
                return Verdict(
                    exercise, False, f"your code raised {type(error).__name__}: {str(error)[:300]}"
                )
            return Verdict(exercise, True, "correct, well done.")

        return checker

    return decorate
