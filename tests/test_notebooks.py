"""Notebooks are generated from the chapters (`tools.notebooks`) and committed in sync with them."""

import os
from pathlib import Path

import nbformat

from tools import chapter_notebooks, colab, notebooks, solutions
from tools.quarto_markdown import SOLUTION_ELSEWHERE, STUDENT_NOTE

ROOT = Path(__file__).resolve().parents[1]


def test_committed_notebooks_match_the_chapters():
    """Fails when a chapter changed without `python -m tools.notebooks`."""
    assert chapter_notebooks.stale_notebooks(ROOT) == []


def test_every_chapter_has_a_solution_and_a_student_notebook():
    names = {p.stem for p in chapter_notebooks.chapter_paths(ROOT)}
    assert names and names == {p.stem for p in (ROOT / "notebooks").glob("*.ipynb")}
    assert names == {p.stem for p in (ROOT / "notebooks" / "student").glob("*.ipynb")}


def test_check_mode_reports_a_stale_notebook(tmp_path):
    (tmp_path / "chapters").mkdir()
    (tmp_path / "notebooks").mkdir()
    (tmp_path / "_quarto.yml").write_text(
        "project: {type: book}\nbook:\n  repo-url: https://github.com/someone/fork\n  chapters: [chapters/demo.qmd]\n"
    )
    (tmp_path / "chapters" / "demo.qmd").write_text(
        '---\ntitle: "Demo"\n---\n\n```{python}\nx = 1\n```\n'
    )
    assert notebooks.main(["--check", "--root", str(tmp_path)]) == 1
    notebooks.main(["--root", str(tmp_path)])
    assert notebooks.main(["--check", "--root", str(tmp_path)]) == 0
    (tmp_path / "chapters" / "demo.qmd").write_text(
        '---\ntitle: "Demo"\n---\n\n```{python}\nx = 2\n```\n'
    )
    assert chapter_notebooks.stale_notebooks(tmp_path) == ["demo.ipynb", "student/demo.ipynb"]


def test_regenerating_keeps_a_copy_of_a_learners_saved_notebook(tmp_path, capsys):
    """A notebook that was run and saved (it has outputs) is copied before it is replaced;
    an untouched generated notebook is simply rewritten."""
    (tmp_path / "chapters").mkdir()
    (tmp_path / "_quarto.yml").write_text(
        "project: {type: book}\nbook:\n  repo-url: https://github.com/someone/fork\n  chapters: [chapters/demo.qmd]\n"
    )
    (tmp_path / "chapters" / "demo.qmd").write_text(
        '---\ntitle: "Demo"\n---\n\n```{python}\nx = 1\n```\n'
    )
    notebooks.main(["--root", str(tmp_path)])
    saved = tmp_path / "notebooks" / "student" / "demo.ipynb"
    notebook = nbformat.read(saved, as_version=4)
    answer = next(
        cell for cell in notebook.cells if cell.cell_type == "code" and cell.source == "x = 1"
    )
    answer.source, answer.execution_count = "x = 1  # MY ANSWER", 3
    answer.outputs = [
        nbformat.v4.new_output("execute_result", {"text/plain": "1"}, execution_count=3)
    ]
    nbformat.write(notebook, saved)

    assert notebooks.main(["--root", str(tmp_path)]) == 0
    copies = list((tmp_path / chapter_notebooks.SAVED_WORK_DIR).rglob("*.ipynb"))
    assert (
        len(copies) == 1
        and copies[0].parent.name == "student"
        and "MY ANSWER" in copies[0].read_text()
    )
    assert "MY ANSWER" not in saved.read_text()
    assert "kept a copy of your saved work" in capsys.readouterr().out
    notebooks.main(["--root", str(tmp_path)])  # nothing saved since: no second copy
    assert len(list((tmp_path / chapter_notebooks.SAVED_WORK_DIR).rglob("*.ipynb"))) == 1


