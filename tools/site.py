"""Build a browsable HTML version of the book without Quarto, from the executed notebooks.

Usage, from the repository root: `python -m tools.site [--executed _executed] [--out _site]`
(`scripts/course.sh` runs it when Quarto is missing, after executing every notebook).

The pages mirror Quarto's layout (`_site/index.html`, `_site/chapters/<chapter>.html`, ...), in
`_quarto.yml`'s order. A chapter's page is its source converted by `tools.notebooks` for the book
(`boxes=True`: callouts as boxes, figures with their `fig-alt`), each code cell with the outputs of
the same cell of its executed notebook (`<executed>/<chapter>.ipynb`), exported with nbconvert's
HTML exporter and the template `site.html.j2`, figures embedded as data URIs. A page that is not a
notebook (the welcome page, the workshop appendices) is converted the same way and its few cells
(the banner, the welcome page's version line) run in one kernel, as Quarto runs them. A callout is
one box around all of its cells, a `<details>` where the chapter collapses it (every exercise's
solution); no page shows Jupyter's prompts. Links to the published book become links between the
local pages, with the `#sec-...`/`#fig-...` anchors Quarto would give; every page gets previous/next
links, the book's parts and chapters in a sidebar and its sections in a table of contents, and the
index lists the parts and chapters. A chapter that has not been executed is listed but not linked.
"""

from __future__ import annotations

import argparse
import contextlib
import posixpath
import re
import subprocess
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import nbformat
from jupyter_client.manager import KernelManager
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError
from nbconvert import HTMLExporter

from tools import colab
from tools.book import Book, load_book
from tools.chapter_notebooks import chapter_paths, chapter_to_notebook, expand_includes
from tools.qmd import (
    HEADING,
    first_heading,
    load_config,
)
from tools.run_course import kernel_environment
from tools.site_anchors import ANCHOR, add_anchors
from tools.workshop_pages import render_asis

TEMPLATE = Path(__file__).with_name("site.html.j2")
SUMMARY_HEADING = "## Your exercises at a glance"
TOC_LEVELS = (2, 3)
"""The heading levels a page's table of contents lists (Quarto's default depth)."""


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


# --- notebooks as pages -------------------------------------------------------------------


def for_the_site(notebook: nbformat.NotebookNode, book: Book) -> nbformat.NotebookNode:
    """The notebook without what only matters in Jupyter or Colab.

    The Colab setup cell does nothing here. Hidden cells (`echo: false`) show their output only, and
    cells whose output is hidden (`include: false`) show nothing.
    """
    setup = colab.setup_source(book.repository)
    cells = []
    for cell in notebook.cells:
        if cell.cell_type == "code" and cell.source == setup:
            continue
        if cell.metadata.get("jupyter", {}).get("source_hidden", False):
            cell.metadata["transient"] = {"remove_source": True}
        if cell.metadata.get("jupyter", {}).get("outputs_hidden", False):  # `include: false`
            cell.outputs = []
        cells.append(cell)
    notebook.cells = cells
    return notebook


