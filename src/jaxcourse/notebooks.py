"""Generate `notebooks/*.ipynb` from `chapters/*.qmd`, and check that the committed ones are current.

Usage: `python -m jaxcourse.notebooks [--check] [--root DIR]`.

Two notebooks come from each chapter: `notebooks/<chapter>.ipynb`, the whole chapter with the
exercise solutions (the solution notebook), and `notebooks/student/<chapter>.ipynb`, the same
without the solution callouts, so the exercise stubs and their checkers are what is left.

The .qmd files are parsed with jupytext's R Markdown reader, which understands ```{python}
chunks without the Quarto CLI. Each notebook gets a title, an Open-in-Colab badge and a setup
cell that, only when it runs on Colab, installs this package with jax `JAX_VERSION`. Cells marked
`#| error: true` get the `raises-exception` tag, so nbmake expects their error instead of failing.
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
SOLUTION_START = re.compile(r'^::: *\{\.callout-tip collapse="true"\} *\n## Solution *$', re.MULTILINE)
CALLOUT_END = re.compile(r"^:::\s*$", re.MULTILINE)
STUDENT_NOTE = (
    "*Solution: in the solution notebook (`notebooks/` rather than `notebooks/student/`) "
    "and, folded, on the course website.*"
)
STUDENT_DIR = "student"


def colab_url(notebook_name: str) -> str:
    """Where Colab opens `notebooks/<notebook_name>` of this repository."""
    return f"https://colab.research.google.com/github/{REPOSITORY}/blob/{REF}/notebooks/{notebook_name}"


def badge_markdown(notebook_name: str) -> str:
    """The Open-in-Colab badge for one notebook, as Markdown."""
    image = "https://colab.research.google.com/assets/colab-badge.svg"
    return f"[![Open In Colab]({image})]({colab_url(notebook_name)})"


JAX_VERSION = "0.12.0.1"
"""The jax and jaxlib version that the Colab setup cell installs: requirements.txt's pin."""

COURSE_REQUIREMENT = f"jaxcourse @ git+https://github.com/{REPOSITORY}@{REF}"
"""What the Colab setup cell asks pip for to install the course package."""

SETUP_CELL = '''\
# Setup: on Colab, install the course and a matching JAX; anywhere else this cell does nothing.
import sys

JAX_VERSION = "{jax_version}"
COURSE = "{course}"

if "google.colab" in sys.modules:
    import importlib
    import subprocess
    from importlib.metadata import distributions, version

    def gpu_present():
        # Colab's GPU runtimes have nvidia-smi, and `nvidia-smi -L` lists one "GPU 0: ..." per GPU.
        try:
            listing = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True)
        except OSError:
            return False
        return listing.returncode == 0 and "GPU " in listing.stdout

    def cuda_plugins():
        # jax-cuda12-plugin and jax-cuda12-pjrt: jaxlib loads them only at exactly its own version.
        names = {{(d.metadata["Name"] or "").lower().replace("_", "-") for d in distributions()}}
        return sorted(n for n in names if n.startswith("jax-cuda") and n.endswith(("plugin", "pjrt")))

    def pip(*args):
        subprocess.run([sys.executable, "-m", "pip", *args, "--quiet"], check=True)

    def imported_versions():
        # A module this session has imported keeps running its old code until a restart.
        return {{name: getattr(sys.modules[name], "__version__", "?")
                for name in ("jax", "jaxlib", "numpy") if name in sys.modules}}

    def install(gpu):
        # Colab preinstalls an older JAX, and pip would upgrade jax and jaxlib but not the CUDA
        # plugin. So one pip command installs all three at one version (jax[cuda12] brings the
        # plugin) with the course, and any other plugin goes: with no GPU it is of no use.
        if gpu:
            jax = [f"jax[cuda12]=={{JAX_VERSION}}"]
        else:
            jax = [f"jax=={{JAX_VERSION}}", f"jaxlib=={{JAX_VERSION}}"]
        print("Installing", *jax, "and the course for a", "GPU" if gpu else "CPU", "runtime (a minute).")
        unused = [name for name in cuda_plugins() if not (gpu and name.startswith("jax-cuda12-"))]
        if unused:
            pip("uninstall", "--yes", *unused)
        # pip may then list conflicts with preinstalled packages that the course does not use.
        pip("install", *jax, COURSE)
        importlib.invalidate_caches()  # so that `version` sees what pip has just installed

    def check_versions():
        versions = {{name: version(name) for name in ["jax", "jaxlib", *cuda_plugins()]}}
        wrong = [name for name in cuda_plugins() if versions[name] != versions["jaxlib"]]
        if wrong:  # jaxlib would ignore the plugin and compute on the CPU without a word
            found = ", ".join(f"{{name}} {{versions[name]}}" for name in wrong)
            raise RuntimeError(f"jaxlib {{versions['jaxlib']}} does not load {{found}}. "
                               f"Run `!pip uninstall -y {{' '.join(wrong)}}`, then this cell again.")
        print("Installed:", ", ".join(f"{{name}} {{v}}" for name, v in versions.items()))

    imported = imported_versions()
    install(gpu_present())
    check_versions()
    outdated = [f"{{name}} {{old}}" for name, old in imported.items() if old != version(name)]
    if outdated:
        print(f"RESTART NEEDED: this session had imported {{', '.join(outdated)}}, which this cell"
              " replaced. Choose Runtime > Restart session, then run the notebook again from the top.")
    else:
        print("No restart needed: nothing this cell upgraded had been imported.")
'''


