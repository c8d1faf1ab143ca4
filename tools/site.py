"""Build a browsable HTML version of the book without Quarto, from the executed notebooks.

Usage, from the repository root: `python -m tools.site [--executed _executed] [--out _site]`
(`scripts/course.sh` runs it when Quarto is missing, after executing every notebook).

The pages mirror Quarto's layout (`_site/index.html`, `_site/chapters/<chapter>.html`, ...), in
`_quarto.yml`'s order. A chapter is its executed notebook (`<executed>/<chapter>.ipynb`) exported
with nbconvert's HTML exporter, figures embedded as data URIs; a page that is not a notebook
(the welcome page, the appendices) is converted from its source by `tools.notebooks` and shown
without running it. Links to the published book become links between the local pages, with the
`#sec-...`/`#fig-...` anchors Quarto would give; every page gets previous/next links, and the index
lists the parts and chapters. A chapter that has not been executed is listed but not linked.
"""

from __future__ import annotations

import argparse
import html
import posixpath
import re
import sys
from dataclasses import dataclass
from pathlib import Path

import nbformat
from nbconvert import HTMLExporter

from tools import colab
from tools.blocks import render_asis
from tools.book import Book, load_book
from tools.crossref import Page
from tools.notebooks import chapter_paths, chapter_to_notebook, expand_includes
from tools.qmd import (
    CODE_FENCE,
    HEADING,
    cell_options,
    first_heading,
    heading_id,
    is_python_cell,
    load_config,
    option_value,
    split_blocks,
)

TEMPLATE = Path(__file__).with_name("site.html.j2")
SUMMARY_HEADING = "## Your exercises at a glance"
TITLE_LINE = "# @title "  # the first line `tools.notebooks` gives a hidden cell
NUMBER = re.compile(r"^(?:[0-9A-Z]+(?:\.[0-9]+)*)\s+")


@dataclass(frozen=True)
class SitePage:
    """One page of the local book: where it is listed, and what it is built from."""

    path: str
    """The page in the book, as `_quarto.yml` lists it ('chapters/jit.qmd')."""
    part: str | None
    """The part it is listed under ('Appendices' for an appendix), None for a top-level page."""
    title: str
    """Its title as the book prints it: '2 Just-in-time compilation', 'Appendix A \u2014 ...'."""
    notebook: Path | None
    """The executed notebook it is built from; None for a page converted from its source."""
    built: bool
    """False for a chapter whose executed notebook is missing: listed, not linked."""

    @property
    def html_path(self) -> str:
        return re.sub(r"\.qmd$", ".html", self.path)


def numbered_title(title: str, prefix: str | None) -> str:
    """A page's title with Quarto's number: '2 Title', 'Appendix A \u2014 Title', or as is."""
    if prefix is None:
        return title
    return f"{prefix} {title}" if prefix.isdigit() else f"Appendix {prefix} \u2014 {title}"


def outline(root: Path) -> list[tuple[str | None, str]]:
    """(part, page) for every page `_quarto.yml` lists, in book order; appendices under 'Appendices'."""
    book = load_config(root).get("book") or {}
    entries: list[tuple[str | None, str]] = []

    def walk(items, part: str | None) -> None:
        for item in items or []:
            if isinstance(item, str):
                entries.append((part, item))
            elif isinstance(item, dict):
                walk([item[key] for key in ("href", "file") if key in item], part)
                walk(item.get("chapters"), str(item.get("part", part)) if "part" in item else part)

    walk(book.get("chapters"), None)
    walk(book.get("appendices"), "Appendices")
    return entries


def site_pages(root: Path, executed: Path, book: Book) -> list[SitePage]:
    """Every page of the book, with the executed notebook of each chapter that has one."""
    chapters = {path.relative_to(root).as_posix() for path in chapter_paths(root)}
    pages = []
    for part, path in outline(root):
        numbered = book.pages[path]
        plain = numbered.title or Path(path).stem
        title = numbered_title(plain, numbered.prefix)
        notebook = executed / f"{Path(path).stem}.ipynb"
        if path in chapters:
            pages.append(SitePage(path, part, title, notebook, notebook.exists()))
        else:
            pages.append(SitePage(path, part, title, None, True))
    return pages


def relative_link(from_page: str, to_page: str) -> str:
    """The relative address of `to_page` (an .html path of the site) from `from_page`."""
    return posixpath.relpath(to_page, posixpath.dirname(from_page) or ".")


# --- anchors: the ids Quarto gives sections, figures and tables ---------------------------


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
            cells.append(
                nbformat.v4.new_markdown_cell(
                    f'<div id="{floats[_without_options(cell.source)]}"></div>'
                )
            )
        cells.append(cell)
    notebook.cells = cells


# --- notebooks as pages -------------------------------------------------------------------


def for_the_site(
    notebook: nbformat.NotebookNode, book: Book, *, executed: bool
) -> nbformat.NotebookNode:
    """The notebook without what only matters in Jupyter or Colab.

    The Colab setup cell does nothing here. Hidden cells (`echo: false`) show their output only, and
    cells whose output is hidden (`include: false`) show nothing.
    A page that was not executed also loses its hidden cells and the exercise summary.
    """
    setup = colab.setup_source(book.repository)
    cells = []
    for cell in notebook.cells:
        if cell.cell_type == "code" and cell.source == setup:
            continue
        hidden = cell.metadata.get("jupyter", {}).get("source_hidden", False)
        if not executed and (
            hidden or "exercise_summary(" in cell.source or cell.source == SUMMARY_HEADING
        ):
            continue
        if hidden:
            cell.metadata["transient"] = {"remove_source": True}
        if cell.metadata.get("jupyter", {}).get("outputs_hidden", False):  # `include: false`
            cell.outputs = []
        cells.append(cell)
    notebook.cells = cells
    return notebook


