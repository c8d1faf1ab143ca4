"""A workshop block's notebooks are not executed by the full test run (scripts/test.sh): its
chapter's solution notebook is, and a block's solution notebook runs a subset of that notebook's
cells. This file proves the claim, block by block, so that running the chapter guards the block:

- every code cell of the block is a code cell of the chapter's solution notebook, in the same
  order, except its imports cell, whose statements are statements of the chapter (an import of a
  name the chapter imports from the same module, or a statement the chapter runs as it is and that
  defines nothing, such as `np.set_printoptions(...)`);
- every name a cell reads has, at that point of the block, the definition it has at that point of
  the chapter: the chapter cell that last defines it before is one the block runs too (or, for an
  import, the block's imports cell makes the same import).

What this cannot see is a cell the block skips that changes an object in place, or a setting,
that a later cell relies on; the chapters' skipped cells are sections, not set-up, which is what
the block's first cells (set-up, imports) carry. A block's exercise notebook is its solution
notebook less the solutions (tests/test_generated_notebooks.py), and `tools.notebooks --check`
holds every notebook equal to what the chapters generate.
"""

from __future__ import annotations

import ast
from pathlib import Path

import nbformat
import pytest

from tools import blocks

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = ROOT / "notebooks"
BLOCKS = [block for block in blocks.notebook_blocks(ROOT)]


def code_cells(path: Path) -> list[str]:
    return [c.source for c in nbformat.read(path, as_version=4).cells if c.cell_type == "code"]


def _imports(source: str) -> set[tuple[str, str, str | None]]:
    """(module, name, alias) for each name the code imports; ('', module, alias) for `import m`."""
    found = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found |= {("", alias.name, alias.asname) for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            found |= {(node.module or "", alias.name, alias.asname) for alias in node.names}
    return found


def _statements(source: str) -> set[str]:
    return {ast.dump(statement) for statement in ast.parse(source).body}


def subset_problems(block_cells: list[str], chapter_cells: list[str]) -> list[str]:
    """Why the block's cells are not a subset of the chapter's as the module docstring says
    ([] when they are)."""
    problems = []
    chapter_imports = set().union(*(_imports(cell) for cell in chapter_cells))
    chapter_statements = set().union(*(_statements(cell) for cell in chapter_cells))
    matched: dict[int, int] = {}  # block cell -> the chapter cell it is
    imported: set[str] = set()  # names the block's own imports bind
    position = -1
    for number, cell in enumerate(block_cells):
        if cell in chapter_cells[position + 1 :]:
            position = chapter_cells.index(cell, position + 1)
            matched[number] = position
            continue
        for statement in ast.parse(cell).body:
            code = ast.unparse(statement)
            if isinstance(statement, (ast.Import, ast.ImportFrom)):
                missing = _imports(code) - chapter_imports
                if missing:
                    problems.append(
                        f"block cell {number} imports {sorted(missing)}, the chapter not"
                    )
                imported |= blocks.names(code)[1]
            elif ast.dump(statement) not in chapter_statements or blocks.names(code)[1]:
                problems.append(
                    f"block cell {number} runs {code[:60]!r}, not a cell of the chapter in its "
                    "order, nor a statement of it that defines nothing"
                )
    runs = set(matched.values())
    defined_in = [blocks.names(cell)[1] for cell in chapter_cells]
    for number, index in matched.items():
        for name in sorted(blocks.names(block_cells[number])[0]):
            last = next((k for k in range(index - 1, -1, -1) if name in defined_in[k]), None)
            if last is not None and last not in runs and name not in imported:
                problems.append(
                    f"block cell {number} reads {name!r}, which the chapter last defines in its "
                    f"code cell {last}, a cell the block skips"
                )
    return problems


def test_the_subset_check_finds_a_skipped_definition_and_a_foreign_cell():
    chapter = ["import numpy as np", "x = 1", "x = 2", "y = x + 1"]
    assert subset_problems(["import numpy as np", "x = 1", "x = 2", "y = x + 1"], chapter) == []
    assert subset_problems(["from numpy import ones", "x = 2", "y = x + 1"], chapter) == [
        "block cell 0 imports [('numpy', 'ones', None)], the chapter not"
    ]
    assert subset_problems(["x = 1", "y = x + 1"], chapter) == [
        "block cell 1 reads 'x', which the chapter last defines in its code cell 2, a cell the "
        "block skips"
    ]
    assert subset_problems(["y = x + 1", "x = 2"], chapter) == [
        "block cell 1 runs 'x = 2', not a cell of the chapter in its order, nor a statement of it "
        "that defines nothing",
        "block cell 0 reads 'x', which the chapter last defines in its code cell 2, a cell the "
        "block skips",
    ]


def test_every_block_with_a_notebook_is_checked():
    on_disk = {path.stem for path in (NOTEBOOKS / blocks.BLOCKS_DIR).glob("*.ipynb")}
    assert on_disk and on_disk == {block.id for block in BLOCKS}


@pytest.mark.parametrize("block", BLOCKS, ids=lambda block: block.id)
def test_a_blocks_notebook_runs_a_subset_of_its_chapters_solution_notebook(block):
    block_cells = code_cells(NOTEBOOKS / block.notebook(False))
    chapter_cells = code_cells(NOTEBOOKS / f"{block.chapter}.ipynb")
    assert len(block_cells) > 3
    assert subset_problems(block_cells, chapter_cells) == []
