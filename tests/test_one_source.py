"""One source for each fact (issue 29, point 2): facts written in several places are checked
against the one place that holds them.

- the package's module list (`src/jaxcourse/__init__.py`) against the package's files;
- CONTRIBUTING's architecture map against `tests/test_architecture.py`'s layers;
- each chapter's `from jaxcourse.exercises... import check_...` against the checkers it calls;
- exercise names: each chapter's exercises numbered 1 to n, and every checker named in the index
  (`src/jaxcourse/exercises/solutions.json`, which `tools.notebooks` writes and `--check` keeps in
  sync) after the exercise whose solution calls it, so that its verdicts say "Exercise N (title)";
- the index's map of the course against `_quarto.yml`'s chapters, in the book's order.
"""

from __future__ import annotations

import functools
import re
from pathlib import Path

import pytest
from test_architecture import LAYERS, layer

import jaxcourse
from jaxcourse.exercises import all_checkers
from tools import qmd, solutions

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "src" / "jaxcourse"
EXERCISES = PACKAGE / "exercises"
CHAPTERS = [page for page in qmd.listed_pages(ROOT) if page.startswith("chapters/")]
EXERCISE_HEADING = re.compile(r"^###\s+Exercise\s+(\d+)\s*:", re.MULTILINE)
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
def checker_names() -> set[str]:
    """The names of every checker the exercises package exports."""
    return {name.split(".")[-1] for name in all_checkers()}


@functools.cache
def index() -> dict[str, dict[str, str]]:
    """The index of exercises as `tools.notebooks` writes it: {checker: {"exercise", ...}}."""
    return solutions.collect(ROOT)


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
    called = set(CHECKER_CALL.findall(IMPORT.sub("", code))) & checker_names()
    qualified = set(re.findall(r"\bexercises\.(check_\w+)\(", code))
    assert sorted((called - qualified) - imported) == [], "called but not imported"
    assert sorted(imported - called) == [], "imported but never called"


def exercises(page: str) -> list[tuple[int, str, set[str]]]:
    """(number, name, checkers its code cells call) of each exercise of a chapter, where
    `tools.solutions` finds them (a heading `### Exercise N: title`, or a bold paragraph)."""
    text = (ROOT / page).read_text()
    offsets = [0]
    for line in text.split("\n"):
        offsets.append(offsets[-1] + len(line) + 1)
    cells = code_cells(page)
    found = []
    for start, end, name in solutions.exercise_starts(text):
        called = {
            checker
            for line, source in cells
            if start < offsets[line - 1] < end
            for checker in CHECKER_CALL.findall(source)
        }
        found.append((int(name.split()[1]), name, called & checker_names()))
    return found


@pytest.mark.parametrize("page", CHAPTERS)
def test_exercises_are_numbered_one_to_n(page):
    numbers = [number for number, *_ in exercises(page)]
    assert numbers == list(range(1, len(numbers) + 1)), f"{page}: exercise numbers {numbers}"
    headings = [int(n) for n in EXERCISE_HEADING.findall((ROOT / page).read_text())]
    assert headings in ([], numbers), f"{page}: headings {headings}, tools.solutions {numbers}"


@pytest.mark.parametrize("page", CHAPTERS)
def test_each_checker_is_named_after_the_exercise_that_calls_it(page):
    wrong = []
    for _, name, called in exercises(page):
        for checker in sorted(called):
            said = index().get(checker, {}).get("exercise", "")
            if not (said == name or said.startswith(f"{name}, part ")):
                wrong.append(f"{page}: {name} calls {checker}, named {said!r} in the index")
    assert not wrong, "\n".join(wrong)


def test_every_checker_is_named_by_a_chapter_exercise():
    """A checker that no chapter exercise's solution calls would name its verdicts after itself."""
    unnamed = sorted(name for name in checker_names() if "exercise" not in index().get(name, {}))
    assert unnamed == [], "call each from an exercise's Solution callout in a chapter"


def test_exercise_names_are_unique_in_a_chapter():
    """The room and the progress table count verdicts by exercise name."""
    seen: dict[tuple[str, str], str] = {}
    for checker, entry in index().items():
        key = (entry["chapter"], entry.get("exercise", checker))
        assert key not in seen, f"{checker} and {seen[key]} are both {key[1]!r}"
        seen[key] = checker


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
    assert sorted(checker_names() - called) == []
