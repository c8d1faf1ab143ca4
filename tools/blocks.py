"""Workshop blocks: one short notebook per block of the workshop plan, generated from the chapters.

Usage, from the repository root:

    python -m tools.blocks            # write notebooks/blocks/<block>.ipynb and .../student/
    python -m tools.blocks --check    # report block notebooks that are out of date (exit 1)
    python -m tools.blocks --time     # execute each block notebook, time it and each reference
                                      # solution, and write workshop/timings.json
    python -m tools.blocks --warm     # run every block notebook once, so that JAX's persistent
                                      # compilation cache holds their programs the next day
    python -m tools.blocks --cache-env  # the variables that turn that cache on (for Jupyter)
    python -m tools.blocks --copy     # copy the exercise notebooks to my-work/blocks/

`workshop/plan.yml` is the one source: each block names its chapter, the sections or labelled cells
it demonstrates and its exercise sections. A block notebook is built from those excerpts of the
chapter's own text (never a copy kept elsewhere), converted by `tools.notebooks` like a chapter: the
Colab set-up cell, the chapter's imports, the demonstrated cells, the exercises (with their
solutions, or, in the student variant, without), and the exercise summary. Whatever those cells
use that the chapter defines elsewhere (a constant, a helper, the checkers' import) is found by
reading the code (`names`) and brought along, so that each notebook runs on its own.

The workshop pages (`workshop.qmd`, `instructors.qmd`) call the `*_markdown` functions below in
cells with `output: asis`, so their lists and tables come from the plan and the chapters.
"""

from __future__ import annotations

import argparse
import ast
import builtins
import functools
import json
import os
import re
import symtable
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import nbformat
import yaml

from tools import colab
from tools.book import Book, load_book, page_url
from tools.notebooks import (
    STUDENT_DIR,
    chapter_to_notebook,
    expand_includes,
    holds_learner_work,
    keep_learner_work,
)
from tools.qmd import CODE_FENCE, DIV_FENCE, HEADING, cell_options, heading_id, option_value

ROOT = Path(__file__).resolve().parents[1]
PLAN_FILE = Path("workshop/plan.yml")
TIMINGS_FILE = Path("workshop/timings.json")
BLOCKS_DIR = "blocks"
"""Where the block notebooks go, below `notebooks/` (the student variants in `student/` below it)."""
CACHE_NOTE = "compilation cache"

# --- the plan ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Block:
    """One block of the workshop: a chapter's few demonstrated cells and one or two exercises."""

    id: str
    title: str
    chapter: str
    demonstrate: tuple[str, ...]
    exercises: tuple[str, ...]
    minutes: dict[str, int]
    note: str = ""
    uses: dict[str, tuple[str, ...]] = field(default_factory=dict)
    """{exercise: the JAX functions its reference solution calls}, as the plan declares them
    (`jax_calls` reads them from the solution; the tests hold the two equal)."""
    shown: bool = False
    """True for a block shown from the executed chapter on the website: it has no notebook."""

    @property
    def page(self) -> str:
        return f"chapters/{self.chapter}.qmd"

    @property
    def total(self) -> int:
        return sum(self.minutes.values())

    def notebook(self, student: bool = False) -> str:
        """Its notebook's path below `notebooks/`."""
        return f"{BLOCKS_DIR}/{STUDENT_DIR + '/' if student else ''}{self.id}.ipynb"


@dataclass(frozen=True)
class Slot:
    """One line of a day's plan: a block, a chapter taught from its own notebook, a session
    (welcome, wrap-up) or a break."""

    kind: str  # "block", "chapter", "session", "break" or "day"
    title: str
    minutes: int
    block: Block | None = None
    chapter: str | None = None
    extra: int = 0
    """Minutes a slower plan adds to a block's exercises (the chapter's other exercises)."""


def load_plan(root: Path = ROOT) -> dict:
    """The plan; a course without `workshop/plan.yml` has no blocks and empty plans."""
    path = root / PLAN_FILE
    if not path.exists():
        return {"blocks": [], "one_day": [], "two_day": []}
    return yaml.safe_load(path.read_text())


def blocks(root: Path = ROOT) -> list[Block]:
    """The plan's blocks, in its order."""
    return [
        Block(
            id=str(entry["id"]),
            title=str(entry["title"]),
            chapter=str(entry["chapter"]),
            demonstrate=tuple(entry.get("demonstrate") or ()),
            exercises=tuple(entry.get("exercises") or ()),
            uses=_uses(entry.get("exercises")),
            minutes={key: int(value) for key, value in entry["minutes"].items()},
            note=str(entry.get("note", "")),
            shown=bool(entry.get("shown", False)),
        )
        for entry in load_plan(root)["blocks"]
    ]


