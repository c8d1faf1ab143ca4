"""A chapter's structure as the workshop reads it: its Python chunks and its sections."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from tools.chapter_notebooks import expand_includes
from tools.qmd import CODE_FENCE, DIV_FENCE, HEADING, cell_options, heading_id, option_value

ROOT = Path(__file__).resolve().parents[1]


@dataclass(frozen=True)
class Chunk:
    """A ```{python} chunk of a chapter: lines `start` (opening fence) to `end` (closing fence)."""

    start: int
    end: int
    code: str
    """Its code without the `#|` options."""
    label: str
    in_div: bool
    """Inside a fenced div (a callout: the exercise solutions are there)."""


@dataclass(frozen=True)
class Section:
    """A heading with an id, and its text up to the next heading of any level (`end` excluded)."""

    id: str
    level: int
    title: str
    start: int
    end: int


@dataclass
class Chapter:
    path: str
    lines: list[str]
    chunks: list[Chunk] = field(default_factory=list)
    sections: list[Section] = field(default_factory=list)

    def section(self, section_id: str) -> Section:
        for section in self.sections:
            if section.id == section_id:
                return section
        raise ValueError(f"{self.path} has no section {section_id!r}")

    def section_of(self, line: int) -> Section | None:
        """The innermost section holding `line`."""
        found = None
        for section in self.sections:
            if section.start <= line:
                found = section
        return found

    def top_section(self, section: Section) -> Section:
        """The level-2 section that holds `section` (itself if it is one)."""
        found = section
        for candidate in self.sections:
            if candidate.start <= section.start and candidate.level <= found.level:
                if candidate.level == 2:
                    found = candidate
        return found


def parse_chapter(text: str, path: str) -> Chapter:
    """The chunks and the sections (headings outside code and callouts) of a chapter's text."""
    lines = text.split("\n")
    chapter = Chapter(path, lines)
    fence, depth, opened = None, 0, 0
    headings: list[tuple[int, int, str, str]] = []
    for index, line in enumerate(lines):
        code = CODE_FENCE.match(line)
        if fence is not None:
            if code and code.group(2).startswith(fence) and not code.group(3).strip():
                if info_is_python(lines[opened]):
                    body = lines[opened + 1 : index]
                    options = cell_options(body)
                    chapter.chunks.append(
                        Chunk(
                            opened,
                            index,
                            "\n".join(body[len(options) :]).strip("\n"),
                            option_value(options, "label"),
                            depth > 0,
                        )
                    )
                fence = None
            continue
        if code:
            fence, opened = code.group(2), index
            continue
        div = DIV_FENCE.match(line)
        if div:
            depth = depth + 1 if div.group(2) else max(depth - 1, 0)
            continue
        heading = HEADING.match(line)
        if heading and depth == 0 and index > 0:
            headings.append(
                (
                    index,
                    len(heading.group(1)),
                    heading.group(2),
                    heading_id(heading.group(3)) or "",
                )
            )
    for position, (index, level, title, section_id) in enumerate(headings):
        end = headings[position + 1][0] if position + 1 < len(headings) else len(lines)
        if section_id:
            chapter.sections.append(Section(section_id, level, title, index, end))
    return chapter


def info_is_python(fence_line: str) -> bool:
    return CODE_FENCE.match(fence_line).group(3).strip().startswith("{python")


def load_chapter(name: str, root: Path = ROOT) -> Chapter:
    path = root / "chapters" / f"{name}.qmd"
    return parse_chapter(expand_includes(path.read_text(), path.parent), f"chapters/{name}.qmd")


RELATIVE_LINK = re.compile(r"\]\((?![a-z]+:|/|#)([^)\s]+)")
SAME_PAGE_LINK = re.compile(r"\]\(#")
LABEL = re.compile(r"\s*\{#(?:sec|tbl|fig|eq|lst)-[\w-]+\}")


def section_text(chapter: str, section_id: str, root: Path = ROOT, *, heading: bool = False) -> str:
    """A section of a chapter as another page at the root can show it: its links made relative to
    the root and its labels removed (an id belongs to one page only)."""
    parsed = load_chapter(chapter, root)
    section = parsed.section(section_id)
    lines = parsed.lines[section.start + (0 if heading else 1) : section.end]
    text = "\n".join(lines).strip("\n")
    text = RELATIVE_LINK.sub(lambda m: f"](chapters/{m.group(1)}", text)
    text = SAME_PAGE_LINK.sub(f"](chapters/{chapter}.qmd#", text)
    return LABEL.sub("", text)