def setup_source() -> str:
    """The first code cell of every notebook: on Colab, installs the course with a matching JAX.

    Colab preinstalls an older jax and jaxlib, and on a GPU runtime a CUDA plugin of their
    version. The cell installs `JAX_VERSION` in one pip command (with the plugin of the same
    version when `nvidia-smi -L` lists a GPU, and without any plugin otherwise), checks that
    the plugin's version is jaxlib's, prints what is installed, and says whether the session must
    restart. It never imports jax: the sharding chapter configures JAX after it. Elsewhere it
    does nothing.
    """
    return SETUP_CELL.format(jax_version=JAX_VERSION, course=COURSE_REQUIREMENT).rstrip("\n")


def _markdown_for_notebook(text: str) -> str:
    """Drops Quarto-only syntax that Jupyter would show literally (anchors, callout fences)."""
    return CALLOUT_FENCE.sub("", HEADING_ANCHOR.sub(r"\1", text)).strip("\n")


def _strip_solution_text(source: str, inside: bool) -> tuple[str, bool]:
    """Removes solution callouts from one markdown cell; `inside` says whether one is open."""
    kept = []
    while source:
        if inside:
            end = CALLOUT_END.search(source)
            if end is None:
                return "".join(kept), True
            source, inside = source[end.end():], False
            continue
        start = SOLUTION_START.search(source)
        if start is None:
            kept.append(source)
            break
        kept.append(source[: start.start()].rstrip() + f"\n\n{STUDENT_NOTE}\n")
        source, inside = source[start.end():], True
    return "".join(kept), inside


def _without_solutions(cells: list) -> list:
    """Drops every `## Solution` callout (its markdown and code cells), leaving a short note."""
    kept, inside = [], False
    for cell in cells:
        if cell.cell_type != "markdown":
            if not inside:
                kept.append(cell)
            continue
        source, inside = _strip_solution_text(cell.source, inside)
        if source.strip():
            kept.append(nbformat.v4.new_markdown_cell(source.strip("\n")))
    return kept


def _front_matter_title(cell) -> str:
    front = yaml.safe_load(cell.source.strip().strip("-")) or {}
    return str(front.get("title", "Untitled"))


def chapter_to_notebook(text: str, notebook_name: str, *, student: bool = False) -> nbformat.NotebookNode:
    """Converts the text of one .qmd chapter to a notebook without outputs.

    `notebook_name` is the path below `notebooks/` (it sets the Colab badge); `student=True`
    leaves out the exercise solutions.
    """
    parsed = jupytext.reads(text, fmt="Rmd")
    cells = list(parsed.cells)
    title = "Untitled"
    if cells and cells[0].cell_type == "raw" and cells[0].source.startswith("---"):
        title = _front_matter_title(cells.pop(0))
    if student:
        cells = _without_solutions(cells)
        title += " (exercises)"
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
    expect = "not yet" if student else "passed"
    new_cells.append(nbformat.v4.new_markdown_cell("## Your exercises at a glance"))
    new_cells.append(
        nbformat.v4.new_code_cell(
            f"from jaxcourse.checks import exercise_summary\n\nexercise_summary(expect={expect!r})"
        )
    )
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


def _expected(root: Path) -> dict[Path, str]:
    """Every notebook the chapters generate, by path, with its exact text."""
    expected = {}
    for chapter in chapter_paths(root):
        name = chapter.stem + ".ipynb"
        text = chapter.read_text()
        for student, relative in ((False, name), (True, f"{STUDENT_DIR}/{name}")):
            notebook = chapter_to_notebook(text, relative, student=student)
            expected[root / "notebooks" / relative] = nbformat.writes(notebook) + "\n"
    return expected


def _existing(root: Path) -> list[Path]:
    folder = root / "notebooks"
    return sorted(folder.glob("*.ipynb")) + sorted((folder / STUDENT_DIR).glob("*.ipynb"))


def stale_notebooks(root: Path) -> list[str]:
    """Notebooks (relative to `notebooks/`) that are missing, out of date, or have no chapter."""
    expected = _expected(root)
    stale = [path for path, text in expected.items() if not path.exists() or path.read_text() != text]
    orphans = [path for path in _existing(root) if path not in expected]
    return sorted(str(path.relative_to(root / "notebooks")) for path in stale + orphans)


def write_all(root: Path) -> list[Path]:
    """Regenerates every notebook and removes those whose chapter is gone."""
    expected = _expected(root)
    for path, text in expected.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    for orphan in _existing(root):
        if orphan not in expected:
            orphan.unlink()
    return list(expected)


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
        count = len(chapter_paths(args.root))
        print(f"All {2 * count} notebooks ({count} chapters, with and without solutions) are in sync.")
        return 0
    for path in write_all(args.root):
        print("wrote", path.relative_to(args.root))
    return 0


if __name__ == "__main__":
    sys.exit(main())
