"""What every wrong-answer test asserts, written once: the checker's verdict fails the answer, and
its message holds the hint that names the mistake.

The exercise tests import these instead of each defining its own; test_exercise_coverage.py counts
a test as a wrong-answer test when it calls one of `ASSERTIONS` (or writes `assert not` itself).
"""

from __future__ import annotations

from collections.abc import Callable


def assert_fails_with(verdict, *fragments: str) -> None:
    """The verdict is a failure ('not yet' or a hint) whose message contains every fragment."""
    assert not verdict, f"a wrong answer passed: {verdict}"
    for fragment in fragments:
        assert fragment in verdict.message, (fragment, verdict.message)


def assert_answer_fails(checker: Callable, answer, *fragments: str) -> None:
    """`checker(answer)` fails, and its message contains every fragment."""
    assert_fails_with(checker(answer), *fragments)


ASSERTIONS = frozenset({"assert_fails_with", "assert_answer_fails"})
"""The names a wrong-answer test calls (read by test_exercise_coverage.py)."""
