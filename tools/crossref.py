"""Quarto's numbering of the whole book, computed without Quarto, for the notebooks' cross-references.

As Quarto (1.4 and later) numbers a book with `number-sections` and `crossref: chapters: true`:
- the pages of `book.chapters` are numbered 1, 2, ... in `_quarto.yml` order (parts take no
  number), `book.appendices` A, B, ...; a page whose title or first heading has `.unnumbered`
  (or `-`) takes none, and neither do its sections;
- sections are "<chapter>.<i>[.<j>...]" from the heading levels (## is level one below the
  chapter); `.unnumbered` headings and a callout's title heading are not counted;
- figures, tables and equations are "<chapter>.<k>", counted separately in order of appearance,
  from `#| label: fig-...`/`tbl-...` cells and `{#fig-...}`, `{#tbl-...}`, `{#eq-...}` attributes.
"""

from __future__ import annotations

import string
from dataclasses import dataclass, field
from pathlib import Path

from tools.qmd import (
    CODE_FENCE,
    DIV_FENCE,
    HEADING,
    ID_ATTRIBUTE,
    cell_options,
    flatten_chapters,
    heading_id,
    is_python_cell,
    is_unnumbered,
    load_config,
    option_value,
    page_title,
    split_front_matter,
    title_and_attributes,
)

KIND_NAMES = {"fig": "Figure", "tbl": "Table", "eq": "Equation", "sec": "Section", "lst": "Listing"}
"""The word Quarto writes before a reference's number, by label prefix."""


@dataclass(frozen=True)
class Target:
    """Something a `@label` can refer to: its words ("Figure 2.3"), its page and its anchor."""

    label: str
    text: str
    page: str


@dataclass
class Page:
    """One page of the book: its chapter prefix ('2', 'A' or None) and what it numbers."""

    path: str
    prefix: str | None
    title: str
    headings: list[tuple[str, str | None]] = field(default_factory=list)
    """Every heading's text (attributes removed) with its number, in order; callout titles excluded."""
    targets: dict[str, Target] = field(default_factory=dict)


class _Counter:
    """Section and float numbers of one page as its lines go by."""

    def __init__(self, page: Page):
        self.page, self.sections, self.floats = page, [0] * 7, dict.fromkeys(KIND_NAMES, 0)

    def float_target(self, label: str) -> None:
        kind = label.split("-", 1)[0]
        self.floats[kind] += 1
        number = (
            f"{self.page.prefix}.{self.floats[kind]}"
            if self.page.prefix
            else str(self.floats[kind])
        )
        self.page.targets[label] = Target(label, f"{KIND_NAMES[kind]} {number}", self.page.path)

    def heading(self, level: int, text: str, attributes: str | None) -> None:
        number = None
        if level >= 2 and self.page.prefix and not is_unnumbered(attributes):
            self.sections[level] += 1
            self.sections[level + 1 :] = [0] * (6 - level)
            number = ".".join([self.page.prefix, *map(str, self.sections[2 : level + 1])])
        self.page.headings.append((text, number))
        label = heading_id(attributes)
        if label and label.startswith("sec-"):
            if level == 1 and self.page.prefix:
                words = f"Chapter {self.page.prefix}"
            else:
                words = f"Section {number}" if number else text
            self.page.targets[label] = Target(label, words, self.page.path)


def _fenced_block(lines: list[str], start: int) -> tuple[list[str], int]:
    """The body of the code block whose fence opens at `start`, and the index after its end."""
    fence = CODE_FENCE.match(lines[start]).group(2)
    end = start + 1
    while end < len(lines):
        close = CODE_FENCE.match(lines[end])
        if (
            close
            and close.group(2).startswith(fence[0])
            and len(close.group(2)) >= len(fence)
            and not close.group(3).strip()
        ):
            break
        end += 1
    return lines[start + 1 : end], end + 1


def number_page(path: str, text: str, prefix: str | None) -> Page:
    """Every heading, figure, table and equation of one page, numbered under `prefix`."""
    _, body = split_front_matter(text)
    page = Page(path, prefix, page_title(text))
    counter = _Counter(page)
    lines = body.split("\n")
    index, after_callout = 0, False
    while index < len(lines):
        line = lines[index]
        fence = CODE_FENCE.match(line)
        if fence:
            cell, index = _fenced_block(lines, index)
            label = (
                option_value(cell_options(cell), "label")
                if is_python_cell(fence.group(3).strip())
                else ""
            )
            if label.split("-", 1)[0] in ("fig", "tbl"):
                counter.float_target(label)
            after_callout = False
            continue
        heading = HEADING.match(line)
        if heading and not after_callout:
            counter.heading(len(heading.group(1)), heading.group(2), heading.group(3))
        elif not heading:
            for label in ID_ATTRIBUTE.findall(line):
                if not label.startswith("sec-"):
                    counter.float_target(label)
        div = DIV_FENCE.match(line)
        if line.strip():
            after_callout = bool(div and ".callout" in div.group(2))
        index += 1
    return page


def _is_numbered(text: str) -> bool:
    """Quarto's rule: a page is numbered unless its title (or, without one, first heading) is unnumbered."""
    front, body = split_front_matter(text)
    if front and isinstance(front.get("title"), str):
        return not is_unnumbered(title_and_attributes(front["title"])[1])
    for line in body.split("\n"):
        heading = HEADING.match(line)
        if heading:
            return not is_unnumbered(heading.group(3))
    return True


def number_book(root: Path) -> list[Page]:
    """Every page that `_quarto.yml` lists, numbered as Quarto numbers them, in book order."""
    book = load_config(root).get("book") or {}
    pages = []
    for key, labels in (
        ("chapters", [str(n) for n in range(1, 1000)]),
        ("appendices", list(string.ascii_uppercase)),
    ):
        numbers = iter(labels)
        for path in flatten_chapters(book.get(key)):
            if not (root / path).is_file():  # Quarto stops here too
                raise ValueError(f"_quarto.yml lists {path}, which does not exist")
            text = (root / path).read_text()
            pages.append(number_page(path, text, next(numbers) if _is_numbered(text) else None))
    return pages


def all_targets(pages: list[Page]) -> dict[str, Target]:
    """Every cross-reference target of the book, by label; a label defined twice is an error."""
    targets: dict[str, Target] = {}
    for page in pages:
        for label, target in page.targets.items():
            if label in targets:
                raise ValueError(f"@{label} is defined in {targets[label].page} and in {page.path}")
            targets[label] = target
    return targets