def _uses(exercises) -> dict[str, tuple[str, ...]]:
    """The plan's `exercises:` mapping (exercise: [functions it uses]); a plain list declares none."""
    if not isinstance(exercises, dict):
        return {}
    return {str(key): tuple(value or ()) for key, value in exercises.items()}


def schedule(name: str, root: Path = ROOT) -> list[Slot]:
    """A plan ("one_day" or "two_day") as slots, in order; a "day" slot starts each day."""
    by_id = {block.id: block for block in blocks(root)}
    slots = []
    for entry in load_plan(root)[name]:
        if "day" in entry:
            slots.append(Slot("day", f"Day {entry['day']}", 0))
        elif "break" in entry:
            slots.append(Slot("break", str(entry.get("name", "Break")), int(entry["break"])))
        elif "block" in entry:
            block = by_id[entry["block"]]
            extra = int(entry.get("extra", 0))
            slots.append(
                Slot("block", block.title, block.total + extra, block, block.chapter, extra)
            )
        elif "chapter" in entry:
            slots.append(
                Slot("chapter", str(entry["title"]), int(entry["minutes"]), None, entry["chapter"])
            )
        else:
            slots.append(Slot("session", str(entry["session"]), int(entry["minutes"])))
    return slots


def days(slots: list[Slot]) -> list[list[Slot]]:
    """The slots of each day (a plan without "day" slots is one day)."""
    result: list[list[Slot]] = [[]]
    for slot in slots:
        if slot.kind == "day":
            if result[-1]:
                result.append([])
        else:
            result[-1].append(slot)
    return result


def stretches(day: list[Slot]) -> list[int]:
    """Minutes of each stretch of teaching between two breaks."""
    lengths, current = [], 0
    for slot in day:
        if slot.kind == "break":
            lengths.append(current)
            current = 0
        else:
            current += slot.minutes
    return [*lengths, current]


# --- a chapter's structure ------------------------------------------------------------------


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


# --- what a cell uses and defines -------------------------------------------------------------

IGNORED = set(dir(builtins)) | {"display", "get_ipython", "In", "Out", "__name__"}


def _defined_by(table: symtable.SymbolTable) -> set[str]:
    return {
        s.get_name()
        for s in table.get_symbols()
        if s.is_assigned() or s.is_imported() or s.is_namespace()
    }


def _late_uses(table: symtable.SymbolTable) -> set[str]:
    """Global names that nested scopes (functions, classes, lambdas) read."""
    used = set()
    for child in table.get_children():
        used |= {s.get_name() for s in child.get_symbols() if s.is_referenced() and s.is_global()}
        used |= _late_uses(child)
    return used


@functools.lru_cache(maxsize=4096)
def _names(code: str) -> tuple[frozenset[str], frozenset[str]]:
    free, defined = names_uncached(code)
    return frozenset(free), frozenset(defined)


def names(code: str) -> tuple[set[str], set[str]]:
    """(names the code reads before defining them, names it defines at the top level); see
    `names_uncached`. Cached: `select` asks about every chunk of a chapter many times."""
    free, defined = _names(code)
    return set(free), set(defined)


def names_uncached(code: str) -> tuple[set[str], set[str]]:
    """(names the code reads before defining them, names it defines at the top level).

    Statements are read in order: `key, subkey = split(key)` reads `key`, and a function reads
    the globals its body uses. Builtins and IPython's names are left out; code Python cannot
    parse (a cell magic) reads and defines nothing.
    """
    code = "\n".join(line for line in code.split("\n") if not line.lstrip().startswith(("%", "!")))
    try:
        tree = ast.parse(code)
    except SyntaxError:
        return set(), set()
    whole = _defined_by(symtable.symtable(code, "<cell>", "exec"))
    defined: set[str] = set()
    free: set[str] = set()
    simple = (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Expr, ast.Return, ast.Delete)
    for statement in tree.body:
        table = symtable.symtable(ast.unparse(statement), "<statement>", "exec")
        # Comprehension variables are local to it (Python 3.12 inlines comprehensions, so the
        # symbol table shows them at the top level).
        local = {
            n.id
            for c in ast.walk(statement)
            if isinstance(c, ast.comprehension)
            for n in ast.walk(c.target)
            if isinstance(n, ast.Name)
        }
        binds = _defined_by(table) - local
        for symbol in table.get_symbols():
            name = symbol.get_name()
            if symbol.is_referenced() and (isinstance(statement, simple) or name not in binds):
                if name not in defined and name not in local:
                    free.add(name)
        free |= _late_uses(table) - whole - defined
        defined |= binds
    return free - IGNORED, defined