def page_notebook(root: Path, page: SitePage, book: Book) -> nbformat.NotebookNode:
    """The notebook a page is built from: its executed notebook, or its source converted."""
    text = expand_includes((root / page.path).read_text(), (root / page.path).parent)
    if page.notebook is not None:
        notebook = nbformat.read(page.notebook, as_version=4)
    else:
        text = render_asis(text)  # the lists a page generates (workshop, instructors)
        notebook = chapter_to_notebook(
            text, f"{Path(page.path).stem}.ipynb", book=book, page=page.path
        )
        if first_heading(text) is None:  # the generated title cell, without a Colab badge
            notebook.cells[0].source = f"# {page.title}"
        else:  # the page's own heading is its title
            notebook.cells.pop(0)
    notebook = for_the_site(notebook, book, executed=page.notebook is not None)
    add_anchors(notebook, text, book.pages[page.path], book)
    return notebook


def _link(page: SitePage, target: SitePage, rel: str, label: str) -> str:
    href = html.escape(relative_link(page.html_path, target.html_path))
    return f'<a rel="{rel}" href="{href}">{label}{html.escape(target.title)}</a>'


def navigation(page: SitePage, built: list[SitePage], book_title: str) -> str:
    """The bar at the top and bottom of a page: the book (index), previous and next page."""
    position = built.index(page)
    home = html.escape(relative_link(page.html_path, "index.html"))
    links = [f'<a rel="index" href="{home}">{html.escape(book_title)}</a>']
    if position > 0:
        links.append(_link(page, built[position - 1], "prev", "\u2190 "))
    if position + 1 < len(built):
        links.append(_link(page, built[position + 1], "next", "\u2192 "))
    return '<nav class="course-nav">' + " ".join(links) + "</nav>"


def contents(pages: list[SitePage]) -> str:
    """The index's list of parts and pages; a chapter not executed is listed without a link."""
    lines, part = ['<nav class="course-contents"><h2>Contents</h2>', "<ul>"], None
    for page in pages:
        if page.part != part:
            part = page.part
            lines.append(f"</ul><h3>{html.escape(part or '')}</h3><ul>")
        if page.built:
            lines.append(
                f'<li><a href="{html.escape(page.html_path)}">{html.escape(page.title)}</a></li>'
            )
        else:
            lines.append(
                f"<li>{html.escape(page.title)} <em>(not executed: run bash scripts/course.sh)</em></li>"
            )
    lines.append("</ul></nav>")
    return "\n".join(lines)


def local_links(page_html: str, page: SitePage, built: list[SitePage], site: str) -> str:
    """Links to pages of the published book that are built here become relative local links."""
    local = {p.html_path for p in built}

    def replace(match: re.Match) -> str:
        target = match.group(2) or "index.html"
        if target not in local:
            return match.group(0)
        return f'{match.group(1)}"{relative_link(page.html_path, target)}{match.group(3) or ""}"'

    return re.sub(rf'(href=)"{re.escape(site)}([^"#]*)(#[^"]*)?"', replace, page_html)


def render(notebook: nbformat.NotebookNode, title: str, extra: dict[str, str]) -> str:
    """One notebook as a complete HTML page (nbconvert's JupyterLab template plus ours)."""
    notebook.metadata["title"] = title
    exporter = HTMLExporter(
        template_name="lab",
        extra_template_paths=[str(TEMPLATE.parent)],
        template_file=TEMPLATE.name,
    )
    body, _ = exporter.from_notebook_node(notebook, resources=dict(extra))
    return body


def build_site(root: Path, executed: Path, out: Path) -> list[SitePage]:
    """Writes every built page and the index under `out`; returns the pages, built or not."""
    if not executed.is_dir():
        raise ValueError(
            f"{executed} is not a folder of executed notebooks (run bash scripts/course.sh)"
        )
    book = load_book(root)
    book_title = str((load_config(root).get("book") or {}).get("title", "The book"))
    pages = site_pages(root, executed, book)
    built = [page for page in pages if page.built]
    for page in built:
        extra = {"course_nav": navigation(page, built, book_title)}
        if page.html_path == "index.html":
            extra["course_contents"] = contents(pages)
        title = f"{page.title} | {book_title}"
        page_html = render(page_notebook(root, page, book), title, extra)
        target = out / page.html_path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(local_links(page_html, page, built, book.site))
    return pages


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", type=Path, default=Path.cwd(), help="the repository root")
    parser.add_argument(
        "--executed", type=Path, default=Path("_executed"), help="the executed notebooks"
    )
    parser.add_argument("--out", type=Path, default=Path("_site"), help="where to write the site")
    args = parser.parse_args(argv)
    try:
        pages = build_site(args.root, args.executed, args.out)
    except ValueError as error:
        print(error, file=sys.stderr)
        return 1
    missing = [page.path for page in pages if not page.built]
    print(
        f"Wrote {len(pages) - len(missing)} pages to {args.out}/; open {args.out / 'index.html'} in a browser."
    )
    if missing:
        print("Not executed, so listed without a link:", ", ".join(missing))
    return 0


if __name__ == "__main__":
    sys.exit(main())
