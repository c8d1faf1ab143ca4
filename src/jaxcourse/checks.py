"""Exercise checkers: a clear pass or 'not yet' with a hint, never an exception in a notebook."""

from __future__ import annotations

import dataclasses
import functools
from typing import Callable


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


class CheckFailed(Exception):
    """Raised inside a checker to fail with a hint for the learner."""


def require(condition: bool, hint: str) -> None:
    """Fails the current check with `hint` unless `condition` holds."""
    if not condition:
        raise CheckFailed(hint)


def exercise_checker(exercise: str) -> Callable:
    """Turns `check(answer, ...)`, which raises `CheckFailed` on a wrong answer, into a checker.

    The wrapped checker returns a `Verdict`, shown as one line when it is the last
    expression of a cell. A stub that raises `NotImplementedError` or returns `None` gets
    'not yet'; any other exception from the learner's code is reported, not raised.
    """

    def decorate(check: Callable) -> Callable[..., Verdict]:
        @functools.wraps(check)
        def checker(*args, **kwargs) -> Verdict:
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