# --- what a solution calls ----------------------------------------------------------------

JAX_ROOTS = {"jax", "jnp", "lax"}
SHORT_FORMS = (("jax.numpy.", "jnp."), ("jax.lax.", "lax."))


def _dotted(node: ast.AST) -> str | None:
    """'jax.random.split' for that attribute chain, shortened to `jnp.`/`lax.`; None when the
    chain does not start at jax, jnp or lax."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not (isinstance(node, ast.Name) and node.id in JAX_ROOTS and parts):
        return None
    name = ".".join([node.id, *reversed(parts)])
    for long, short in SHORT_FORMS:
        if name.startswith(long):
            name = short + name.removeprefix(long)
    return name


def jax_calls(code: str) -> set[str]:
    """The JAX functions a piece of code calls: `jax.`, `jnp.` and `lax.` attribute chains that
    are called, used as a decorator or passed to a call (`partial(jax.jit, ...)`), constants and
    dtypes left out."""
    found = set()
    for node in ast.walk(ast.parse(code)):
        candidates = []
        if isinstance(node, ast.Call):
            candidates = [node.func, *node.args, *(k.value for k in node.keywords)]
        elif isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            candidates = list(node.decorator_list)
        found |= {name for name in map(_dotted, candidates) if name and _is_function(name)}
    return found


@functools.cache
def _is_function(name: str) -> bool:
    """Whether a `jax.`/`jnp.`/`lax.` name is a function (not a constant such as `jnp.nan`, nor a
    dtype such as `jnp.float32`); a name JAX does not have counts as one, so that it is reported."""
    import importlib

    root, *attributes = name.split(".")
    value = importlib.import_module({"jnp": "jax.numpy", "lax": "jax.lax"}.get(root, root))
    for attribute in attributes:
        value = getattr(value, attribute, None)
        if value is None:
            return True
    return callable(value) and not isinstance(value, type)


def jax_references(code: str) -> set[str]:
    """Every `jax.`/`jnp.`/`lax.` attribute chain the code names (comments and text aside)."""
    try:
        tree = ast.parse(
            "\n".join(line for line in code.split("\n") if not line.lstrip().startswith(("%", "!")))
        )
    except SyntaxError:
        return set()
    names = set()
    for node in ast.walk(tree):
        name = _dotted(node) if isinstance(node, ast.Attribute) else None
        if name:
            names.add(name)
            names |= {name.rsplit(".", k)[0] for k in range(1, name.count("."))}
    return names


def numpy_has(name: str) -> bool:
    """Whether a `jnp.` function is NumPy's too (what the course assumes its readers know)."""
    import numpy

    return name.startswith("jnp.") and hasattr(numpy, name.removeprefix("jnp."))


# --- a block's excerpts -----------------------------------------------------------------------


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
    wanted = expected(root)
    old = [path for path, text in wanted.items() if not path.exists() or path.read_text() != text]
    orphans = [path for path in _existing(root) if path not in wanted]
    return sorted(str(path.relative_to(root / "notebooks")) for path in old + orphans)


def write(root: Path = ROOT) -> tuple[list[Path], list[Path]]:
    """Writes every block notebook and removes those of blocks that are gone; a notebook that
    holds someone's saved work is first copied, as `tools.notebooks` does for the chapters.
    Returns (notebooks written, copies kept)."""
    wanted = expected(root)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    replaced = [p for p, text in wanted.items() if p.exists() and p.read_text() != text]
    orphans = [path for path in _existing(root) if path not in wanted]
    kept = [
        keep_learner_work(root, path, stamp)
        for path in replaced + orphans
        if holds_learner_work(path)
    ]
    for path in orphans:
        path.unlink()
    for path, text in wanted.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return list(wanted), kept


# --- timings ----------------------------------------------------------------------------------


def solution_sources(block: Block, root: Path = ROOT) -> dict[str, list[str]]:
    """{exercise section id: the code of its solution cells, as the notebook holds it}."""
    chapter = load_chapter(block.chapter, root)
    found = {}
    for exercise in block.exercises:
        section = chapter.section(exercise)
        found[exercise] = [
            c.code for c in chapter.chunks if c.in_div and section.start < c.start < section.end
        ]
    return found


