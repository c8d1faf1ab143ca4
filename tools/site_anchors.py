"""The ids Quarto gives a page's sections, figures, tables and references, put into the local
book's notebooks (`tools.site`) so that links between its pages land where Quarto's would."""

from __future__ import annotations

import re

import nbformat

from tools.book import Book
from tools.crossref import Page
from tools.qmd import (
    CODE_FENCE,
    HEADING,
    cell_options,
    heading_id,
    is_python_cell,
    option_value,
    split_blocks,
)

TITLE_LINE = "# @title "  # the first line `tools.notebooks` gives a hidden cell
NUMBER = re.compile(r"^(?:[0-9A-Z]+(?:\.[0-9]+)*)\s+")
ANCHOR = re.compile(r'^<div id="([^"]+)"></div>$')
"""The empty element that `add_anchors` puts before a heading, with the heading's id."""


def _without_options(source: str) -> str:
    lines = source.strip("\n").split("\n")
    if lines and lines[0].startswith(TITLE_LINE):
        lines = lines[1:]
    return "\n".join(lines[len(cell_options(lines)) :]).strip("\n")


def section_ids(text: str) -> dict[str, str]:
    """{heading text: id} for every heading of a page with a `{#id}` attribute."""
    prose, _ = split_blocks(text)
    ids = {}
    for line in prose.split("\n"):
        heading = HEADING.match(line)
        label = heading_id(heading.group(3)) if heading else None
        if label:
            ids[heading.group(2)] = label
    return ids


def float_ids(text: str) -> dict[str, str]:
    """{code without its options: label} for every figure or table cell of a page."""
    _, blocks = split_blocks(text)
    ids = {}
    for info, body, _ in blocks:
        label = option_value(cell_options(body), "label")
        if is_python_cell(info) and label.split("-", 1)[0] in ("fig", "tbl"):
            ids[_without_options("\n".join(body))] = label
    return ids


def _anchored_heading(line: str, ids: dict[str, str]) -> str:
    """A Markdown heading line preceded by an empty element with its Quarto id, if it has one."""
    heading = HEADING.match(line)
    if heading is None or CODE_FENCE.match(line):
        return line
    text = heading.group(2)
    label = ids.get(text) or ids.get(NUMBER.sub("", text, count=1))
    return f'<div id="{label}"></div>\n\n{line}' if label else line


def _anchored_references(source: str, book: Book) -> str:
    """A reference list whose entries carry Quarto's `ref-<key>` ids (citations without a URL link there)."""
    for key, reference in book.references.items():
        line = f"- {reference.reference_line()}"
        source = source.replace(line, f'- <span id="ref-{key}"></span>{line[2:]}')
    return source


def _anchored_captions(source: str, labels: set[str]) -> str:
    """Caption lines ('*[Table 3.1](...#tbl-x): ...*') preceded by their float's id."""
    lines = []
    for line in source.split("\n"):
        label = next(
            (label for label in labels if line.startswith("*[") and f"#{label})" in line), None
        )
        lines.append(f'<div id="{label}"></div>\n\n{line}' if label else line)
    return "\n".join(lines)


def add_anchors(notebook: nbformat.NotebookNode, text: str, page: Page, book: Book) -> None:
    """Gives the notebook's headings, figures, tables and references the ids that links point to.

    A figure or table made by a code cell gets its id above the cell; one without such a cell (a
    Markdown table) gets it above its caption.
    """
    sections, floats = section_ids(text), float_ids(text)
    captions = {label for label in page.targets if label.split("-", 1)[0] in ("fig", "tbl")} - set(
        floats.values()
    )
    cells = []
    for cell in notebook.cells:
        if cell.cell_type == "markdown":
            cell.source = "\n".join(
                _anchored_heading(line, sections) for line in cell.source.split("\n")
            )
            cell.source = _anchored_captions(_anchored_references(cell.source, book), captions)
        elif _without_options(cell.source) in floats:
            anchor = nbformat.v4.new_markdown_cell(
                f'<div id="{floats[_without_options(cell.source)]}"></div>'
            )
            if "callouts" in cell.metadata:  # in the same box as its figure
                anchor.metadata["callouts"] = cell.metadata["callouts"]
            cells.append(anchor)
        cells.append(cell)
    notebook.cells = cells
