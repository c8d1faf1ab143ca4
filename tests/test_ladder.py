"""Hint ladders: every checker gives two hints or more, then its chapter's reference solution,
only when asked, and answers a wrong request with a message rather than an exception."""

from __future__ import annotations

import json
import pathlib
import re

import pytest

from jaxcourse import ladder
from jaxcourse.checks import exercise_checker
from jaxcourse.exercises import all_checkers

ROOT = pathlib.Path(__file__).resolve().parents[1]
CHECKERS = all_checkers()
CHAPTER_CALLS = re.compile(r"(?<!def )\b(?:\w+\.)?(check_\w+)\(")


def test_the_checkers_are_found():
    assert len(CHECKERS) >= 40
    assert "jit.check_apply_boundary" in CHECKERS


@pytest.mark.parametrize("name", sorted(CHECKERS))
def test_every_checker_has_at_least_two_hints(name):
    hints = ladder.hints_for(CHECKERS[name])
    assert len(hints) >= 2, f"{name}: add at least two hints: @exercise_checker(hints=(...))"
    assert all(isinstance(hint, str) and len(hint) > 20 for hint in hints), hints
    assert len(set(hints)) == len(hints), f"{name}: two hints say the same thing"


@pytest.mark.parametrize("name", sorted(CHECKERS))
def test_every_checker_a_chapter_uses_has_a_solution_that_calls_it(name):
    """The stored solution is the chapter's: it defines the answer and calls this checker (the
    solution notebooks, which CI runs with enforced verdicts, prove that it passes)."""
    checker = CHECKERS[name]
    used = any(
        re.search(rf"\b{checker.__name__}\(", path.read_text())
        for path in (ROOT / "chapters").glob("*.qmd")
    )
    assert used, f"{name} is not an exercise of any chapter"
    help_ = checker.solution()
    assert help_.code, f"{name}: no stored solution (run python -m tools.notebooks)"
    assert checker.__name__ in CHAPTER_CALLS.findall(help_.code)


def test_the_stored_solutions_match_the_chapters():
    from tools import solutions

    stored = json.loads((ROOT / solutions.SOLUTIONS_FILE).read_text())
    assert stored == solutions.collect(ROOT), "run python -m tools.notebooks"


def test_a_ladder_climbs_to_the_solution():
    checker = CHECKERS["jit.check_apply_boundary"]
    hints = ladder.hints_for(checker)
    first = checker.hint(1)
    assert first.title == f"Hint 1 of {len(hints)}:"
    assert hints[0] in first.body and "check_apply_boundary.hint(2)" in first.body
    last = checker.hint(len(hints))
    assert "check_apply_boundary.solution()" in last.body
    solution = checker.solution()
    assert "def apply_boundary" in solution.code
    assert "```python" in solution._repr_markdown_() and "def apply_boundary" in str(solution)


@pytest.mark.parametrize("request_", [0, 99, -1, True, "2", 1.5])
def test_a_hint_out_of_range_says_which_exist(request_):
    checker = CHECKERS["jit.check_apply_boundary"]
    help_ = checker.hint(request_)
    assert "has hints 1 to" in help_.title and repr(request_) in help_.body


def test_a_checker_without_hints_or_solution_says_so():
    @exercise_checker()
    def check_nothing_known(answer):
        pass

    assert "No hints for check_nothing_known" in check_nothing_known.hint(1).title
    assert "No stored solution for check_nothing_known" in check_nothing_known.solution().title
