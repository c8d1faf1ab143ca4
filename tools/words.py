"""How long a chapter's main path reads: `python -m tools.words chapters/jit.qmd [...]`.

The main path is what a reader meets who reads straight through: prose outside code cells, outside
collapsed callouts (`::: {.callout-* collapse="true"}`, which hold the exercises' solutions), outside
the "Going deeper" boxes and outside solutions even where one is not collapsed; plus the code lines
shown there (hidden cells, `#| echo: false`, and cell options are not read). The reading time is
an estimate: WORDS_PER_MINUTE for prose, CODE_LINES_PER_MINUTE for code. The main path from the
`## Exercises` heading on (the tasks and their stubs) is also counted apart.
"""

from __future__ import annotations

import argparse
import re
from dataclasses import dataclass
from pathlib import Path

from tools import qmd

WORDS_PER_MINUTE = 200
CODE_LINES_PER_MINUTE = 10  # about six seconds to read a line of code and see what it does

FRONT_MATTER = re.compile(r"^---[ \t]*\n.*?\n---[ \t]*\n", re.DOTALL)
HTML_COMMENT = re.compile(r"<!--.*?-->", re.DOTALL)
MARKUP = re.compile(r"\]\([^)]*\)|\{[#.][^}]*\}|\{[^}]*=[^}]*\}")
"""Link targets and attribute blocks: not words a reader reads."""
WORD = re.compile(r"\S*[A-Za-z0-9]\S*")
OFF_PATH_TITLE = re.compile(r"^\s*(?:#+\s*)?(?:Going deeper|Solution)\b", re.IGNORECASE)
COLLAPSED = re.compile(r"""\bcollapse\s*=\s*["']?true\b""")
TITLE = re.compile(r"""\btitle\s*=\s*(["'])(.*?)\1""")
EXERCISES = re.compile(r"^##\s+Exercises\b")


def _minutes(prose_words: int, code_lines: int) -> float:
    return prose_words / WORDS_PER_MINUTE + code_lines / CODE_LINES_PER_MINUTE


@dataclass(frozen=True)
class Count:
    main_words: int
    main_code_lines: int
    total_words: int
    exercise_words: int = 0
    """The main path's words from the `## Exercises` heading on (included in main_words)."""
    exercise_code_lines: int = 0

    @property
    def minutes(self) -> float:
        """Estimated reading time of the main path."""
        return _minutes(self.main_words, self.main_code_lines)

    @property
    def minutes_before_exercises(self) -> float:
        return _minutes(
            self.main_words - self.exercise_words, self.main_code_lines - self.exercise_code_lines
        )


def _blank(match: re.Match) -> str:
    return re.sub(r"[^\n]", " ", match.group(0))


def _is_off_path(attributes: str, first_line: str) -> bool:
    """Whether a div with these attributes, whose first non-blank line is given, is off the path."""
    if ".callout" in attributes and COLLAPSED.search(attributes):
        return True
    title = TITLE.search(attributes)
    return bool(OFF_PATH_TITLE.match(title.group(2) if title else first_line))


def off_path_lines(lines: list[str]) -> set[int]:
    """The 0-based indices of the lines inside an off-path div (fences included). `lines` is the
    page with its code cells blanked, so every `:::` left is a div fence."""
    hidden: set[int] = set()
    stack: list[bool] = []  # per open div: whether it, or a div around it, is off the path
    for index, line in enumerate(lines):
        fence = qmd.DIV_FENCE.match(line)
        if fence is None:
            if stack and stack[-1]:
                hidden.add(index)
            continue
        if fence.group(2):  # an opening fence, with attributes
            following = next((rest for rest in lines[index + 1 :] if rest.strip()), "")
            off = (bool(stack) and stack[-1]) or _is_off_path(fence.group(2), following)
            stack.append(off)
            if off:
                hidden.add(index)
        elif stack:  # a closing fence
            if stack.pop():
                hidden.add(index)
    return hidden


def words(text: str) -> int:
    """The words of some prose: link targets, attributes, comments and div fences left out."""
    text = HTML_COMMENT.sub(" ", text)
    text = "\n".join(line for line in text.split("\n") if not qmd.DIV_FENCE.match(line))
    return len(WORD.findall(MARKUP.sub(" ", text)))


def _read_code_lines(body: list[str]) -> int:
    """The lines of a cell a reader reads: none for a hidden cell, else its non-blank lines."""
    options = qmd.cell_options(body)
    if "false" in (qmd.option_value(options, "echo"), qmd.option_value(options, "include")):
        return 0
    return sum(1 for line in body if line.strip() and not qmd.CELL_OPTION.match(line))


def _main_path(lines: list[str], blocks, hidden: set[int], begin: int, end: int) -> tuple[int, int]:
    """(words, code lines) of the main path between two 0-based line indices."""
    kept = (line for index, line in enumerate(lines[begin:end], begin) if index not in hidden)
    code = sum(
        _read_code_lines(body)
        for info, body, first in blocks  # `first` is the 1-based line after the opening fence
        if qmd.is_python_cell(info) and first - 2 not in hidden and begin <= first - 2 < end
    )
    return words("\n".join(kept)), code


def count(text: str) -> Count:
    """The main path's words and code lines, and the page's words in all, of one page's text."""
    prose, blocks = qmd.split_blocks(FRONT_MATTER.sub(_blank, text, count=1))
    lines = prose.split("\n")
    hidden = off_path_lines(lines)
    start = next((i for i, line in enumerate(lines) if EXERCISES.match(line)), len(lines))
    before = _main_path(lines, blocks, hidden, 0, start)
    exercises = _main_path(lines, blocks, hidden, start, len(lines))
    return Count(before[0] + exercises[0], before[1] + exercises[1], words(prose), *exercises)


def report(path: Path) -> str:
    counted = count(path.read_text())
    return (
        f"{path}: main path {counted.main_words} words and {counted.main_code_lines} code lines, "
        f"about {counted.minutes:.0f} min ({WORDS_PER_MINUTE} words/min, "
        f"{CODE_LINES_PER_MINUTE} code lines/min), of which {counted.minutes_before_exercises:.0f} "
        f"min before the exercises; {counted.total_words} words in all"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("pages", nargs="+", type=Path, help="chapters/*.qmd pages")
    for path in parser.parse_args(argv).pages:
        print(report(path))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
