"""The exercises' reference solutions, collected from the chapters for the hint ladder.

Every exercise's solution lives once, in its chapter's folded "Solution" callout, and its name
once, in its heading. The package cannot read the chapters (on Colab only the package is
installed), so this module copies each solution's code and its exercise's name ("Exercise 1 (a
shared weight matrix)", which the checker's verdicts show) into
`src/jaxcourse/exercises/solutions.json`, keyed by the checker the solution calls, where
`checker.solution()` and `ladder.exercise_name(checker)` find them. `python -m tools.notebooks` writes the file and
`python -m tools.notebooks --check` fails when it is out of date, like the notebooks.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

SOLUTIONS_FILE = Path("src/jaxcourse/exercises/solutions.json")
SOLUTION_CALLOUT = re.compile(
    r'^(:{3,}) \{\.callout-tip collapse="true"\}\n## Solution\n(.*?)^\1\s*$',
    re.MULTILINE | re.DOTALL,
)
PYTHON_BLOCK = re.compile(r"^```\{python\}\n(.*?)^```\s*$", re.MULTILINE | re.DOTALL)
CHECKER_CALL = re.compile(r"(?<!def )\b(?:\w+\.)?(check_\w+)\(")
CELL_OPTION = re.compile(r"^#\| .*\n", re.MULTILINE)
EXERCISE_START = re.compile(
    r"^(?:### Exercise (?P<number>\d+): (?P<title>.+?)(?: \{#[\w-]+\})?$"  # a heading
    r"|\*\*Exercise (?P<bold_number>\d+) \((?P<bold_title>.+?)\)\.?\*\*"  # **Exercise 1 (title).**
    r"|\*\*(?P<item_number>\d+)\. (?P<item_title>.+?)\.?\*\*)",  # **1. Title.**
    re.MULTILINE,
)
SECTION = re.compile(r"^## (?!Solution$)", re.MULTILINE)
"""A second-level heading other than a callout's "## Solution": it ends an exercise."""


def exercise_starts(text: str) -> list[tuple[int, int, str]]:
    """(start, end of its section, "Exercise N (title)") of each exercise of a chapter's text.

    An exercise starts at a heading `### Exercise N: title`, or a paragraph that opens with
    `**Exercise N (title).**` or `**N. Title.**`; it ends at the next one or the next `##`
    section. The title loses its Markdown code marks; an item's title its capital.
    """
    sections = [m.start() for m in SECTION.finditer(text)] + [len(text)]
    found = []
    for match in EXERCISE_START.finditer(text):
        number = match["number"] or match["bold_number"] or match["item_number"]
        title = (match["title"] or match["bold_title"] or match["item_title"]).replace("`", "")
        first_word = title.split()[0]
        if match["item_title"] and (len(first_word) == 1 or first_word[1:].islower()):
            title = title[0].lower() + title[1:]
        section_end = min(end for end in sections if end > match.start())
        found.append((match.start(), section_end, f"Exercise {number} ({title})"))
    return [
        (start, min(end, found[i + 1][0]) if i + 1 < len(found) else end, name)
        for i, (start, end, name) in enumerate(found)
    ]


def _exercise_at(position: int, exercises: list[tuple[int, int, str]]) -> str | None:
    return next((name for start, end, name in exercises if start < position < end), None)


def chapter_solutions(text: str, chapter: str) -> dict[str, dict[str, str]]:
    """The solutions of one chapter's text: {checker name: {"chapter", "exercise", "code"}}.

    A solution is the code of the Python blocks in a "Solution" callout, without Quarto's cell
    options; it is filed under every checker it calls, with the name of the exercise it belongs
    to (`exercise_starts`; none outside an exercise). An exercise with several checkers names
    each verdict apart: "Exercise 5 (title), part 2", in the order the solution calls them. A
    callout that calls no checker is skipped; two callouts calling one checker are an error.
    """
    found: dict[str, dict[str, str]] = {}
    exercises = exercise_starts(text)
    parts: dict[str, list[str]] = {}  # exercise -> its checkers, in order
    for match in SOLUTION_CALLOUT.finditer(text):
        blocks = [CELL_OPTION.sub("", block) for block in PYTHON_BLOCK.findall(match.group(2))]
        code = "\n\n".join(block.strip("\n") for block in blocks if block.strip())
        calls = CHECKER_CALL.findall(code)
        if not calls:
            continue
        for name in dict.fromkeys(calls):
            if name in found:
                raise ValueError(f"{chapter}: two solutions call {name}")
            found[name] = {"chapter": chapter, "code": code + "\n"}
            exercise = _exercise_at(match.start(), exercises)
            if exercise is not None:
                parts.setdefault(exercise, []).append(name)
    for exercise, names in parts.items():
        for part, name in enumerate(names, start=1):
            found[name]["exercise"] = exercise if len(names) == 1 else f"{exercise}, part {part}"
    return found


def collect(root: Path) -> dict[str, dict[str, str]]:
    """Every chapter's solutions, in book order of the chapter files' names."""
    solutions: dict[str, dict[str, str]] = {}
    for path in sorted((root / "chapters").glob("*.qmd")):
        for name, solution in chapter_solutions(path.read_text(), path.stem).items():
            if name in solutions:
                raise ValueError(
                    f"{name} has solutions in {solutions[name]['chapter']} and {path.stem}"
                )
            solutions[name] = solution
    return solutions


def render(solutions: dict[str, dict[str, str]]) -> str:
    return json.dumps(solutions, indent=1, sort_keys=True) + "\n"


def is_stale(root: Path) -> bool:
    path = root / SOLUTIONS_FILE
    return not path.exists() or path.read_text() != render(collect(root))


def write(root: Path) -> bool:
    """Writes the solutions file; True when it changed."""
    path = root / SOLUTIONS_FILE
    text = render(collect(root))
    if path.exists() and path.read_text() == text:
        return False
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return True