def _seconds(cell) -> float | None:
    timing = cell.get("metadata", {}).get("execution", {})
    start, end = timing.get("iopub.execute_input"), timing.get("shell.execute_reply")
    if not (start and end):
        return None
    from datetime import datetime

    return (datetime.fromisoformat(end) - datetime.fromisoformat(start)).total_seconds()


def execute(path: Path, env: dict[str, str] | None = None) -> tuple[float, nbformat.NotebookNode]:
    """Executes a notebook in a fresh kernel (the notebook's folder as working directory);
    returns (wall seconds, the executed notebook)."""
    import nbclient

    notebook = nbformat.read(path, as_version=4)
    saved = dict(os.environ)
    os.environ.update(env or {})
    try:
        client = nbclient.NotebookClient(
            notebook,
            timeout=600,
            kernel_name="python3",
            record_timing=True,
            allow_errors=False,
            resources={"metadata": {"path": str(path.parent)}},
        )
        start = time.perf_counter()
        client.execute()
        return time.perf_counter() - start, notebook
    finally:
        os.environ.clear()
        os.environ.update(saved)


def measure(root: Path = ROOT) -> dict:
    """Runs every block notebook and times it: the solution notebook (and each reference
    solution's cells, checker included) and the exercise notebook without the persistent
    compilation cache, as CI runs them; then the solution notebook with a new, empty cache
    folder, once filling it and once reading it (what `--warm` buys on the day), twice over."""
    import tempfile

    from jaxcourse import compilation_cache
    from jaxcourse.environment import environment_line

    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    machine = environment_line().removeprefix("Executed with ").rstrip(".")
    result = {"machine": f"{machine}, {cores} CPU cores", "blocks": {}}
    for block in notebook_blocks(root):
        solution = root / "notebooks" / block.notebook(False)
        entry = {}
        wall, executed = execute(solution)
        entry["solution_notebook_s"] = round(wall, 2)
        cells = {cell.source: _seconds(cell) for cell in executed.cells if cell.cell_type == "code"}
        entry["solutions_s"] = {
            exercise: round(sum(cells.get(code) or 0.0 for code in codes), 2)
            for exercise, codes in solution_sources(block, root).items()
        }
        entry["student_notebook_s"] = round(
            execute(root / "notebooks" / block.notebook(True))[0], 2
        )
        cold, warm = [], []
        for _ in range(2):  # the faster of two tries each: the cache's effect, less the noise
            with tempfile.TemporaryDirectory() as folder:
                env = compilation_cache.environment(folder)
                cold.append(execute(solution, env)[0])
                warm.append(execute(solution, env)[0])
        entry["cold_cache_solution_notebook_s"] = round(min(cold), 2)
        entry["warm_cache_solution_notebook_s"] = round(min(warm), 2)
        result["blocks"][block.id] = entry
        print(block.id, entry, flush=True)
    return result


def load_timings(root: Path = ROOT) -> dict:
    path = root / TIMINGS_FILE
    return json.loads(path.read_text()) if path.exists() else {"machine": "", "blocks": {}}


def warm(root: Path = ROOT) -> int:
    """Runs every block's notebook with JAX's persistent compilation cache on, in the course's
    cache folder, so that the same programs load from it instead of compiling on the day."""
    from jaxcourse import compilation_cache

    folder = compilation_cache.default_directory()
    before = len(compilation_cache.entries(folder))
    env = compilation_cache.environment(folder)
    for block in notebook_blocks(root):
        for student in (False, True):
            wall, _ = execute(root / "notebooks" / block.notebook(student), env)
            print(f"{block.notebook(student)}: ran in {wall:.1f} s", flush=True)
    after = len(compilation_cache.entries(folder))
    print(f"{folder}: {after} compiled programs ({after - before} new).")
    print("On the day, start Jupyter with the cache on (the same folder):")
    print('    eval "$(python -m tools.blocks --cache-env)" && python -m jupyter lab')
    return 0


def cache_env() -> str:
    """`export` lines that turn the course's persistent compilation cache on in a shell."""
    from jaxcourse import compilation_cache

    variables = compilation_cache.environment(compilation_cache.default_directory())
    return "\n".join(f"export {name}={value}" for name, value in variables.items())


# --- the pages: lists and tables from the plan and the chapters ------------------------------


def _clock(minutes: int) -> str:
    return f"{minutes // 60}:{minutes % 60:02d}"


