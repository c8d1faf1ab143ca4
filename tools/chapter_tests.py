"""What `bash scripts/test.sh --chapter NAME` runs: one chapter's tests, found by naming convention.

    python -m tools.chapter_tests vmap     # pytest's arguments, one a line

- the chapter's own test files: `tests/test_<name>.py` and `tests/test_<name>_*.py` (the name with
  `-` as `_`), less those of a chapter with a longer name (`sharding` leaves `sharding-models`'s
  files out), and the exercise tests of the checker modules it imports
  (`tests/test_<module>_exercises.py`, `tests/test_<module>_wrong_answers.py`: pln-model's
  checkers are `jaxcourse.exercises.pln`);
- the repository-wide checks every chapter change can break (`META_TESTS`), the workshop's when a
  block of `workshop/plan.yml` comes from the chapter, and the crash test of every checker,
  narrowed by `-k` to the chapter's checkers;
- its notebooks: solution and student, and its workshop blocks' (solution and student).
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]

META_TESTS = (
    "tests/test_notebooks.py",  # the notebooks match the chapters
    "tests/test_generated_notebooks.py",  # what the notebooks hold, checked as generated
    "tests/test_one_source.py",
    "tests/test_exercise_coverage.py",
    "tests/test_ladder.py",
    "tests/test_glossary.py",
    "tests/test_glossary_links.py",
    "tests/test_quarto_project.py",
    "tests/test_prose_cells.py",
    "tests/test_notebook_text.py",
    "tests/test_notebook_ids.py",
    "tests/test_quoted_errors.py",
    "tests/test_architecture.py",
    "tests/test_collect.py",  # each chapter package exports every checker of its modules
)
CRASH_TEST = "tests/test_checkers_never_crash.py"
WORKSHOP_TEST = "tests/test_workshop.py"

_CHECKER_IMPORT = re.compile(r"from jaxcourse\.exercises(?:\.(\w+) import | import (\w+))")


def chapters(root: Path = ROOT) -> list[str]:
    return sorted(path.stem for path in (root / "chapters").glob("*.qmd"))


def checker_modules(chapter: str, root: Path = ROOT) -> list[str]:
    """The modules of `jaxcourse.exercises` whose checkers the chapter imports."""
    text = (root / "chapters" / f"{chapter}.qmd").read_text()
    found = {a or b for a, b in _CHECKER_IMPORT.findall(text)}
    return sorted(found & {path.stem for path in (root / "src/jaxcourse/exercises").iterdir()})


def own_test_files(chapter: str, root: Path = ROOT) -> list[str]:
    """The chapter's test files by name, and its checker modules' exercise tests."""
    name = chapter.replace("-", "_")
    longer = [
        other.replace("-", "_")
        for other in chapters(root)
        if other != chapter and other.replace("-", "_").startswith(name + "_")
    ]
    paths = [root / "tests" / f"test_{name}.py", *(root / "tests").glob(f"test_{name}_*.py")]
    for module in checker_modules(chapter, root):
        paths += [
            root / "tests" / f"test_{module}_{kind}.py" for kind in ("exercises", "wrong_answers")
        ]
    return sorted(
        {
            path.relative_to(root).as_posix()
            for path in paths
            if path.is_file()
            and not any(
                path.stem == f"test_{other}" or path.stem.startswith(f"test_{other}_")
                for other in longer
            )
        }
    )


def workshop_blocks(chapter: str, root: Path = ROOT) -> list[dict]:
    plan = yaml.safe_load((root / "workshop/plan.yml").read_text())
    return [block for block in plan["blocks"] if block.get("chapter") == chapter]


def notebooks(chapter: str, root: Path = ROOT) -> list[str]:
    """The chapter's solution and student notebooks, then its workshop blocks' (where made)."""
    names = [f"notebooks/{chapter}.ipynb", f"notebooks/student/{chapter}.ipynb"]
    for block in workshop_blocks(chapter, root):
        if "id" in block and not block.get("shown"):
            names += [f"notebooks/blocks/{block['id']}.ipynb"]
            names += [f"notebooks/blocks/student/{block['id']}.ipynb"]
    return names


def pytest_arguments(chapter: str, root: Path = ROOT) -> list[str]:
    """pytest's arguments for the chapter: test files, notebooks, and the crash test's -k."""
    if chapter not in chapters(root):
        raise ValueError(f"no chapter {chapter!r}; the chapters are: {', '.join(chapters(root))}")
    own = own_test_files(chapter, root)
    files = own + [path for path in META_TESTS if path not in own]
    if workshop_blocks(chapter, root):
        files.append(WORKSHOP_TEST)
    arguments = files + notebooks(chapter, root)
    modules = checker_modules(chapter, root)
    if modules:
        # The crash test's ids start with the checker's module: "vmap.check_predict_all-...".
        wanted = " or ".join(f"{module}.check_" for module in modules)
        arguments += [CRASH_TEST, "-k", f"not test_checkers_never_crash or {wanted}"]
    return arguments


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: python -m tools.chapter_tests CHAPTER", file=sys.stderr)
        return 2
    try:
        print("\n".join(pytest_arguments(argv[0])))
    except ValueError as error:
        print(error, file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
