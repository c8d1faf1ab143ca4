"""The block notebooks: each block's excerpt of its chapter, converted like a chapter.

A block notebook is built from excerpts of the chapter's own text (never a copy kept elsewhere),
converted by `tools.notebooks` like a chapter: the Colab set-up cell, the chapter's imports, the
demonstrated cells, the exercises (with their solutions, or, in the student variant, without), and
the exercise summary. Whatever those cells use that the chapter defines elsewhere is found by
reading the code (`tools.cell_names.names`) and brought along, so that each notebook runs on its own.
"""

from __future__ import annotations

import ast
import re
import sys
from dataclasses import dataclass
from pathlib import Path

import nbformat

from tools import colab
from tools.book import Book, load_book, page_url
from tools.cell_names import names
from tools.chapter_notebooks import (
    STUDENT_DIR,
    chapter_to_notebook,
    out_of_date,
    sync_generated,
)
from tools.chapter_structure import Chapter, Chunk, load_chapter
from tools.learner import WORK_DIR, copy_missing
from tools.qmd import cell_options
from tools.workshop_plan import BLOCKS_DIR, ROOT, Block, blocks


@dataclass
class Excerpt:
    """The lines of a chapter that make up one block, and the chunks brought along for them."""

    chapter: Chapter
    lines: set[int]
    brought: list[Chunk]
    preamble: list[Chunk]


def _span(lines: set[int], start: int, end: int) -> None:
    lines.update(range(start, end))


def select(block: Block, chapter: Chapter) -> Excerpt:
    """The chapter lines a block shows: its imports, its named sections or cells, its exercises,
    and every chunk of the chapter that defines a name they use (recursively)."""
    first_heading = min((s.start for s in chapter.sections), default=len(chapter.lines))
    preamble = [c for c in chapter.chunks if c.end < first_heading]
    lines: set[int] = set()
    for chunk in preamble:
        _span(lines, chunk.start, chunk.end + 1)
    for item in (*block.demonstrate, *block.exercises):
        if item.startswith("sec-"):
            section = chapter.section(item)
            _span(lines, section.start, section.end)
        else:
            matches = [c for c in chapter.chunks if c.label == item]
            if not matches:
                raise ValueError(f"{chapter.path} has no cell labelled {item!r}")
            _span(lines, matches[0].start, matches[0].end + 1)
    brought: list[Chunk] = []
    queue = [c for c in chapter.chunks if c.start in lines]
    while queue:
        chunk = queue.pop(0)
        for name in sorted(names(chunk.code)[0]):
            definer = None
            for candidate in chapter.chunks:
                if candidate.start >= chunk.start:
                    break
                if (not candidate.in_div or candidate.start in lines) and name in names(
                    candidate.code
                )[1]:
                    definer = candidate
            if definer is not None and definer.start not in lines:
                _span(lines, definer.start, definer.end + 1)
                brought.append(definer)
                queue.append(definer)
    return Excerpt(chapter, lines, sorted(brought, key=lambda c: c.start), preamble)


def used_imports(code: str, used: set[str]) -> str:
    """A set-up cell without the imports that nothing in the block reads (the chapter's imports
    serve the whole chapter; a block that skips its benchmarks need not import torch). The
    imports that are left come first, grouped as isort does; other statements follow as written."""
    try:
        tree = ast.parse(code)
    except SyntaxError:
        return code
    groups: list[list[str]] = [[], [], []]  # standard library, third party, first party
    others = [
        ast.get_source_segment(code, s)
        for s in tree.body
        if not isinstance(s, (ast.Import, ast.ImportFrom))
    ]
    used = used | names("\n".join(others))[0]
    for statement in tree.body:
        if not isinstance(statement, (ast.Import, ast.ImportFrom)):
            continue
        statement.names = [
            alias for alias in statement.names if (alias.asname or alias.name.split(".")[0]) in used
        ]
        if statement.names:
            module = (getattr(statement, "module", None) or statement.names[0].name).split(".")[0]
            group = 2 if module == "jaxcourse" else 0 if module in sys.stdlib_module_names else 1
            groups[group].append(ast.unparse(statement))
    parts = ["\n".join(group) for group in groups if group]
    if others:
        parts.append("\n".join(others))
    return "\n\n".join(parts)


EXERCISE_TITLE = re.compile(r"^(#+\s+Exercise\s+)(\d+)(?=:)")


def exercise_name(prefix: str | None, title: str) -> str:
    """An exercise heading as a block names it: "Exercise 3: ..." of chapter 1 becomes
    "Exercise 1.3: ...", so a block's numbers have no gaps to explain and still match the
    chapter and the checker ("Exercise 3 (...)")."""
    return (
        EXERCISE_TITLE.sub(lambda m: f"{m.group(1)}{prefix}.{m.group(2)}", title)
        if prefix
        else title
    )


