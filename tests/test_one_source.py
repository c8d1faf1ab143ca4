"""One source for each fact (issue 29, point 2): facts written in several places are checked
against the one place that holds them.

- the package's module list (`src/jaxcourse/__init__.py`) against the package's files;
- CONTRIBUTING's architecture map against `tests/test_architecture.py`'s layers;
- each chapter's `from jaxcourse.exercises... import check_...` against the checkers it calls;
- exercise numbers: consecutive in each chapter, and each checker's `exercise_checker("Exercise N
  (title)")` and its private module's docstring ('... Exercise N: ...') against the heading
  `### Exercise N: title` of the section that calls it;
- the index's map of the course against `_quarto.yml`'s chapters, in the book's order.
"""

from __future__ import annotations

import ast
import functools
import re
from pathlib import Path

import pytest
from test_architecture import LAYERS, layer

import jaxcourse
from tools import qmd

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "src" / "jaxcourse"
EXERCISES = PACKAGE / "exercises"
CHAPTERS = [page for page in qmd.listed_pages(ROOT) if page.startswith("chapters/")]
EXERCISE_HEADING = re.compile(r"^###\s+Exercise\s+(\d+)\s*:\s*(.*?)\s*(?:\{[^}]*\})?\s*$")
CHECKER_CALL = re.compile(r"(?<![\w.])(?:\w+\.)?(check_\w+)\(")
IMPORT = re.compile(
    r"^from jaxcourse\.exercises\.\w+ import (?:\(([^)]*)\)|([^(\n]+)$)", re.MULTILINE
)


@functools.cache
def package_modules() -> list[str]:
    """The package's public modules and subpackages ('pln', 'timing', ...)."""
    names = [p.stem for p in PACKAGE.glob("*.py") if not p.name.startswith("_")]
    names += [p.parent.name for p in PACKAGE.glob("*/__init__.py")]
    return sorted(names)


# --- the module list ---------------------------------------------------------------------


def test_the_package_docstring_lists_every_module():
    listed = set(re.findall(r"^    (\w+)\s", jaxcourse.__doc__ or "", re.MULTILINE))
    missing = sorted(set(package_modules()) - listed - {"exercises"})
    assert missing == [], f"add {missing} to the module list in src/jaxcourse/__init__.py"
    assert sorted(listed - set(package_modules())) == [], "listed there, but no such module"
    assert "`exercises`" in jaxcourse.__doc__


# --- CONTRIBUTING's architecture map ------------------------------------------------------


def architecture_map() -> tuple[set[str], dict[str, str]]:
    """(the foundations CONTRIBUTING's architecture section names, {the head of each 'Above them'
    item: its text})."""
    text = (ROOT / "CONTRIBUTING.md").read_text()
    section = text.split("\n## Architecture\n", 1)[1].split("\n## ", 1)[0]
    package = section.split("- **`jaxcourse`**", 1)[1].split("\n- **`tools`**", 1)[0]
    foundations, above = package.split("Above them:", 1)
    names = set(re.findall(r"`(\w+)`", foundations)) & set(package_modules())
    items = re.split(r"\n\s*- ", "\n" + above.strip())[1:]
    heads = {re.match(r"`([\w.]+)`", item).group(1): item for item in items}
    return names, heads


def test_the_architecture_map_names_every_module_in_its_layer():
    foundations, above = architecture_map()
    assert sorted(name for name in foundations if layer(f"jaxcourse.{name}") != 0) == []
    heads = {name.removeprefix("jaxcourse.") for name in above}
    misplaced = sorted(name for name in heads if layer(f"jaxcourse.{name}") == 0)
    assert misplaced == [], (
        f"CONTRIBUTING puts foundation modules above the foundations: {misplaced}"
    )
    assert {f"jaxcourse.{name}" for name in heads} == set(LAYERS)
    missing = sorted(set(package_modules()) - foundations - heads)
    assert missing == [], f"name {missing} in CONTRIBUTING's Architecture section, in its layer"


def test_the_architecture_map_states_the_layers_in_order():
    text = (ROOT / "CONTRIBUTING.md").read_text()
    order = " < ".join(
        f"`{name.removeprefix('jaxcourse.')}`" for name in sorted(LAYERS, key=LAYERS.get)
    )
    assert f"(foundations < {order})" in text


# --- checkers: imported, called, numbered --------------------------------------------------