def without_exercise_summary(notebook: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """The notebook without the exercise summary every converted page ends with."""
    notebook.cells = [
        cell
        for cell in notebook.cells
        if "exercise_summary(" not in cell.source and cell.source != SUMMARY_HEADING
    ]
    return notebook


def with_outputs(notebook: nbformat.NotebookNode, executed: Path) -> None:
    """Gives each code cell the outputs of the cell with its id in the executed notebook."""
    ran = {
        cell.id: cell
        for cell in nbformat.read(executed, as_version=4).cells
        if cell.cell_type == "code"
    }
    for cell in notebook.cells:
        if cell.cell_type != "code":
            continue
        if cell.id not in ran:
            raise ValueError(
                f"{executed} was executed from an older version of its chapter (no code cell "
                f"{cell.id!r}): run python -m tools.notebooks, then bash scripts/course.sh "
                f"{executed.stem}"
            )
        cell.outputs, cell.execution_count = ran[cell.id].outputs, ran[cell.id].execution_count


def with_alt_texts(notebook: nbformat.NotebookNode) -> None:
    """Each image a figure's cell draws gets the cell's `fig-alt`, where the template reads it."""
    for cell in notebook.cells:
        alt = cell.metadata.get("fig-alt")
        for output in cell.get("outputs", []) if alt else []:
            for mimetype in output.get("data", {}):
                if mimetype.startswith("image/"):
                    output.setdefault("metadata", {})
                    output.metadata[mimetype] = {**output.metadata.get(mimetype, {}), "alt": alt}


def mark_callout_edges(notebook: nbformat.NotebookNode) -> None:
    """Where each callout box opens and closes, for the template: `metadata["site"]` of each cell
    has the callouts to close before it (innermost first) and to open (outermost first), and the
    notebook's those still open at its end."""
    current: list[dict] = []
    for cell in notebook.cells:
        wanted = list(cell.metadata.get("callouts", []))
        same = 0
        while (
            same < min(len(current), len(wanted))
            and current[same]["number"] == wanted[same]["number"]
        ):
            same += 1
        cell.metadata["site"] = {"close": current[same:][::-1], "open": wanted[same:]}
        current = wanted
    notebook.metadata["site"] = {"close": current[::-1]}


def table_of_contents(notebook: nbformat.NotebookNode) -> list[dict]:
    """The page's sections outside callouts, from its anchored headings: level, id and text."""
    entries, anchor = [], None
    for cell in notebook.cells:
        if cell.cell_type != "markdown" or cell.metadata.get("callouts"):
            continue
        for line in cell.source.split("\n"):
            found, heading = ANCHOR.match(line), HEADING.match(line)
            if found:
                anchor = found.group(1)
                continue
            if heading and anchor and len(heading.group(1)) in TOC_LEVELS:
                entries.append(
                    {"level": len(heading.group(1)), "id": anchor, "text": heading.group(2)}
                )
            anchor = anchor if not line.strip() else None
    return entries


@contextlib.contextmanager
def page_kernel(cwd: Path) -> Iterator[Callable[[nbformat.NotebookNode], None]]:
    """A function that executes a notebook; every notebook in one kernel, started at first use in
    `cwd` (as Quarto runs a page from its folder)."""
    manager: KernelManager | None = None

    def execute(notebook: nbformat.NotebookNode) -> None:
        nonlocal manager
        if manager is None:
            manager = KernelManager(kernel_name="python3")
            # The kernel's own messages (not the cells' outputs) would only be noise here.
            manager.start_kernel(
                cwd=str(cwd),
                env=kernel_environment(),
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
        NotebookClient(notebook, km=manager, timeout=600).execute()

    try:
        yield execute
    finally:
        if manager is not None:
            manager.shutdown_kernel(now=True)


def page_notebook(
    root: Path,
    page: SitePage,
    book: Book,
    execute: Callable[[nbformat.NotebookNode], None],
) -> nbformat.NotebookNode:
    """The notebook a page is built from: its source converted, with its executed notebook's
    outputs, or, for a page that is not a notebook, executed by `execute`."""
    text = expand_includes((root / page.path).read_text(), (root / page.path).parent)
    name = f"{Path(page.path).stem}.ipynb"
    if page.notebook is not None:
        notebook = chapter_to_notebook(text, name, book=book, page=page.path, boxes=True)
        with_outputs(notebook, page.notebook)
    else:
        text = render_asis(text)  # the lists a page generates (workshop, instructors)
        notebook = chapter_to_notebook(text, name, book=book, page=page.path, boxes=True)
        if first_heading(text) is None:  # the generated title cell, without a Colab badge
            notebook.cells[0].source = f"# {page.title}"
        else:  # the page's own heading is its title
            notebook.cells.pop(0)
        notebook = without_exercise_summary(for_the_site(notebook, book))
        try:
            execute(notebook)
        except CellExecutionError as error:
            raise ValueError(f"{page.path}: a cell failed: {error}") from error
    notebook = for_the_site(notebook, book)
    add_anchors(notebook, text, book.pages[page.path], book)
    with_alt_texts(notebook)
    mark_callout_edges(notebook)
    return notebook


def _link(page: SitePage, target: SitePage) -> dict[str, str]:
    return {"href": relative_link(page.html_path, target.html_path), "title": target.title}


def navigation(page: SitePage, built: list[SitePage], book_title: str) -> dict:
    """The bar at the top and bottom of a page: the book (index), previous and next page."""
    position = built.index(page)
    return {
        "book": book_title,
        "home": relative_link(page.html_path, "index.html"),
        "prev": _link(page, built[position - 1]) if position > 0 else None,
        "next": _link(page, built[position + 1]) if position + 1 < len(built) else None,
    }


def book_outline(page: SitePage, pages: list[SitePage]) -> list[dict]:
    """The parts and their pages, as seen from `page`: title, relative link (None for a chapter not
    executed) and whether it is this page. The sidebar and the index's contents show it."""
    parts: list[dict] = []
    for other in pages:
        if not parts or parts[-1]["part"] != other.part:
            parts.append({"part": other.part, "pages": []})
        parts[-1]["pages"].append(
            {
                "title": other.title,
                "href": relative_link(page.html_path, other.html_path) if other.built else None,
                "current": other == page,
            }
        )
    return parts


def local_links(page_html: str, page: SitePage, built: list[SitePage], site: str) -> str:
    """Links to pages of the published book that are built here become relative local links."""
    local = {p.html_path for p in built}

    def replace(match: re.Match) -> str:
        target = match.group(2) or "index.html"
        if target not in local:
            return match.group(0)
        return f'{match.group(1)}"{relative_link(page.html_path, target)}{match.group(3) or ""}"'

    return re.sub(rf'(href=)"{re.escape(site)}([^"#]*)(#[^"]*)?"', replace, page_html)


def render(notebook: nbformat.NotebookNode, title: str, course: dict) -> str:
    """One notebook as a complete HTML page: nbconvert's JupyterLab template, without prompts,
    extended by ours (`site.html.j2`), which reads `course` (navigation, sidebar, contents)."""
    notebook.metadata["title"] = title
    exporter = HTMLExporter(
        template_name="lab",
        extra_template_paths=[str(TEMPLATE.parent)],
        template_file=TEMPLATE.name,
        exclude_input_prompt=True,
        exclude_output_prompt=True,
    )
    body, _ = exporter.from_notebook_node(notebook, resources={"course": course})
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
    with page_kernel(root) as execute:
        for page in built:
            notebook = page_notebook(root, page, book, execute)
            course = {
                "nav": navigation(page, built, book_title),
                "outline": book_outline(page, pages),
                "contents": page.html_path == "index.html",
                "toc": table_of_contents(notebook),
            }
            page_html = render(notebook, f"{page.title} | {book_title}", course)
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