@functools.lru_cache(maxsize=8)
def _book(root: Path) -> Book:
    """The book, read once per page rendering (the pages' cells run in one process)."""
    return load_book(root)


def _duration(minutes: int) -> str:
    return f"{minutes // 60} h" + (f" {minutes % 60:02d} min" if minutes % 60 else "")


def _chapter_link(chapter: str, root: Path = ROOT) -> str:
    page = _book(root).pages.get(f"chapters/{chapter}.qmd")
    title = page.title if page else chapter
    return f"[{title}](chapters/{chapter}.qmd)"


def _refs(ids) -> str:
    return ", ".join(f"@{section_id}" for section_id in ids) or "none"


def plan_markdown(name: str, root: Path = ROOT) -> str:
    """A plan as one Markdown table per day: clock times, each block's minutes for talk,
    demonstration and exercises, and the exercise sections; then the longest stretch between
    breaks and the day's length."""
    timings = load_timings(root)["blocks"]
    out = []
    for number, day in enumerate(days(schedule(name, root)), start=1):
        if name != "one_day":
            out.append(f"**Day {number}**\n")
        out.append(
            "| Time | Block | Talk | Demo | Exercises | Exercise sections | Notebook |\n"
            "|---|---|---|---|---|---|---|"
        )
        clock = 0
        for slot in day:
            when = f"{_clock(clock)}\u2013{_clock(clock + slot.minutes)}"
            clock += slot.minutes
            if slot.kind == "break":
                out.append(f"| {when} | *{slot.title}* | | | | | |")
            elif slot.kind == "session":
                out.append(f"| {when} | {slot.title} | {slot.minutes} | | | | |")
            elif slot.kind == "chapter":
                chapter = load_chapter(slot.chapter, root)
                exercises = [s.id for s in chapter.sections if s.title.startswith("Exercise")]
                numbered = [s for s in exercises if chapter.section(s).level > 2][:2]
                out.append(
                    f"| {when} | {slot.title}, from {_chapter_link(slot.chapter, root)} | "
                    f"{slot.minutes} (talk, demonstration and exercises) | | | "
                    f"{_refs(numbered or exercises)} | `student/{slot.chapter}.ipynb` |"
                )
            else:
                block = slot.block
                minutes = block.minutes
                more = f" + {slot.extra} (the chapter's other exercises)" if slot.extra else ""
                ran = timings.get(block.id, {}).get("student_notebook_s")
                notebook = "shown from the website" if block.shown else f"`{block.notebook(True)}`"
                if ran is not None:
                    notebook += f", runs in {ran:.0f} s"
                out.append(
                    f"| {when} | {block.title} ({_chapter_link(block.chapter, root)}) | "
                    f"{minutes['talk']} | {minutes['demo']} | {minutes['exercises']}{more} | "
                    f"{_refs(block.exercises)} | {notebook} |"
                )
        teaching = sum(slot.minutes for slot in day if slot.kind != "break")
        out.append(
            f"\nIn all {_duration(clock)}, of which {_duration(teaching)} teaching; the longest "
            f"stretch without a break is {max(stretches(day))} minutes.\n"
        )
    return "\n".join(out)


def exercise_count(name: str, root: Path = ROOT) -> int:
    """How many exercises a plan's blocks assign (a chapter slot's exercises not counted)."""
    return sum(len(s.block.exercises) for s in schedule(name, root) if s.kind == "block")


def notebooks_markdown(root: Path = ROOT) -> str:
    """Each block's notebooks: the exercise notebook on Colab, and both in the repository."""
    book = _book(root)
    out = []
    for block in blocks(root):
        if block.shown:
            url = page_url(block.page, site=book.site)
            out.append(f"- **{block.title}**: no notebook; shown from [the website]({url}).")
            continue
        out.append(
            f"- **{block.title}**: "
            f"{colab.colab_link(block.notebook(), f'open `{block.notebook(True)}` in Colab', book.repository)}. "
            f"On a laptop: `notebooks/{block.notebook(True)}` (exercises) and "
            f"`notebooks/{block.notebook(False)}` (with solutions). "
            f"Exercises: {_refs(block.exercises)}."
        )
    return "\n".join(out)


def exercise_sections_markdown(root: Path = ROOT) -> str:
    """Every chapter's exercise section, in book order, as cross-references."""
    from tools.qmd import listed_pages

    found = []
    for page in listed_pages(root):
        if not page.startswith("chapters/"):
            continue
        chapter = load_chapter(Path(page).stem, root)
        found += [s.id for s in chapter.sections if s.level == 2 and s.title.startswith("Exercise")]
    return _refs(found)


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