@functools.cache
def checker_exercises() -> dict[str, str]:
    """{checker name: the exercise it is for}, from `@exercise_checker("...")` in the source."""
    found = {}
    for path in EXERCISES.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, ast.FunctionDef):
                continue
            for decorator in node.decorator_list:
                if (
                    isinstance(decorator, ast.Call)
                    and getattr(decorator.func, "id", "") == "exercise_checker"
                    and decorator.args
                    and isinstance(decorator.args[0], ast.Constant)
                ):
                    found[node.name] = decorator.args[0].value
    return found


@functools.cache
def docstring_exercises() -> dict[str, int]:
    """{checker name: N} for checkers in a module whose docstring's first line says 'Exercise N'
    (a split chapter's private modules: 'Checker of the PRNG chapter's Exercise 1: ...')."""
    found = {}
    for path in EXERCISES.rglob("_*.py"):
        tree = ast.parse(path.read_text())
        first_line = (ast.get_docstring(tree) or "").split("\n", 1)[0]
        number = re.search(r"\bExercise (\d+)\b", first_line)
        if number is None:
            continue
        for node in tree.body:
            if isinstance(node, ast.FunctionDef) and node.name.startswith("check_"):
                found[node.name] = int(number.group(1))
    return found


def code_cells(page: str) -> list[tuple[int, str]]:
    """(first line, code) of every python cell of a page."""
    _, blocks = qmd.split_blocks((ROOT / page).read_text())
    return [(line, "\n".join(body)) for info, body, line in blocks if qmd.is_python_cell(info)]


@pytest.mark.parametrize("page", CHAPTERS)
def test_each_chapter_imports_exactly_the_checkers_it_calls(page):
    code = "\n".join(source for _, source in code_cells(page))
    imported = {
        name.strip()
        for names in IMPORT.findall(code)
        for name in "".join(names).replace("\n", ",").split(",")
        if name.strip().startswith("check_")
    }
    called = set(CHECKER_CALL.findall(IMPORT.sub("", code))) & set(checker_exercises())
    qualified = set(re.findall(r"\bexercises\.(check_\w+)\(", code))
    assert sorted((called - qualified) - imported) == [], "called but not imported"
    assert sorted(imported - called) == [], "imported but never called"


def exercise_sections(page: str) -> list[tuple[int, str, int, set[str]]]:
    """(number, title, heading line, checkers called in its code cells) for each exercise."""
    lines = (ROOT / page).read_text().split("\n")
    headings = [
        (index + 1, EXERCISE_HEADING.match(line))
        for index, line in enumerate(lines)
        if EXERCISE_HEADING.match(line)
    ]
    cells = code_cells(page)
    sections = []
    for position, (line, match) in enumerate(headings):
        end = headings[position + 1][0] if position + 1 < len(headings) else len(lines) + 1
        called = {
            name
            for start, source in cells
            if line < start < end
            for name in CHECKER_CALL.findall(source)
        }
        sections.append((int(match.group(1)), match.group(2), line, called))
    return sections


@pytest.mark.parametrize("page", CHAPTERS)
def test_exercises_are_numbered_one_to_n(page):
    numbers = [number for number, *_ in exercise_sections(page)]
    assert numbers == list(range(1, len(numbers) + 1)), f"{page}: exercise numbers {numbers}"


@pytest.mark.parametrize("page", CHAPTERS)
def test_each_checker_names_the_exercise_that_calls_it(page):
    exercises, documented = checker_exercises(), docstring_exercises()
    wrong = []
    for number, _, line, called in exercise_sections(page):
        for name in sorted(called & set(exercises)):
            said = exercises[name]
            if said.startswith("Exercise") and not said.startswith(f"Exercise {number} ("):
                wrong.append(f"{page}:{line}: Exercise {number} calls {name}, which says {said!r}")
            if documented.get(name, number) != number:
                wrong.append(
                    f"{page}:{line}: Exercise {number} calls {name}, whose module's docstring "
                    f"says Exercise {documented[name]}"
                )
    assert not wrong, "\n".join(wrong)


# --- the index's map of the course ---------------------------------------------------------


def test_the_index_maps_every_chapter_in_book_order():
    text = (ROOT / "index.qmd").read_text()
    section = text.split("## Map of the course", 1)[1].split("\n## ", 1)[0]
    linked = [link for link in qmd.QMD_LINK.findall(section) if link.startswith("chapters/")]
    chapters = [page for page in CHAPTERS if page != "chapters/glossary.qmd"]
    first_links = list(dict.fromkeys(link for link in linked if link in chapters))
    assert first_links == chapters, "the map links each chapter, in _quarto.yml's order"


def test_every_checker_is_called_by_a_chapter():
    called = {
        name
        for page in CHAPTERS
        for _, source in code_cells(page)
        for name in CHECKER_CALL.findall(source)
    }
    assert sorted(set(checker_exercises()) - called) == []
