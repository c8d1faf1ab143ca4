"""What a block's exercises need, against what the day has shown before them.

An exercise is doable in the room when (1) every JAX function its reference solution calls appears
in a code cell of its block's notebook or of a notebook the plan runs before it, a `jnp` function
the plan lists under `numpy_assumed` excepted (the NumPy the day takes as known), and (2) every
section its prompt cross-references is shown by that block or an earlier one, or is declared in
the block's `notes: reading:` as a pointer for later (the prompt states what it needs itself).
The review of 2026-11-28 found three exercises that broke these rules: autodiff's curvatures
(`jax.jvp`, `jax.vmap`), jit's Exercise 3 ("Section 1.7 showed ...", a skipped section) and the
EWMA over gaps (`jnp.isnan` never shown).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import nbformat

from tools.block_notebooks import block_notebook
from tools.block_timings import solution_sources
from tools.book import load_book
from tools.cell_names import jax_calls, jax_references
from tools.chapter_structure import Chapter, load_chapter
from tools.qmd import DIV_FENCE
from tools.workshop_plan import ROOT, Block, load_plan, schedule

REFERENCE = re.compile(r"@(sec-[\w-]*\w)")


@dataclass(frozen=True)
class Gap:
    """An exercise that needs what the day has not shown before it."""

    block: str
    exercise: str
    functions: tuple[str, ...] = ()
    """JAX functions its solution calls that no earlier cell shows."""
    sections: tuple[str, ...] = ()
    """Sections its prompt points to that the day skips (and the plan does not call reading)."""

    def __str__(self) -> str:
        parts = []
        if self.functions:
            parts.append(f"calls {', '.join(self.functions)}, never shown before it")
        if self.sections:
            parts.append(
                f"points to {', '.join('@' + s for s in self.sections)}, which the day skips"
            )
        return f"{self.block}: {self.exercise} " + " and ".join(parts)


def prompt_references(chapter: Chapter, section_id: str) -> list[str]:
    """The sections an exercise's prompt cross-references (its text outside the callouts, where
    the hints and solution are)."""
    section = chapter.section(section_id)
    found, depth = [], 0
    for line in chapter.lines[section.start : section.end]:
        div = DIV_FENCE.match(line)
        if div:
            depth = depth + 1 if div.group(2) else max(depth - 1, 0)
        elif depth == 0:
            found += [ref for ref in REFERENCE.findall(line) if ref not in found]
    return found


def shown_sections(block: Block, chapter: Chapter) -> set[str]:
    """The sections a block shows: those it names and the sections inside them."""
    named = [
        chapter.section(s) for s in (*block.demonstrate, *block.exercises) if s.startswith("sec-")
    ]
    return {
        s.id
        for s in chapter.sections
        for top in named
        if top.start <= s.start < max(top.end, top.start + 1)
    }


def _notebook(path: str, notebooks: dict | None, root: Path):
    """A notebook below `notebooks/`: the one given, else the one on disk (None if neither)."""
    if notebooks and path in notebooks:
        return notebooks[path]
    file = root / "notebooks" / path
    return nbformat.read(file, as_version=4) if file.exists() else None


def _references(notebook) -> set[str]:
    """The `jax.`/`jnp.`/`lax.` names the notebook's code cells show."""
    if notebook is None:
        return set()
    return set().union(*(jax_references(c.source) for c in notebook.cells if c.cell_type == "code"))


def untaught(name: str, root: Path = ROOT, notebooks: dict | None = None) -> list[Gap]:
    """Every exercise of plan `name` that needs what its block or an earlier one does not show.
    `notebooks` maps a notebook's path below `notebooks/` to its (student) notebook; those
    missing are generated from the chapters."""
    book = load_book(root)
    assumed = set(load_plan(root).get("numpy_assumed") or ())
    functions: set[str] = set()
    sections: set[str] = set()
    gaps = []
    for slot in schedule(name, root):
        if slot.kind == "chapter":  # taught from the chapter's own notebook: all of it is shown
            chapter_notebook = _notebook(f"student/{slot.chapter}.ipynb", notebooks, root)
            functions |= _references(chapter_notebook)
            sections |= {s.id for s in load_chapter(slot.chapter, root).sections}
            continue
        if slot.kind != "block" or slot.block.shown:
            continue
        block = slot.block
        path = block.notebook(True)
        notebook = (notebooks or {}).get(path) or block_notebook(
            block, student=True, book=book, root=root
        )
        functions |= _references(notebook)
        chapter = load_chapter(block.chapter, root)
        sections |= shown_sections(block, chapter)
        reading = set(block.notes.get("reading") or ())
        for exercise, codes in solution_sources(block, root).items():
            called = set().union(*(jax_calls(code) for code in codes)) if codes else set()
            missing = sorted(called - functions - assumed)
            skipped = [
                s for s in prompt_references(chapter, exercise) if s not in sections | reading
            ]
            if missing or skipped:
                gaps.append(Gap(block.id, exercise, tuple(missing), tuple(skipped)))
    return gaps
