"""The fast tier (scripts/test.sh --fast) runs the exercise checkers' tests: no chapter's exercise
or wrong-answer module is marked slow as a whole, and a parametrized test marked
`slow_after_first` keeps its first case there (tests/conftest.py)."""

import pathlib
import types

import pytest

TESTS = pathlib.Path(__file__).resolve().parent
EXERCISE_MODULES = sorted(TESTS.glob("test_*_exercises.py")) + sorted(
    TESTS.glob("test_*_wrong_answers.py")
)


@pytest.mark.parametrize("path", EXERCISE_MODULES, ids=lambda path: path.name)
def test_no_exercise_module_is_slow_as_a_whole(path):
    assert "pytestmark = pytest.mark.slow" not in path.read_text(), (
        f"{path.name}: mark only its expensive tests @pytest.mark.slow (or slow_after_first), so "
        "that the fast tier still meets the checkers' references and wrong answers"
    )


class _Item:
    def __init__(self, name: str, marked: bool):
        self.path, self.originalname, self.name = TESTS / "test_x.py", name, name
        self.marks = [types.SimpleNamespace(name="slow_after_first")] if marked else []

    def get_closest_marker(self, name):
        return next((mark for mark in self.marks if mark.name == name), None)

    def add_marker(self, mark):
        self.marks.append(types.SimpleNamespace(name=mark.name))


def test_slow_after_first_marks_every_case_but_the_first(request):
    conftest = next(
        plugin
        for plugin in request.config.pluginmanager.get_plugins()
        if getattr(plugin, "__file__", None) == str(TESTS / "conftest.py")
    )
    items = [_Item("test_a", True), _Item("test_a", True), _Item("test_b", False)]
    items += [_Item("test_c", True), _Item("test_a", True)]
    conftest.pytest_collection_modifyitems(None, items)
    slow = [item.get_closest_marker("slow") is not None for item in items]
    assert slow == [False, True, False, False, True]
