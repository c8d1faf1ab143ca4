"""Generated notebooks have cell ids that do not depend on a cell's position (issue 29, point 4):
inserting a cell in a chapter changes only that cell in the notebook's diff."""

import nbformat

from tools.chapter_notebooks import chapter_to_notebook

DEMO = """---
title: "Demo"
---

Some prose.

```{{python}}
#| label: setup
x = 1
```

More prose.
{inserted}
```{{python}}
#| label: fig-demo
#| fig-cap: "A figure."
#| fig-alt: "A figure."
print(x)
```

```{{python}}
print(x + 1)
```

```{{python}}
print(x + 1)
```
"""

INSERTED = """
```{python}
print("a new cell")
```

A new paragraph.
"""


def notebook(inserted: str = "") -> nbformat.NotebookNode:
    return chapter_to_notebook(DEMO.format(inserted=inserted), "demo.ipynb")


def test_inserting_a_cell_leaves_every_other_id_unchanged():
    before, after = notebook(), notebook(INSERTED)
    old = {cell.id: cell.source for cell in before.cells}
    new = {cell.id: cell.source for cell in after.cells}
    assert len(after.cells) == len(before.cells) + 2
    assert {key: new[key] for key in old} == old  # every old cell keeps its id and source
    added = [cell.source for cell in after.cells if cell.id not in old]
    assert added == ['print("a new cell")', "A new paragraph."]


def test_ids_are_unique_valid_and_labels_where_the_chapter_has_them():
    cells = notebook().cells
    ids = [cell.id for cell in cells]
    assert len(set(ids)) == len(ids)
    assert "setup" in ids and "fig-demo" in ids
    repeated = [cell.id for cell in cells if cell.source == "print(x + 1)"]
    assert repeated[1] == f"{repeated[0]}-2"
    nbformat.validate(notebook())


def test_ids_do_not_change_from_one_run_to_the_next():
    assert [cell.id for cell in notebook().cells] == [cell.id for cell in notebook().cells]