def _checker_of(chapter: Chapter, section_id: str) -> str | None:
    """The checker an exercise section calls (its last call)."""
    section = chapter.section(section_id)
    calls = []
    for chunk in chapter.chunks:
        if section.start < chunk.start < section.end:
            calls += re.findall(r"(?<![\w.])(?:\w+\.)?(check_\w+)\(", chunk.code)
    return calls[-1] if calls else None


def _what(node: ast.AST | None, fallback: str) -> str:
    """The first paragraph of a function's docstring, or its name in words."""
    doc = ast.get_docstring(node) if node is not None else None
    text = (doc or fallback.removeprefix("test_").replace("_", " ")).split("\n\n")[0]
    return " ".join(text.split()).rstrip(".")


def _strings(node: ast.AST) -> list[str]:
    return [
        n.value
        for n in ast.walk(node)
        if isinstance(n, ast.Constant) and isinstance(n.value, str) and n.value.strip()
    ]


def _fragments(node: ast.AST) -> list[str]:
    """Hint fragments a test asserts: `"..." in verdict.message`, or the last string argument
    of an `assert...` helper."""
    found = []
    for n in ast.walk(node):
        if (
            isinstance(n, ast.Compare)
            and isinstance(n.ops[0], ast.In)
            and isinstance(n.left, ast.Constant)
            and isinstance(n.left.value, str)
        ):
            found.append(n.left.value)
        elif isinstance(n, ast.Call) and getattr(n.func, "id", "").startswith("assert"):
            strings = [
                a.value for a in n.args if isinstance(a, ast.Constant) and isinstance(a.value, str)
            ]
            found += strings[-1:]
    return [f for f in found if f.strip() and "no answer yet" not in f]


def _parametrized(node: ast.FunctionDef, functions: dict) -> list[tuple[str, str]]:
    """(wrong answer, hint) pairs of a test parametrised over wrong answers and hints."""
    pairs = []
    for decorator in node.decorator_list:
        if not (isinstance(decorator, ast.Call) and "parametrize" in ast.unparse(decorator.func)):
            continue
        if len(decorator.args) < 2 or not isinstance(decorator.args[1], (ast.List, ast.Tuple)):
            continue
        ids = next((k.value for k in decorator.keywords if k.arg == "ids"), None)
        labels = [i.value for i in ids.elts] if isinstance(ids, ast.List) else []
        for index, case in enumerate(decorator.args[1].elts):
            items = case.elts if isinstance(case, ast.Tuple) else getattr(case, "args", [])
            hints = [
                i.value for i in items if isinstance(i, ast.Constant) and isinstance(i.value, str)
            ]
            answer = next((i for i in items if isinstance(i, (ast.Name, ast.Lambda))), None)
            if answer is None or not hints:
                continue
            if isinstance(answer, ast.Name):
                what = _what(functions.get(answer.id), answer.id)
            else:
                label = labels[index] if index < len(labels) else ""
                what = f"{label.replace('-', ' ')}: `{ast.unparse(answer.body)}`".lstrip(": ")
            pairs.append((what, hints[-1]))
    return pairs


@functools.lru_cache(maxsize=64)
def _parsed(path: Path) -> ast.Module:
    return ast.parse(path.read_text())


def stuck_points(checker: str, root: Path = ROOT) -> list[tuple[str, str]]:
    """(the wrong answer, the fragment its hint must contain) for each wrong-answer test of
    `checker` in tests/test_*exercises*.py: where people get stuck, as the tests pin it.

    A test parametrised over (wrong answer, hint) pairs gives one pair per case, described by the
    wrong answer's docstring (or the case's id and code); any other test that calls the checker
    and asserts a hint fragment gives one pair, described by its docstring (or its name)."""
    found: list[tuple[str, str]] = []
    for path in sorted((root / "tests").glob("test_*exercises*.py")):
        tree = _parsed(path)
        functions = {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef)}
        for node in functions.values():
            if not node.name.startswith("test_") or not re.search(
                rf"\b{checker}\b", ast.unparse(node)
            ):
                continue
            pairs = _parametrized(node, functions)
            if not pairs and _fragments(node):
                pairs = [(_what(node, node.name), _fragments(node)[0])]
            found += [
                pair for pair in pairs if "no answer yet" not in pair[1] and pair not in found
            ]
    return found