def test_regenerating_rewrites_only_what_changed_and_says_which(tmp_path, capsys):
    """A second run with no change to the chapters writes nothing (modification times kept) and
    says so; a changed chapter rewrites its two notebooks and names them."""
    (tmp_path / "chapters").mkdir()
    (tmp_path / "_quarto.yml").write_text(
        "project: {type: book}\nbook:\n  repo-url: https://github.com/someone/fork\n"
        "  chapters: [chapters/demo.qmd, chapters/other.qmd]\n"
    )
    for name in ("demo", "other"):
        (tmp_path / "chapters" / f"{name}.qmd").write_text(
            f'---\ntitle: "{name}"\n---\n\n```{{python}}\nx = 1\n```\n'
        )
    notebooks.main(["--root", str(tmp_path)])
    first = capsys.readouterr().out
    assert "added notebooks/demo.ipynb" in first and "added notebooks/student/other.ipynb" in first

    other = tmp_path / "notebooks" / "other.ipynb"
    os.utime(other, (1_000_000, 1_000_000))
    notebooks.main(["--root", str(tmp_path)])
    assert capsys.readouterr().out.splitlines()[-1].startswith("0 changed, ")
    assert other.stat().st_mtime == 1_000_000

    (tmp_path / "chapters" / "demo.qmd").write_text(
        '---\ntitle: "demo"\n---\n\n```{python}\nx = 2\n```\n'
    )
    notebooks.main(["--root", str(tmp_path)])
    lines = capsys.readouterr().out.splitlines()
    assert lines[:2] == ["changed notebooks/demo.ipynb", "changed notebooks/student/demo.ipynb"]
    solutions_file = tmp_path / solutions.SOLUTIONS_FILE  # generated too, unchanged here
    unchanged = len(list((tmp_path / "notebooks").rglob("*.ipynb"))) - 2 + solutions_file.exists()
    assert lines[2] == f"2 changed, {unchanged} unchanged.", lines
    assert other.stat().st_mtime == 1_000_000


CHAPTER = """---
title: "A chapter"
---

## Section {#sec-demo}

::: {.callout-tip collapse="true"}
## Solution
```{python}
#| error: true
raise ValueError("shown on purpose")
```
:::

```{python}
y = 2
```
"""


def test_generated_notebook_structure():
    nb = chapter_notebooks.chapter_to_notebook(CHAPTER, "demo.ipynb")
    nbformat.validate(nb)
    title, setup, *rest = nb.cells
    assert title.source.startswith("# A chapter") and "colab.research.google.com" in title.source
    assert "demo.ipynb" in title.source
    assert setup.cell_type == "code" and "google.colab" in setup.source
    code = [c for c in rest if c.cell_type == "code"]
    assert code[0].metadata["tags"] == ["raises-exception"]
    assert "tags" not in code[1].metadata
    markdown = "\n".join(c.source for c in rest if c.cell_type == "markdown")
    assert "{#sec-demo}" not in markdown and ":::" not in markdown
    assert all(not c.get("outputs") for c in code)


def test_setup_cell_is_a_no_op_outside_colab():
    namespace = {}
    exec(colab.setup_source(), namespace)  # would pip-install only on Colab
    assert "subprocess" not in namespace


EXERCISE = """---
title: "Ex"
---

**1. Double it.**

```{python}
def double(x):
    raise NotImplementedError


check_double(double)
```

::: {.callout-tip collapse="true"}
## Solution
```{python}
def double(x):
    return 2 * x


check_double(double)
```
:::

**2. Explain.**

::: {.callout-tip collapse="true"}
## Solution
Because it is so.
:::

## Further reading
"""


def test_student_notebook_keeps_stubs_and_drops_solutions():
    student = chapter_notebooks.chapter_to_notebook(EXERCISE, "student/ex.ipynb", student=True)
    solution = chapter_notebooks.chapter_to_notebook(EXERCISE, "ex.ipynb")
    student_text = "\n".join(c.source for c in student.cells)
    solution_text = "\n".join(c.source for c in solution.cells)
    assert "return 2 * x" in solution_text and "Because it is so" in solution_text
    assert "return 2 * x" not in student_text and "Because it is so" not in student_text
    assert "raise NotImplementedError" in student_text
    # The exercise with a checker points to its hint ladder; the question without one does not.
    assert STUDENT_NOTE.replace("CHECKER", "check_double") in student_text
    assert student_text.count(SOLUTION_ELSEWHERE) == 1 and "CHECKER" not in student_text
    assert "**2. Explain.**" in student_text and "## Further reading" in student_text
    assert "notebooks/student/ex.ipynb" in student.cells[0].source
