"""The exercises' reference solutions, collected from the chapters for the hint ladder.

Every exercise's solution lives once, in its chapter's folded "Solution" callout. The package
cannot read the chapters (on Colab only the package is installed), so this module copies each
solution's code into `src/jaxcourse/exercises/solutions.json`, keyed by the checker the solution
calls, where `checker.solution()` finds it. `python -m tools.notebooks` writes the file and
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


def chapter_solutions(text: str, chapter: str) -> dict[str, dict[str, str]]:
    """The solutions of one chapter's text: {checker name: {"chapter", "code"}}.

    A solution is the code of the Python blocks in a "Solution" callout, without Quarto's cell
    options; it is filed under every checker it calls (one exercise may have several). A callout
    that calls no checker is skipped; two callouts calling one checker are an error.
    """
    found: dict[str, dict[str, str]] = {}
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