def instructor_blocks_markdown(root: Path = ROOT) -> str:
    """Per block: what to demonstrate and what to skip, the plan's note, the measured timings,
    and where people get stuck (from the checkers' wrong-answer tests)."""
    timings = load_timings(root)
    tests_here = (root / "tests").is_dir()
    out = []
    for block in blocks(root):
        chapter = load_chapter(block.chapter, root)
        shown = [s for s in block.demonstrate if s.startswith("sec-")]
        tops = {chapter.top_section(chapter.section(s)).id for s in (*shown, *block.exercises)}
        chosen = {*shown, *block.exercises}
        exercise_tops = {
            s.id for s in chapter.sections if s.level == 2 and s.title.startswith("Exercise")
        }
        skip, others = [], []
        for s in chapter.sections:
            top = chapter.top_section(s).id
            if s.id in chosen or s.id.endswith(
                ("-objectives", "-summary", "-further-reading", "-further", "-reading")
            ):
                continue
            if top in exercise_tops:
                if s.level > 2:
                    others.append(s.id)
            elif s.level == 2 and s.id not in tops:
                skip.append(s.id)
            elif s.level > 2 and top in tops and s.id not in tops:
                skip.append(s.id)  # a part of a section the block shows only in part
        minutes = block.minutes
        out.append(f"### {block.title}\n")
        out.append(
            f"From {_chapter_link(block.chapter, root)}; {block.total} minutes: "
            f"{minutes['talk']} talk, {minutes['demo']} demonstration, "
            f"{minutes['exercises']} exercises. {block.note}\n"
        )
        out.append(f"- **Demonstrate**: {_refs(block.demonstrate)}.")
        out.append(f"- **Skip** (reading for later): {_refs(skip)}.")
        if others:
            out.append(f"- **The chapter's other exercises** (homework): {_refs(others)}.")
        measured = timings["blocks"].get(block.id)
        if block.shown:
            out.append("- **Timings**: none; nothing runs live.")
        elif measured:
            solutions = ", ".join(
                f"@{exercise} {measured['solutions_s'][exercise]:.1f} s"
                for exercise in block.exercises
                if exercise in measured["solutions_s"]
            )
            out.append(
                f"- **Timings** (measured with {timings['machine']}): the exercise notebook runs top to bottom "
                f"in {measured['student_notebook_s']:.0f} s, the solution notebook in "
                f"{measured['solution_notebook_s']:.0f} s (warmed: "
                f"{measured.get('warm_cache_solution_notebook_s', float('nan')):.0f} s); reference "
                f"solutions, checker included: {solutions}."
            )
        for exercise in block.exercises:
            checker = _checker_of(chapter, exercise)
            uses = ", ".join(f"`{name}`" for name in block.uses.get(exercise, ()))
            out.append(f"- **What @{exercise} uses**: {uses or 'no JAX function'}.")
            out.append(f"- **Where people get stuck in @{exercise}** (`{checker}`):")
            points = stuck_points(checker, root) if tests_here and checker else []
            if not points:
                out.append("    - (the course's tests, which list them, are not in this copy)")
            for what, hint in points:
                out.append(f"    - {what}: the hint says \u201c{hint}\u201d.")
        out.append("")
    return "\n".join(out)


def cache_markdown(root: Path = ROOT) -> str:
    """The measured effect of a warmed compilation cache: each solution notebook's time from
    top to bottom with an empty cache, and again once the first run has filled it."""
    timings = load_timings(root)
    rows = [
        f"| {block.title} | {entry['cold_cache_solution_notebook_s']:.1f} s | "
        f"{entry['warm_cache_solution_notebook_s']:.1f} s |"
        for block in notebook_blocks(root)
        if "warm_cache_solution_notebook_s" in (entry := timings["blocks"].get(block.id, {}))
    ]
    if not rows:
        return "(No timings yet: run `python -m tools.blocks --time`.)"
    return "\n".join(
        [
            f"Measured with {timings['machine']}:\n",
            "| Block notebook (with solutions) | Empty cache | Warmed cache |",
            "|---|---|---|",
            *rows,
        ]
    )


def _lead_and_list(text: str) -> str:
    """A section's first paragraph and the list after it ("After this chapter you can: - ...")."""
    kept, in_list = [], False
    for line in text.split("\n"):
        item = line.lstrip().startswith(("- ", "* ", "1. "))
        in_list = in_list or item
        if in_list and not line.strip():
            break
        if in_list and not (item or line.startswith(" ")):
            break
        kept.append(line)
    return "\n".join(kept).strip("\n")


