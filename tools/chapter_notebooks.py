"""A chapter's two notebooks, from `chapters/*.qmd`: the conversion, the expected files, and the
learner work kept before a rewrite. The command is `tools.notebooks`.

Two notebooks come from each chapter: `notebooks/<chapter>.ipynb`, the whole chapter with the
exercise solutions (the solution notebook), and `notebooks/student/<chapter>.ipynb`, the same
without the solution callouts, so the exercise stubs and their checkers are what is left.

The .qmd files are parsed with jupytext's R Markdown reader, which understands ```{python}
chunks without the Quarto CLI; `tools.quarto_markdown` turns Quarto's Markdown into what Jupyter
and Colab render. Each notebook gets a title with Quarto's chapter number, an Open-in-Colab badge
and the setup cell of `tools.colab`. Code cells lose their `#|` options: `error: true` becomes the
`raises-exception` tag (nbmake then expects the error), `echo: false` a collapsed cell (Jupyter's
`source_hidden`, Colab's form view), a figure's or table's caption a Markdown line beside it. A cross-reference in code (a stub's
comment, a string that a hidden cell shows as Markdown) becomes the section's number and address.
Cell ids do not depend on a cell's position (`stable_cell_ids`), so inserting a cell in a chapter
changes only that cell in the notebook's diff.
"""

from __future__ import annotations

import hashlib
import re
import shutil
import time
from pathlib import Path

import jupytext
import nbformat
import yaml

from tools import colab
from tools.bibliography import reference_list
from tools.book import Book, load_book
from tools.crossref import number_page
from tools.qmd import cell_options, option_value, split_front_matter, title_and_attributes
from tools.quarto_markdown import SOLUTION_ELSEWHERE, STUDENT_NOTE, ChapterConverter

STUDENT_DIR = "student"
INCLUDE = re.compile(r"^\{\{<\s*include\s+(\S+)\s*>\}\}\s*$", re.MULTILINE)
SHORTCODE = re.compile(r"\{\{<\s*(\S+).*?>\}\}")
CELL_ID = re.compile(r"^[A-Za-z0-9_-]{1,60}$")
"""What nbformat accepts as a cell id (at most 64 characters), with room for a '-2' suffix."""


def expand_includes(text: str, folder: Path) -> str:
    """Inlines `{{< include file >}}` (paths relative to the page); other shortcodes are an error."""
    text = INCLUDE.sub(lambda m: expand_includes((folder / m.group(1)).read_text(), folder), text)
    other = SHORTCODE.search(text)
    if other:
        raise ValueError(f"shortcode {other.group(0)!r} has no notebook equivalent")
    return text


def _is_true(options: dict[str, str], key: str) -> bool:
    return option_value(options, key).lower() == "true"


def _is_false(options: dict[str, str], key: str) -> bool:
    return option_value(options, key).lower() == "false"


def code_cells(source: str, converter: ChapterConverter) -> list:
    """One code chunk as notebook cells: the code without its `#|` options, and its caption."""
    lines = source.split("\n")
    options = cell_options(lines)
    code = converter.code("\n".join(lines[len(options) :]).strip("\n"))
    if _is_false(options, "eval"):  # shown, never run
        return [nbformat.v4.new_markdown_cell(f"```python\n{code}\n```")]
    cell = nbformat.v4.new_code_cell(code)
    if _is_true(options, "error"):
        cell.metadata["tags"] = ["raises-exception"]
    hidden = _is_false(options, "echo") or _is_false(options, "include")
    if hidden:  # Colab's form view shows the title line instead of the code
        title = option_value(options, "label").replace("-", " ").capitalize() or "Hidden code"
        cell.source = f"# @title {title}\n{code}"
        cell.metadata["cellView"] = "form"
        cell.metadata["jupyter"] = {"source_hidden": True}
    if _is_false(options, "include") or _is_false(options, "output"):
        cell.metadata.setdefault("jupyter", {})["outputs_hidden"] = True
    label = option_value(options, "label")
    if converter.boxes and "fig-alt" in options:  # for the local book's <img alt="...">
        cell.metadata["fig-alt"] = str(yaml.safe_load(options["fig-alt"]))
    for kind, after in (("fig", True), ("tbl", False)):
        caption = option_value(options, f"{kind}-cap")
        if caption:
            words = converter.inline(caption)
            if label.startswith(f"{kind}-"):
                target = converter.book.targets.get(label) or converter.page.targets[label]
                words = f"{target.text}: {words}"
            note = nbformat.v4.new_markdown_cell(f"*{words}*")
            return [cell, note] if after else [note, cell]
    return [cell]


def _title(front_matter: str, page_prefix: str | None) -> str:
    front, _ = split_front_matter(front_matter + "\n")
    title, _ = title_and_attributes(str((front or {}).get("title", "Untitled")))
    if page_prefix is None:
        return title
    return (
        f"{page_prefix} {title}"
        if page_prefix.isdigit()
        else f"Appendix {page_prefix} \u2014 {title}"
    )


