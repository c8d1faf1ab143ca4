"""A participant's progress in one table: each exercise of their saved notebooks, PASSED, NOT YET
(tried, not passed yet) or not tried, read from the checkers' verdicts in the notebooks' outputs.

"Not tried" is an exercise whose checker never ran, or ran only on the untouched stub (its
verdict says "no answer yet"): running a notebook top to bottom is not an attempt.

Usage: `python -m jaxcourse.progress [folder]` (`my-work/` by default; every `.ipynb` below it).
An instructor walking the room asks for it; it reads the saved files only (save the notebook
first), with the standard library's `json`, and runs nothing of them.
"""

from __future__ import annotations

import argparse
import ast
import importlib
import json
import re
import sys
from dataclasses import dataclass
from pathlib import Path

from . import ladder  # the standard library only, like this module

DEFAULT_FOLDER = "my-work"
SKIPPED = {".ipynb_checkpoints", "saved-before-regeneration"}
"""Folders of copies, not of the participant's current work."""
VERDICT = re.compile(r"^\[(PASSED|NOT YET)\] (.*)$", re.MULTILINE)
PASSED, NOT_YET, NOT_TRIED = "PASSED", "NOT YET", "not tried"
NO_ANSWER = "no answer yet"
"""How a verdict on an untouched stub begins (`checks.NO_ANSWER`, not imported: this module
reads files with the standard library only)."""


@dataclass(frozen=True)
class Row:
    notebook: str
    exercise: str
    verdict: str


def _source(cell: dict) -> str:
    source = cell.get("source", "")
    return "".join(source) if isinstance(source, list) else str(source)


def _output_text(output: dict) -> str:
    if output.get("output_type") == "stream":
        text = output.get("text", "")
    else:
        text = output.get("data", {}).get("text/plain", "")
    return "".join(text) if isinstance(text, list) else str(text)


def _checker_calls(cells: list[dict]) -> list[tuple[str, str]]:
    """(module, checker name) of every exercise checker the notebook's code calls, in order.

    A checker is a name imported from `jaxcourse.exercises.<chapter>`, or an attribute of a
    chapter module imported from `jaxcourse.exercises`, called somewhere in the notebook.
    """
    imported: dict[str, str] = {}  # name -> module, for checkers
    modules: dict[str, str] = {}  # alias -> module, for `exercises.check_x(...)`
    trees = []
    for cell in cells:
        try:
            tree = ast.parse(_source(cell))
        except SyntaxError:
            continue
        trees.append(tree)
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith(
                "jaxcourse.exercises"
            ):
                for alias in node.names:
                    if node.module == "jaxcourse.exercises":
                        modules[alias.asname or alias.name] = f"{node.module}.{alias.name}"
                    else:
                        imported[alias.asname or alias.name] = f"{node.module}:{alias.name}"
    calls: list[tuple[str, str]] = []
    for tree in trees:
        for node in ast.walk(tree):
            if not isinstance(node, ast.Call):
                continue
            found: tuple[str, str] | None = None
            if isinstance(node.func, ast.Name) and node.func.id in imported:
                module, _, name = imported[node.func.id].partition(":")
                found = (module, name)
            elif (
                isinstance(node.func, ast.Attribute)
                and isinstance(node.func.value, ast.Name)
                and node.func.value.id in modules
            ):
                found = (modules[node.func.value.id], node.func.attr)
            if found and found not in calls:
                calls.append(found)
    return calls


def exercise_name(module: str, checker: str) -> str:
    """The exercise a checker checks, as its verdicts name it (the checker's name if unknown)."""
    try:
        return ladder.exercise_name(getattr(importlib.import_module(module), checker))
    except Exception:  # an old notebook naming a checker that moved: still list it
        return checker


def _verdicts(cells: list[dict], known: list[str]) -> dict[str, str]:
    """{exercise: its last verdict}, reading the executed cells in the order they ran."""
    ran = sorted(
        (cell for cell in cells if isinstance(cell.get("execution_count"), int)),
        key=lambda cell: cell["execution_count"],
    )
    last: dict[str, str] = {}
    for cell in ran:
        for output in cell.get("outputs", []):
            for match in VERDICT.finditer(_output_text(output)):
                rest = match.group(2)
                name = next((k for k in known if rest.startswith(f"{k}: ")), None)
                name = name or _name_before_colon(rest)
                last[name] = _state(match.group(1), rest[len(name) + 2 :])
    return last


def _state(mark: str, message: str) -> str:
    """PASSED, NOT YET, or not tried for a NOT YET on the untouched stub."""
    if mark == "PASSED":
        return PASSED
    return NOT_TRIED if message.startswith(NO_ANSWER) else NOT_YET


def _name_before_colon(text: str) -> str:
    """The exercise name of a verdict line: up to the first ': ' outside parentheses."""
    depth = 0
    for index, char in enumerate(text):
        depth += {"(": 1, ")": -1}.get(char, 0)
        if depth == 0 and text.startswith(": ", index):
            return text[:index]
    return text


def notebook_rows(path: Path, label: str) -> list[Row]:
    """One row per exercise of a saved notebook: those whose checker it calls, then any other
    exercise a verdict in its outputs names."""
    try:
        cells = [c for c in json.loads(path.read_text()).get("cells", []) if isinstance(c, dict)]
    except (OSError, ValueError):
        return [Row(label, "(not a notebook that can be read)", NOT_TRIED)]
    code = [cell for cell in cells if cell.get("cell_type") == "code"]
    names = [exercise_name(module, checker) for module, checker in _checker_calls(code)]
    verdicts = _verdicts(code, names)
    ordered = names + [name for name in verdicts if name not in names]
    return [Row(label, name, verdicts.get(name, NOT_TRIED)) for name in ordered]


def progress(folder: Path) -> list[Row]:
    """Every exercise of every notebook below `folder`, in path order."""
    rows = []
    for path in sorted(folder.rglob("*.ipynb")):
        relative = path.relative_to(folder)
        if SKIPPED & set(relative.parts):
            continue
        rows.extend(notebook_rows(path, relative.as_posix()))
    return rows


def table(rows: list[Row]) -> str:
    """The rows as a plain-text table, with a count of each verdict below it."""
    header = Row("notebook", "exercise", "verdict")
    widths = [max(len(getattr(r, f)) for r in [header, *rows]) for f in ("notebook", "exercise")]
    lines = [
        f"{r.notebook:<{widths[0]}}  {r.exercise:<{widths[1]}}  {r.verdict}"
        for r in [header, *rows]
    ]
    lines.insert(1, "-" * len(max(lines, key=len)))
    counts = {v: sum(r.verdict == v for r in rows) for v in (PASSED, NOT_YET, NOT_TRIED)}
    lines.append(
        f"{counts[PASSED]} of {len(rows)} exercises passed, {counts[NOT_YET]} tried and not yet "
        f"passed, {counts[NOT_TRIED]} not tried."
    )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "folder", nargs="?", default=DEFAULT_FOLDER, type=Path, help="where the notebooks are"
    )
    args = parser.parse_args(argv)
    if not args.folder.is_dir():
        print(f"No folder {args.folder}/: give the folder where you saved your notebooks.")
        return 1
    rows = progress(args.folder)
    if not rows:
        print(f"No exercises found in the notebooks below {args.folder}/ (saved ones only).")
        return 1
    print(table(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
