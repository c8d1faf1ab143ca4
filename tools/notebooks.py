"""Generate `notebooks/*.ipynb` from `chapters/*.qmd`, and check that the committed ones are current.

Usage, from the repository root: `python -m tools.notebooks [--check] [--root DIR]`.

It writes each chapter's solution and student notebooks (`tools.chapter_notebooks`), the workshop's
block notebooks (`tools.block_notebooks`) and `src/jaxcourse/exercises/solutions.json`
(`tools.solutions`), rewriting only the files whose text changed, and prints which changed.
`--check` only reports the stale ones.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from tools import block_notebooks, solutions
from tools.chapter_notebooks import (
    SAVED_WORK_DIR,
    chapter_paths,
    stale_notebooks,
    write_all,
)


def _generated_files(root: Path) -> dict[Path, str]:
    """Every file the command generates that exists now, with its text (to tell what changed)."""
    paths = sorted((root / "notebooks").rglob("*.ipynb")) + [root / solutions.SOLUTIONS_FILE]
    return {path: path.read_text() for path in paths if path.is_file()}


def change_report(before: dict[Path, str], after: dict[Path, str], root: Path) -> list[str]:
    """One line per generated file that changed, was added or was removed, then the count:
    '3 changed, 41 unchanged'."""
    lines = []
    for path in sorted(before.keys() | after.keys()):
        relative = path.relative_to(root)
        if path not in after:
            lines.append(f"removed {relative}")
        elif path not in before:
            lines.append(f"added {relative}")
        elif before[path] != after[path]:
            lines.append(f"changed {relative}")
    unchanged = sum(1 for path, text in after.items() if before.get(path) == text)
    lines.append(f"{len(lines)} changed, {unchanged} unchanged.")
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="only report stale notebooks")
    parser.add_argument("--root", type=Path, default=Path.cwd(), help="the repository root")
    args = parser.parse_args(argv)
    try:
        return _run(args)
    except ValueError as error:  # a chapter or _quarto.yml the generator cannot convert
        print(f"error: {error}", file=sys.stderr)
        return 2


def _run(args: argparse.Namespace) -> int:
    if args.check:
        stale = stale_notebooks(args.root)
        if solutions.is_stale(args.root):
            stale.append(str(solutions.SOLUTIONS_FILE))
        stale.extend(block_notebooks.stale(args.root))
        if stale:
            print(
                "Out of date (run python -m tools.notebooks, which first copies any notebook "
                f"holding saved work to {SAVED_WORK_DIR}/):",
                ", ".join(stale),
            )
            return 1
        count = len(chapter_paths(args.root))
        print(
            f"All {2 * count} notebooks ({count} chapters, with and without solutions) are in sync."
        )
        return 0
    before = _generated_files(args.root)
    _, kept = write_all(args.root)
    _, block_copies = block_notebooks.write(args.root)
    solutions.write(args.root)
    for line in change_report(before, _generated_files(args.root), args.root):
        print(line)
    for copy in kept + block_copies:
        print("kept a copy of your saved work:", copy.relative_to(args.root))
    return 0


if __name__ == "__main__":
    sys.exit(main())