QUALIFIED_CHECKER_CALL = re.compile(r"(?<!def )\b((?:\w+\.)?check_\w+)\(")


def name_the_checkers(cells: list) -> None:
    """Puts into each student note on a solution the checker that the code cell just before it calls;
    an exercise with no checker (a question to think about) keeps only where its solution is."""
    checker = None
    for cell in cells:
        if cell.cell_type == "code":
            calls = QUALIFIED_CHECKER_CALL.findall(cell.source)
            checker = calls[-1] if calls else None
        elif STUDENT_NOTE in cell.source:
            if not cell.source.lstrip().startswith(STUDENT_NOTE):
                checker = None  # the exercise's own text comes first: no code cell of its own
            note = STUDENT_NOTE.replace("CHECKER", checker) if checker else SOLUTION_ELSEWHERE
            cell.source = cell.source.replace(STUDENT_NOTE, note)
        else:  # text between: the next note belongs to a later exercise
            checker = None


def content_id(cell) -> str:
    """An id from what a cell holds: 'md-' or 'code-' and a hash of its type and source."""
    digest = hashlib.sha1(f"{cell.cell_type}\n{cell.source}".encode()).hexdigest()[:10]
    return f"{'md' if cell.cell_type == 'markdown' else cell.cell_type}-{digest}"


def stable_cell_ids(cells: list, labels: dict[int, str]) -> None:
    """Gives every cell an id that does not depend on where it is, unique within the notebook.

    A code cell with a `#| label:` option (its index in `labels`) takes the label as its id; any
    other cell an id from its content (`content_id`). Inserting, removing or editing one cell then
    changes no other cell's id. A repeated id (two cells with the same source) gets '-2', '-3', ...
    in order.
    """
    taken: set[str] = set()
    for index, cell in enumerate(cells):
        label = labels.get(index, "")
        base = label if CELL_ID.match(label) else content_id(cell)
        candidate, count = base, 1
        while candidate in taken:
            count += 1
            candidate = f"{base}-{count}"
        taken.add(candidate)
        cell.id = candidate


def _in_callouts(cells: list, callouts: tuple[dict, ...]) -> list:
    """The cells, marked as lying in `callouts` (the local book's notebook, `boxes=True`)."""
    for cell in cells:
        if callouts:
            cell.metadata["callouts"] = [dict(callout) for callout in callouts]
    return cells


def chapter_to_notebook(
    text: str,
    notebook_name: str,
    *,
    student: bool = False,
    book: Book | None = None,
    page: str | None = None,
    boxes: bool = False,
) -> nbformat.NotebookNode:
    """Converts the text of one .qmd chapter to a notebook without outputs.

    `notebook_name` is the path below `notebooks/` (it sets the Colab badge); `student=True`
    leaves out the exercise solutions. `book` (the repository's by default) numbers the
    cross-references; `page` is the chapter's path in the book (by default
    `chapters/<notebook stem>.qmd`). `boxes=True` is the local book's (`tools.site`) version: a
    callout is no block quote, but every cell inside one lists it in `metadata["callouts"]`
    (outermost first: number, kind, title, collapse), and a figure's cell keeps its
    `metadata["fig-alt"]`; its code cells, ids included, are those of the notebook.
    """
    book = book or load_book()
    page = page or f"chapters/{Path(notebook_name).stem}.qmd"
    numbered = book.pages.get(page) or number_page(page, text, None)
    converter = ChapterConverter(book, numbered, student=student, boxes=boxes)
    cells = list(jupytext.reads(text, fmt="Rmd").cells)
    title = "Untitled"
    if cells and cells[0].cell_type == "raw" and cells[0].source.startswith("---"):
        title = _title(cells.pop(0).source, numbered.prefix)
    if student:
        title += " (exercises)"
    new_cells = [
        nbformat.v4.new_markdown_cell(
            f"# {title}\n\n{colab.badge_markdown(notebook_name, book.repository)}\n\n"
            f"{colab.counterpart_markdown(notebook_name, book.repository)}"
        ),
        colab.setup_cell(book.repository),  # collapsed to its title line
    ]
    labels: dict[int, str] = {}  # index in new_cells: the code cell's `#| label:`
    for cell in cells:
        if cell.cell_type == "code":
            if converter.keeps_code():
                made = code_cells(cell.source, converter)
                code = next(i for i, made_cell in enumerate(made) if made_cell.cell_type == "code")
                labels[len(new_cells) + code] = option_value(
                    cell_options(cell.source.split("\n")), "label"
                )
                new_cells.extend(_in_callouts(made, converter.open_callouts()) if boxes else made)
            continue
        if boxes:
            for callouts, source in converter.markdown_pieces(cell.source):
                new_cells += _in_callouts([nbformat.v4.new_markdown_cell(source)], callouts)
            continue
        source = converter.markdown(cell.source)
        if source:
            new_cells.append(nbformat.v4.new_markdown_cell(source))
    if converter.cited:
        cited = [book.references[key] for key in converter.cited]
        new_cells.append(nbformat.v4.new_markdown_cell(reference_list(cited)))
    expect = "not yet" if student else "passed"
    new_cells.append(nbformat.v4.new_markdown_cell("## Your exercises at a glance"))
    new_cells.append(
        nbformat.v4.new_code_cell(
            f"from jaxcourse.checks import exercise_summary\n\nexercise_summary(expect={expect!r})"
        )
    )
    name_the_checkers(new_cells)
    stable_cell_ids(new_cells, labels)
    notebook = nbformat.v4.new_notebook(cells=new_cells)
    notebook.metadata = {
        "kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"},
        "language_info": {"name": "python"},
        "colab": {"provenance": []},
    }
    return notebook


