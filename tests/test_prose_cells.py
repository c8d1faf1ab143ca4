"""Sentences built by code show as sentences (issue 26, point 4).

A cell that only builds prose (its last statement is `Markdown(...)` or `display(Markdown(...))`,
and everything before it only imports or assigns) is hidden on the page with `#| echo: false`, so
the reader does not read the sentence twice, once as code. In the notebooks, `tools.notebooks`
collapses every `echo: false` cell: Jupyter's `source_hidden` and Colab's form view.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from tools import qmd
from tools.chapter_notebooks import chapter_to_notebook

ROOT = Path(__file__).resolve().parents[1]
PAGES = [path.relative_to(ROOT).as_posix() for path in qmd.qmd_files(ROOT)]
SETUP = (ast.Import, ast.ImportFrom, ast.Assign, ast.AugAssign, ast.AnnAssign)


def _is_markdown_call(node: ast.AST) -> bool:
    if not isinstance(node, ast.Call):
        return False
    name = getattr(node.func, "id", getattr(node.func, "attr", ""))
    if name == "display" and len(node.args) == 1:
        return _is_markdown_call(node.args[0])
    return name == "Markdown"


def builds_only_prose(code: str) -> bool:
    """True when the cell's last statement shows Markdown and the others only import or assign."""
    try:
        body = ast.parse(code).body
    except SyntaxError:  # an error cell, or IPython syntax: not a prose cell
        return False
    if not body or not isinstance(body[-1], ast.Expr) or not _is_markdown_call(body[-1].value):
        return False
    return all(isinstance(statement, SETUP) for statement in body[:-1])


def prose_cells_shown(text: str) -> list[int]:
    """The first lines of the page's prose-only cells that show their code."""
    _, blocks = qmd.split_blocks(text)
    shown = []
    for info, body, line in blocks:
        if not qmd.is_python_cell(info):
            continue
        options = qmd.cell_options(body)
        hidden = "false" in (
            qmd.option_value(options, "echo").lower(),
            qmd.option_value(options, "include").lower(),
        )
        if not hidden and builds_only_prose("\n".join(body[len(options) :])):
            shown.append(line)
    return shown


@pytest.mark.parametrize("page", PAGES)
def test_cells_that_only_build_prose_are_hidden(page):
    shown = prose_cells_shown((ROOT / page).read_text())
    assert not shown, "\n".join(
        f"{page}:{line}: this cell only builds a sentence; add `#| echo: false`" for line in shown
    )


def test_the_rule_finds_prose_cells_and_leaves_demonstrations_alone():
    assert builds_only_prose('x = 2\nMarkdown(f"x is {x}")')
    assert builds_only_prose('from IPython.display import Markdown\ndisplay(Markdown("a"))')
    assert not builds_only_prose('print(1)\nMarkdown("a")')  # shows output of its own
    assert not builds_only_prose('def f():\n    return 1\n\nMarkdown(f"{f()}")')
    assert not builds_only_prose('Markdown("a")\nx = 1')
    assert not builds_only_prose("jnp.sum(x)")
    text = (
        "```{python}\n#| echo: false\nMarkdown('hidden')\n```\n\n"
        "```{python}\nn = 3\nMarkdown(f'{n} shown')\n```\n"
    )
    assert prose_cells_shown(text) == [7]


def test_echo_false_cells_are_collapsed_in_the_notebooks():
    text = (
        '---\ntitle: "Demo"\n---\n\n```{python}\n#| label: prose-cell\n#| echo: false\n'
        "n = 3\nMarkdown(f'{n} things')\n```\n\n```{python}\nprint(1)\n```\n"
    )
    for student in (False, True):
        cells = chapter_to_notebook(text, "demo.ipynb", student=student).cells
        hidden = [cell for cell in cells if "n = 3" in cell.source]
        shown = [cell for cell in cells if cell.source == "print(1)"]
        assert len(hidden) == 1 and len(shown) == 1
        assert hidden[0].metadata["jupyter"] == {"source_hidden": True}  # Jupyter, VS Code
        assert hidden[0].metadata["cellView"] == "form"  # Colab shows the title line only
        assert hidden[0].source.startswith("# @title Prose cell\n")
        assert "jupyter" not in shown[0].metadata and "cellView" not in shown[0].metadata
