"""Generate `notebooks/*.ipynb` from `chapters/*.qmd`, and check that the committed ones are current.

Usage: `python -m jaxcourse.notebooks [--check] [--root DIR]`.

The .qmd files are parsed with jupytext's R Markdown reader, which understands ```{python}
chunks without the Quarto CLI. Each notebook gets a title, an Open-in-Colab badge and a setup
cell that installs this package only when it runs on Colab. Cells marked `#| error: true` get
the `raises-exception` tag, so nbmake expects their error instead of failing.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

import jupytext
import nbformat
import yaml

REPOSITORY = "jax-just-in-time/course"
"""The course's GitHub repository (owner/name): Colab badges and installs point here."""

REF = "main"
"""The git ref that Colab installs the package from and opens notebooks at."""

ERROR_OPTION = re.compile(r"^#\|\s*error:\s*true\s*$", re.MULTILINE)
HEADING_ANCHOR = re.compile(r"^(#+ .*?)\s*\{#[^}]*\}\s*$", re.MULTILINE)
CALLOUT_FENCE = re.compile(r"^:::.*$\n?", re.MULTILINE)


def colab_url(notebook_name: str) -> str:
    """Where Colab opens `notebooks/<notebook_name>` of this repository."""
    return f"https://colab.research.google.com/github/{REPOSITORY}/blob/{REF}/notebooks/{notebook_name}"


def badge_markdown(notebook_name: str) -> str:
    """The Open-in-Colab badge for one notebook, as Markdown."""
    image = "https://colab.research.google.com/assets/colab-badge.svg"
    return f"[![Open In Colab]({image})]({colab_url(notebook_name)})"


def setup_source() -> str:
    """The first code cell of every notebook: installs the course on Colab, a no-op elsewhere."""
    return f'''# Setup: on Colab, install the course package; anywhere else this cell does nothing.
import sys

if "google.colab" in sys.modules:
    import subprocess

    subprocess.run(
        [sys.executable, "-m", "pip", "install", "--quiet",
         "jaxcourse @ git+https://github.com/{REPOSITORY}@{REF}"],
        check=True,
    )
    from importlib.metadata import version

    # The version only: listing devices here would start JAX's backends before a
    # chapter can configure them (the sharding chapter sets the CPU device count).
    print("jax", version("jax"), "- devices are listed in the banner below")'''


def _markdown_for_notebook(text: str) -> str:
    """Drops Quarto-only syntax that Jupyter would show literally (anchors, callout fences)."""
    return CALLOUT_FENCE.sub("", HEADING_ANCHOR.sub(r"\1", text)).strip("\n")


def _front_matter_title(cell) -> str:
    front = yaml.safe_load(cell.source.strip().strip("-")) or {}
    return str(front.get("title", "Untitled"))


def chapter_to_notebook(text: str, notebook_name: str) -> nbformat.NotebookNode:
    """Converts the text of one .qmd chapter to a notebook without outputs."""
    parsed = jupytext.reads(text, fmt="Rmd")
    cells = list(parsed.cells)
    title = "Untitled"
    if cells and cells[0].cell_type == "raw" and cells[0].source.startswith("---"):
        title = _front_matter_title(cells.pop(0))
    new_cells = [
        nbformat.v4.new_markdown_cell(f"# {title}\n\n{badge_markdown(notebook_name)}"),
        nbformat.v4.new_code_cell(setup_source()),
    ]
    for cell in cells:
        if cell.cell_type == "code":
            new = nbformat.v4.new_code_cell(cell.source)
            if ERROR_OPTION.search(cell.source):
                new.metadata["tags"] = ["raises-exception"]
        else:
            source = _markdown_for_notebook(cell.source)
            if not source:
                continue
            new = nbformat.v4.new_markdown_cell(source)
        new_cells.append(new)
    for index, cell in enumerate(new_cells):
        cell.id = f"cell-{index}"
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


def render(chapter: Path) -> str:
    """The exact text of the notebook generated from `chapter`."""
    notebook = chapter_to_notebook(chapter.read_text(), chapter.stem + ".ipynb")
    return nbformat.writes(notebook) + "\n"


def stale_notebooks(root: Path) -> list[str]:
    """Names of notebooks that are missing, out of date, or have no chapter any more."""
    expected = {c.stem + ".ipynb": render(c) for c in chapter_paths(root)}
    stale = [
        name
        for name, text in expected.items()
        if not (root / "notebooks" / name).exists()
        or (root / "notebooks" / name).read_text() != text
    ]
    orphans = [p.name for p in (root / "notebooks").glob("*.ipynb") if p.name not in expected]
    return sorted(stale + orphans)


def write_all(root: Path) -> list[Path]:
    """Regenerates every notebook and removes those whose chapter is gone."""
    out_dir = root / "notebooks"
    out_dir.mkdir(exist_ok=True)
    written = []
    chapters = chapter_paths(root)
    for chapter in chapters:
        path = out_dir / (chapter.stem + ".ipynb")
        path.write_text(render(chapter))
        written.append(path)
    names = {c.stem + ".ipynb" for c in chapters}
    for orphan in out_dir.glob("*.ipynb"):
        if orphan.name not in names:
            orphan.unlink()
    return written


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="only report stale notebooks")
    parser.add_argument("--root", type=Path, default=Path.cwd(), help="the repository root")
    args = parser.parse_args(argv)
    if args.check:
        stale = stale_notebooks(args.root)
        if stale:
            print("Out of date (run python -m jaxcourse.notebooks):", ", ".join(stale))
            return 1
        print(f"All {len(chapter_paths(args.root))} notebooks are in sync with their chapters.")
        return 0
    for path in write_all(args.root):
        print("wrote", path.relative_to(args.root))
    return 0


if __name__ == "__main__":
    sys.exit(main())
