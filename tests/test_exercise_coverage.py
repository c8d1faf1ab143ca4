"""Every checker is tested against at least 3 typical wrong answers, each asserting its hint.

Reads the exercise test files: a wrong-answer test is a test (not a stub test) that calls one
checker and asserts a failed verdict (`assert not verdict`, `assert_not_yet`, `assert_fails_with`
and the like); a parametrized test counts once per wrong answer.
"""

import ast
import pathlib
import re

import pytest
from test_checkers_never_crash import CHECKERS

TESTS = pathlib.Path(__file__).resolve().parent
FAILED_VERDICT = re.compile(
    r"assert not\b|assert_not_yet\(|assert_fails_with\(|fails_with\(|not_yet\("
)
CHECKER_CALL = re.compile(r"\bcheck_\w+")
MINIMUM = 3


def _parametrized_cases(node: ast.FunctionDef, text: str) -> tuple[int, set[str]]:
    """How many cases the test's parametrize decorators give, and the checkers they name."""
    cases, named = 1, set()
    for decorator in node.decorator_list:
        if (
            isinstance(decorator, ast.Call)
            and getattr(decorator.func, "attr", "") == "parametrize"
            and len(decorator.args) > 1
        ):
            values = decorator.args[1]
            if isinstance(values, (ast.List, ast.Tuple)):
                cases *= len(values.elts)
                named |= set(CHECKER_CALL.findall(ast.get_source_segment(text, values)))
    return cases, named


def wrong_answer_counts() -> dict[str, int]:
    """Checker name ('module.check_x') -> number of wrong answers its tests try."""
    real = {name for name, _ in CHECKERS}
    counts: dict[str, int] = {}
    for path in sorted(TESTS.glob("test_*.py")):
        text = path.read_text()
        for node in ast.parse(text).body:
            if (
                not (isinstance(node, ast.FunctionDef) and node.name.startswith("test_"))
                or "stub" in node.name
            ):
                continue
            source = ast.get_source_segment(text, node)
            if not FAILED_VERDICT.search(source):
                continue
            cases, named = _parametrized_cases(node, text)
            called = {
                name
                for name in real
                if name.split(".")[1] in set(CHECKER_CALL.findall(source)) | named
            }
            if len(called) == 1:  # a test of one checker; tests over many checkers do not count
                (name,) = called
                counts[name] = counts.get(name, 0) + cases
    return counts


COUNTS = wrong_answer_counts()


def test_the_count_finds_the_checkers():
    assert len(COUNTS) >= 40


@pytest.mark.parametrize("name", sorted(name for name, _ in CHECKERS))
def test_every_checker_meets_at_least_three_wrong_answers(name):
    assert COUNTS.get(name, 0) >= MINIMUM, f"{name}: {COUNTS.get(name, 0)} wrong-answer tests"
