"""`exercises._collect.export_checkers`: a chapter package exports every checker its private
modules define, with no list in its `__init__.py` to keep in step."""

from __future__ import annotations

import ast
import importlib
import pathlib
import textwrap

import pytest

from jaxcourse.checks import is_checker

EXERCISES = pathlib.Path(__file__).resolve().parents[1] / "src" / "jaxcourse" / "exercises"
PACKAGES = sorted(path.parent.name for path in EXERCISES.glob("*/__init__.py"))


def decorated_checkers(package: pathlib.Path) -> set[str]:
    """The functions decorated `@exercise_checker(...)` in a package's private modules."""
    return {
        node.name
        for path in package.glob("_*.py")
        for node in ast.parse(path.read_text()).body
        if isinstance(node, ast.FunctionDef)
        and any(
            isinstance(d, ast.Call) and getattr(d.func, "id", "") == "exercise_checker"
            for d in node.decorator_list
        )
    }


@pytest.mark.parametrize("name", PACKAGES)
def test_a_chapter_package_exports_each_checker_of_its_modules(name):
    package = importlib.import_module(f"jaxcourse.exercises.{name}")
    exported = {key for key, value in vars(package).items() if is_checker(value)}
    assert exported == decorated_checkers(EXERCISES / name)
    assert exported, f"{name}: no checker exported"


def _package(root: pathlib.Path, name: str, modules: dict[str, str]) -> None:
    (root / name).mkdir()
    (root / name / "__init__.py").write_text(
        "from jaxcourse.exercises._collect import export_checkers\n\n"
        "EXPORTED = export_checkers(__name__, globals())\n"
    )
    for module, source in modules.items():
        (root / name / f"{module}.py").write_text(textwrap.dedent(source))


CHECKER = """
    from jaxcourse.checks import exercise_checker


    def helper():
        return 1


    @exercise_checker(hints=("first", "second"))
    def check_{name}(answer):
        pass
"""


def test_a_new_module_is_exported_without_an_init_edit(tmp_path, monkeypatch):
    _package(
        tmp_path,
        "demo_chapter",
        {
            "_first": CHECKER.format(name="first"),
            "_second": CHECKER.format(name="second"),
            "_common": "from ._first import check_first as check_first\n",  # a re-export
        },
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    package = importlib.import_module("demo_chapter")
    assert package.EXPORTED == ["check_first", "check_second"]
    assert package.check_second.__hints__ == ("first", "second")
    assert not hasattr(package, "helper")


def test_two_modules_defining_one_checker_name_is_an_error(tmp_path, monkeypatch):
    same = CHECKER.format(name="same")
    _package(tmp_path, "clash_chapter", {"_one": same, "_two": same})
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(ImportError, match="define check_same"):
        importlib.import_module("clash_chapter")
