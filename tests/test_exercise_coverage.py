"""Every checker is tested against at least 3 typical wrong answers, each asserting its hint.

Reads the exercise test files: a wrong-answer test is a test (not a stub test) that calls one
checker and asserts a failed verdict, with one of the shared assertions of tests/wrong_answers.py
(`ASSERTIONS`) or an `assert not` of its own; a parametrized test counts once per wrong answer.
"""

import ast
import pathlib
import re

import pytest
from test_checkers_never_crash import CHECKERS
from wrong_answers import ASSERTIONS

TESTS = pathlib.Path(__file__).resolve().parent
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


def asserts_a_failure(node: ast.FunctionDef) -> bool:
    """The test calls one of the shared wrong-answer assertions, or asserts `not` something."""
    for inner in ast.walk(node):
        if isinstance(inner, ast.Call):
            function = inner.func
            name = getattr(function, "id", None) or getattr(function, "attr", None)
            if name in ASSERTIONS:
                return True
        if isinstance(inner, ast.Assert):
            test = inner.test  # `assert not verdict`, or `assert not verdict and "hint" in ...`
            first = test.values[0] if isinstance(test, ast.BoolOp) else test
            if isinstance(first, ast.UnaryOp) and isinstance(first.op, ast.Not):
                return True
    return False


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
            if not asserts_a_failure(node):
                continue
            source = ast.get_source_segment(text, node)
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


def test_a_failure_is_seen_only_where_a_test_asserts_one():
    """The shared assertions and `assert not` count; a passing check or a bare call does not."""
    seen = [
        asserts_a_failure(ast.parse(source).body[0])
        for source in (
            "def test_a():\n    assert_fails_with(check_x(answer), 'hint')",
            "def test_b():\n    wrong_answers.assert_answer_fails(check_x, answer, 'hint')",
            "def test_c():\n    assert not check_x(answer)",
            "def test_c2():\n    verdict = check_x(answer)\n    assert not verdict and 'h' in verdict.message",
            "def test_d():\n    assert check_x(answer)",
            "def test_e():\n    check_x(answer)",
        )
    ]
    assert seen == [True, True, True, True, False, False]


@pytest.mark.parametrize("name", sorted(name for name, _ in CHECKERS))
def test_every_checker_meets_at_least_three_wrong_answers(name):
    assert COUNTS.get(name, 0) >= MINIMUM, f"{name}: {COUNTS.get(name, 0)} wrong-answer tests"