def chapter_paths(root: Path) -> list[Path]:
    """Every chapter that becomes a notebook (files starting with '_' are partials)."""
    return sorted(p for p in (root / "chapters").glob("*.qmd") if not p.name.startswith("_"))


def _expected(root: Path) -> dict[Path, str]:
    """Every notebook the chapters generate, by path, with its exact text."""
    book = load_book(root)
    expected = {}
    for chapter in chapter_paths(root):
        name = chapter.stem + ".ipynb"
        text = expand_includes(chapter.read_text(), chapter.parent)
        page = chapter.relative_to(root).as_posix()
        for student, relative in ((False, name), (True, f"{STUDENT_DIR}/{name}")):
            notebook = chapter_to_notebook(text, relative, student=student, book=book, page=page)
            expected[root / "notebooks" / relative] = nbformat.writes(notebook) + "\n"
    return expected


def _existing(root: Path) -> list[Path]:
    folder = root / "notebooks"
    return sorted(folder.glob("*.ipynb")) + sorted((folder / STUDENT_DIR).glob("*.ipynb"))


def out_of_date(wanted: dict[Path, str], existing: list[Path]) -> tuple[list[Path], list[Path]]:
    """(files of `wanted` that are missing or whose text differs, files of `existing` not wanted):
    what a generator must write and what it must remove."""
    changed = [
        path for path, text in wanted.items() if not path.exists() or path.read_text() != text
    ]
    return changed, [path for path in existing if path not in wanted]


def stale_notebooks(root: Path) -> list[str]:
    """Notebooks (relative to `notebooks/`) that are missing, out of date, or have no chapter."""
    changed, orphans = out_of_date(_expected(root), _existing(root))
    return sorted(str(path.relative_to(root / "notebooks")) for path in changed + orphans)


SAVED_WORK_DIR = "my-work/saved-before-regeneration"
"""Where `write_all` keeps a notebook holding a learner's work before it replaces it."""


def holds_learner_work(path: Path) -> bool:
    """True when the notebook at `path` was run and saved: it has outputs or execution counts.
    The generator writes notebooks without either, so these come from a learner's session."""
    try:
        notebook = nbformat.read(path, as_version=4)
    except Exception:  # not a notebook we can read: treat it as someone's work
        return True
    return any(
        cell.get("outputs") or cell.get("execution_count") is not None
        for cell in notebook.cells
        if cell.cell_type == "code"
    )


def keep_learner_work(root: Path, path: Path, stamp: str) -> Path:
    """Copies the notebook at `path` under `SAVED_WORK_DIR`, named after it and `stamp`."""
    relative = path.relative_to(root / "notebooks")
    copy = root / SAVED_WORK_DIR / f"{relative.with_suffix('')}-{stamp}.ipynb"
    copy.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy2(path, copy)
    return copy


def sync_generated(
    root: Path, wanted: dict[Path, str], existing: list[Path]
) -> tuple[list[Path], list[Path], list[Path]]:
    """Writes the files of `wanted` whose text changed (or that are missing) and removes the files
    of `existing` that are not wanted; a file already up to date is left untouched, its
    modification time too. A notebook about to be replaced or removed that holds a learner's work
    (it was run and saved) is first copied under `SAVED_WORK_DIR`.

    Returns:
        (files written, files removed, copies kept).
    """
    changed, orphans = out_of_date(wanted, existing)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    kept = [
        keep_learner_work(root, path, stamp)
        for path in changed + orphans
        if path.exists() and holds_learner_work(path)
    ]
    for path in changed:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(wanted[path])
    for orphan in orphans:
        orphan.unlink()
    return changed, orphans, kept


def write_all(root: Path) -> tuple[list[Path], list[Path]]:
    """Regenerates the notebooks whose chapter changed and removes those whose chapter is gone
    (`sync_generated`). Returns (notebooks written or removed, copies kept)."""
    changed, orphans, kept = sync_generated(root, _expected(root), _existing(root))
    return changed + orphans, kept