def summaries_markdown(root: Path = ROOT) -> str:
    """One printable page per block: its chapter's learning objectives and summary."""
    out = []
    for block in blocks(root):
        chapter = load_chapter(block.chapter, root)
        ids = {s.id for s in chapter.sections}
        objectives = next((i for i in ids if i.endswith("-objectives")), None)
        summary = next((i for i in ids if i.endswith("-summary")), None)
        out.append('<div style="page-break-before: always;"></div>\n')
        out.append(f"### {block.title} {{.unnumbered}}\n")
        out.append(f"*From {_chapter_link(block.chapter, root)}.*\n")
        if objectives:
            text = _lead_and_list(section_text(block.chapter, objectives, root))
            out.append("**Learning objectives.** " + text)
        if summary:
            out.append("\n**Summary.**\n\n" + section_text(block.chapter, summary, root))
        out.append("")
    return "\n".join(out)


ASIS_CHUNK = re.compile(
    r"^```\{python\}\n((?:#\|[^\n]*\n)*)(.*?)^```[ \t]*$", re.MULTILINE | re.DOTALL
)


def render_asis(text: str) -> str:
    """A page's text with each Python chunk marked `output: asis` replaced by what it prints, as
    Quarto does when it renders the page: the local site (`tools.site`) shows pages that are not
    notebooks without running them, so their generated lists are made here. The chunks must
    only print Markdown (they call the functions of this module); they run in one namespace,
    in order, as in the page's kernel."""
    import contextlib
    import io

    namespace = {"__name__": "__asis__"}

    def run(match: re.Match) -> str:
        options = cell_options(match.group(1).split("\n"))
        if option_value(options, "output").lower() != "asis":
            return match.group(0)
        printed = io.StringIO()
        with contextlib.redirect_stdout(printed):
            exec(compile(match.group(2), "<asis cell>", "exec"), namespace)
        return printed.getvalue().rstrip("\n")

    return ASIS_CHUNK.sub(run, text)


def copy_for_learner(root: Path = ROOT) -> tuple[list[Path], list[Path]]:
    """Copies the block exercise notebooks into `my-work/blocks/` where no copy exists (the
    participant's folder, never overwritten); returns (copied, kept)."""
    import shutil

    target = root / "my-work" / BLOCKS_DIR
    target.mkdir(parents=True, exist_ok=True)
    copied, kept = [], []
    for source in sorted((root / "notebooks" / BLOCKS_DIR / STUDENT_DIR).glob("*.ipynb")):
        copy = target / source.name
        if copy.exists():
            kept.append(copy)
        else:
            shutil.copyfile(source, copy)
            copied.append(copy)
    return copied, kept


# --- the command ------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    group = parser.add_mutually_exclusive_group()
    group.add_argument("--check", action="store_true", help="only report stale block notebooks")
    group.add_argument("--time", action="store_true", help=f"measure, write {TIMINGS_FILE}")
    group.add_argument("--warm", action="store_true", help="fill the compilation cache")
    group.add_argument("--cache-env", action="store_true", help="print the cache's variables")
    group.add_argument("--copy", action="store_true", help="copy the exercises to my-work/blocks/")
    parser.add_argument("--root", type=Path, default=Path.cwd(), help="the repository root")
    args = parser.parse_args(argv)
    root = args.root
    if args.copy:
        copied, kept = copy_for_learner(root)
        print(
            f"Copied {len(copied)} block notebooks into my-work/{BLOCKS_DIR}/ (kept {len(kept)} "
            "already there): work there, nothing overwrites them."
        )
        return 0
    if args.cache_env:
        print(cache_env())
        return 0
    if args.warm:
        return warm(root)
    if args.time:
        timings = measure(root)
        (root / TIMINGS_FILE).write_text(json.dumps(timings, indent=1, sort_keys=True) + "\n")
        print("wrote", TIMINGS_FILE)
        return 0
    if args.check:
        old = stale(root)
        if old:
            print("Out of date (run python -m tools.blocks):", ", ".join(old))
            return 1
        print(f"All {2 * len(notebook_blocks(root))} block notebooks are in sync.")
        return 0
    written, kept = write(root)
    for path in written:
        print("wrote", path.relative_to(root))
    for copy in kept:
        print("kept a copy of your saved work:", copy.relative_to(root))
    return 0


if __name__ == "__main__":
    sys.exit(main())