def excerpt_text(block: Block, excerpt: Excerpt, prefix: str | None = None) -> str:
    """The block as the text of a page: front matter, then the selected lines in chapter order;
    a chunk brought along is introduced by a line naming the section it comes from, and each
    exercise heading takes the chapter's number (`exercise_name`, for the chapter `prefix`)."""
    chapter = excerpt.chapter
    headings = {chapter.section(exercise).start for exercise in block.exercises}
    brought = {chunk.start: chunk for chunk in excerpt.brought}
    used: set[str] = set()
    for chunk in chapter.chunks:
        if chunk.start in excerpt.lines:
            used |= names(chunk.code)[0]
    replaced = {}
    for chunk in excerpt.preamble:
        code = used_imports(chunk.code, used)
        if code != chunk.code:
            body = chapter.lines[chunk.start + 1 : chunk.end]
            options = body[: len(cell_options(body))]
            replaced[chunk.start] = (chunk.end, [chapter.lines[chunk.start], *options, code, "```"])
    out = ["---", f'title: "{block.title}"', "---", ""]
    previous = None
    skip_to = -1
    for index in sorted(excerpt.lines):
        if index <= skip_to:
            previous = index
            continue
        if index in replaced:
            skip_to, text = replaced[index]
            out.extend(text)
            previous = index
            continue
        if previous is not None and index != previous + 1:
            out.append("")
        if index in brought:
            section = chapter.section_of(index)
            where = f", from @{section.id}" if section else ""
            out.extend(["", f"*Needed below{where}:*", ""])
        line = chapter.lines[index]
        out.append(exercise_name(prefix, line) if index in headings else line)
        previous = index
    return "\n".join(out).rstrip("\n") + "\n"


# --- the notebooks ----------------------------------------------------------------------------


def colab_url(block: Block, repository: str | None = None) -> str:
    """Where Colab opens a block's exercise notebook (`tools.colab`'s address for it)."""
    return colab.colab_url(block.notebook(), repository or colab.REPOSITORY)


def _header(block: Block, book: Book, student: bool, root: Path = ROOT) -> str:
    page = book.pages.get(block.page)
    chapter = f"{page.prefix} {page.title}" if page and page.prefix else block.chapter
    kind = "exercises" if student else "with solutions"
    loaded = load_chapter(block.chapter, root)
    names = [
        exercise_name(page.prefix if page else None, "# " + loaded.section(e).title)
        .removeprefix("# ")
        .split(":")[0]
        for e in block.exercises
    ]
    listed = " and ".join(filter(None, [", ".join(names[:-1]), names[-1] if names else ""]))
    numbers = " (numbered as in the chapter)" if page and page.prefix else ""
    return (
        f"# Workshop block: {block.title} ({kind})\n\n"
        f"{colab.badge_markdown(block.notebook(), book.repository)}\n\n"
        f"{colab.counterpart_markdown(block.notebook(student), book.repository)}\n\n"
        f"A short notebook for one block of the workshop: a few cells of the chapter "
        f"[{chapter}]({page_url(block.page, site=book.site)}) to run together, then "
        f"{listed or 'no exercise'}{numbers}. It runs top to bottom on its own; the "
        "whole chapter is on the website."
    )


STUDENT_PATHS = (
    "`notebooks/` rather than `notebooks/student/`",
    "`notebooks/blocks/` rather than `notebooks/blocks/student/`",
)


def block_notebook(
    block: Block, *, student: bool, book: Book | None = None, root: Path = ROOT
) -> nbformat.NotebookNode:
    """A block's notebook (without outputs), built from its chapter's text."""
    book = book or load_book(root)
    excerpt = select(block, load_chapter(block.chapter, root))
    page = book.pages.get(block.page)
    notebook = chapter_to_notebook(
        excerpt_text(block, excerpt, page.prefix if page else None),
        block.notebook(student),
        student=student,
        book=book,
        page=block.page,
    )
    notebook.cells[0].source = _header(block, book, student, root)
    for cell in notebook.cells:
        if cell.cell_type == "markdown":
            cell.source = cell.source.replace(*STUDENT_PATHS)
    return notebook


def notebook_blocks(root: Path = ROOT) -> list[Block]:
    """The blocks that have a notebook (not those shown from the website)."""
    return [block for block in blocks(root) if not block.shown]


def expected(root: Path = ROOT) -> dict[Path, str]:
    """Every block notebook, by path, with its exact text."""
    book = load_book(root)
    found = {}
    for block in notebook_blocks(root):
        for student in (False, True):
            notebook = block_notebook(block, student=student, book=book, root=root)
            found[root / "notebooks" / block.notebook(student)] = nbformat.writes(notebook) + "\n"
    return found


def _existing(root: Path) -> list[Path]:
    folder = root / "notebooks" / BLOCKS_DIR
    return sorted(folder.glob("*.ipynb")) + sorted((folder / STUDENT_DIR).glob("*.ipynb"))


def stale(root: Path = ROOT) -> list[str]:
    """Block notebooks (below `notebooks/`) that are missing, out of date, or of no block."""
    changed, orphans = out_of_date(expected(root), _existing(root))
    return sorted(str(path.relative_to(root / "notebooks")) for path in changed + orphans)


def write(root: Path = ROOT) -> tuple[list[Path], list[Path]]:
    """Writes the block notebooks whose text changed (or that are missing) and removes those of
    blocks that are gone, keeping a copy of any that holds someone's saved work, as the chapters'
    notebooks are written (`chapter_notebooks.sync_generated`). Returns (notebooks written,
    copies kept)."""
    changed, _, kept = sync_generated(root, expected(root), _existing(root))
    return changed, kept


# --- timings ----------------------------------------------------------------------------------


def copy_for_learner(root: Path = ROOT) -> tuple[list[Path], list[Path]]:
    """Copies the block exercise notebooks into `my-work/blocks/` where no copy exists (the
    participant's folder, never overwritten); returns (copied, kept)."""
    source = root / "notebooks" / BLOCKS_DIR / STUDENT_DIR
    return copy_missing(sorted(source.glob("*.ipynb")), root / WORK_DIR / BLOCKS_DIR)


# --- the command ------------------------------------------------------------------------------
