"""Executes the chapters' notebooks for `scripts/course.sh`, cell by cell, with one progress display.

Usage, from the repository root (`scripts/course.sh` runs it when Quarto is not used):
    python -m tools.run_course                # every chapter whose notebook or package changed
    python -m tools.run_course prng vmap      # only these, and the glossary they link to
    python -m tools.run_course --force        # every chapter, changed or not

Each chapter's notebook (`notebooks/<chapter>.ipynb`) runs in a fresh `python3` Jupyter kernel
(nbclient), into `_executed/<chapter>.ipynb`. The display shows chapter k of n, its name, the code
cells done and the elapsed time; a table of the chapters ends the run, with the failing cell and its
error for a chapter that stopped. Kernel output that is not a cell's (warnings, logs) goes to the
log file, whose path is printed. A chapter whose notebook, package (`src/jaxcourse/`) and JAX are
those of its last successful run is not executed again: `_executed/.course-state.json` keeps what
that run saw.
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.metadata
import json
import os
import re
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import nbclient
import nbformat
from nbclient.exceptions import CellExecutionError, DeadKernelError
from rich.console import Console
from rich.markup import escape
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
)
from rich.table import Table

from tools.install import installed_mode

EXECUTED = "_executed"
"""Where the executed notebooks go (git-ignored); `tools.site` builds the local book from them."""

STATE = ".course-state.json"
"""In `EXECUTED`: each chapter's fingerprint and time at its last successful run."""

ANSI = re.compile(r"\x1b\[[0-9;]*m")

INLINE_FIGURES = "module://matplotlib_inline.backend_inline"
"""The Jupyter kernel's Matplotlib backend, which puts each figure in the cell's outputs."""


def kernel_environment() -> dict[str, str]:
    """This process's environment for a kernel that renders a page: `MPLBACKEND` is the inline
    backend whatever the shell set. ipykernel keeps an `MPLBACKEND` it inherits, and `Agg` (common
    on headless machines) would draw every figure nowhere: a page without its figures."""
    return {**os.environ, "MPLBACKEND": INLINE_FIGURES}


@dataclass
class Result:
    """What happened to one chapter: `status` is 'ran', 'unchanged' (skipped) or 'failed'."""

    chapter: str
    status: str
    cells: int = 0
    seconds: float = 0.0
    failed_cell: int | None = None  # the code cell's number, 1-based, when it failed
    failed_source: str = ""
    error: str = ""
    outputs: list[str] = field(default_factory=list)


def package_fingerprint(root: Path) -> str:
    """A hash of the course package's files and the installed jax: what every chapter runs on."""
    digest = hashlib.sha256()
    package = root / "src" / "jaxcourse"
    for path in sorted(package.rglob("*")):
        if path.is_file() and "__pycache__" not in path.parts and path.suffix != ".pyc":
            digest.update(path.relative_to(package).as_posix().encode() + b"\0")
            digest.update(path.read_bytes() + b"\0")
    for name in ("jax", "jaxlib"):
        try:
            digest.update(f"{name}=={importlib.metadata.version(name)}\0".encode())
        except importlib.metadata.PackageNotFoundError:
            digest.update(f"{name} missing\0".encode())
    return digest.hexdigest()


def fingerprint(notebook: Path, package: str) -> str:
    """The chapter's notebook and the package: a chapter is run again when this changes."""
    return hashlib.sha256(notebook.read_bytes() + package.encode()).hexdigest()


def load_state(executed: Path) -> dict[str, dict]:
    try:
        return json.loads((executed / STATE).read_text())
    except (OSError, ValueError):
        return {}


def save_state(executed: Path, state: dict[str, dict]) -> None:
    (executed / STATE).write_text(json.dumps(state, indent=1, sort_keys=True) + "\n")


def code_cells(notebook: nbformat.NotebookNode) -> list[int]:
    """Indices of the code cells: what the progress display counts."""
    return [i for i, cell in enumerate(notebook.cells) if cell.cell_type == "code"]


def error_of(cell: nbformat.NotebookNode) -> str:
    """The cell's error as `Name: message`, without colour codes."""
    for output in cell.get("outputs", []):
        if output.get("output_type") == "error":
            return ANSI.sub("", f"{output.get('ename', '')}: {output.get('evalue', '')}")
    return ""


def execute(
    notebook_path: Path,
    out_path: Path,
    *,
    log,
    on_cell,
    timeout: int = 900,
    kernel_name: str = "python3",
) -> Result:
    """Runs one notebook with nbclient, calling `on_cell(done, total)` after each code cell; writes
    the executed notebook to `out_path` only when every cell ran."""
    chapter = notebook_path.stem
    notebook = nbformat.read(notebook_path, as_version=4)
    indices = code_cells(notebook)
    number = {index: k + 1 for k, index in enumerate(indices)}
    current: dict[str, int] = {}

    def started(cell, cell_index, **_):
        current["index"] = cell_index

    def executed(cell, cell_index, **_):
        on_cell(number[cell_index], len(indices))

    client = nbclient.NotebookClient(
        notebook,
        timeout=timeout,
        kernel_name=kernel_name,
        on_cell_start=started,
        on_cell_executed=executed,
    )
    start = time.perf_counter()
    try:
        # The kernel's own stdout and stderr (not the cells' outputs) go to the log.
        client.execute(
            cwd=str(notebook_path.parent), env=kernel_environment(), stdout=log, stderr=log
        )
    except (CellExecutionError, DeadKernelError, TimeoutError, RuntimeError) as failure:
        index = current.get("index")
        cell = notebook.cells[index] if index is not None else None
        error = (error_of(cell) if cell is not None else "") or ANSI.sub(
            "", f"{type(failure).__name__}: {str(failure).strip().splitlines()[-1]}"
        )
        return Result(
            chapter,
            "failed",
            cells=len(indices),
            seconds=time.perf_counter() - start,
            failed_cell=number.get(index) if index is not None else None,
            failed_source=cell.source if cell is not None else "",
            error=error,
        )
    nbformat.write(notebook, out_path)
    return Result(chapter, "ran", cells=len(indices), seconds=time.perf_counter() - start)


def summary_table(results: list[Result]) -> Table:
    """The closing table: one row per chapter, with its status, cells and time."""
    table = Table(title="The course run")
    table.add_column("Chapter")
    table.add_column("Status")
    table.add_column("Cells", justify="right")
    table.add_column("Time", justify="right")
    styles = {"ran": "green", "unchanged": "dim", "failed": "bold red"}
    for result in results:
        status = "unchanged, not run" if result.status == "unchanged" else result.status
        if result.status == "failed":
            status = f"FAILED at cell {result.failed_cell}"
        table.add_row(
            result.chapter,
            f"[{styles[result.status]}]{escape(status)}[/]",
            str(result.cells),
            "-" if result.status == "unchanged" else f"{result.seconds:.1f} s",
        )
    return table


def report_failure(console: Console, result: Result, notebook: Path) -> None:
    """The failing cell (its first lines) and its error, for a chapter that stopped."""
    lines = result.failed_source.splitlines()
    shown = "\n".join(f"    {line}" for line in lines[:12])
    more = f"\n    ... ({len(lines) - 12} more lines)" if len(lines) > 12 else ""
    console.print(
        f"[bold red]{escape(result.chapter)}[/] stopped at code cell {result.failed_cell} "
        f"of {result.cells} ({escape(str(notebook))}):"
    )
    console.print(escape(shown + more), highlight=False)
    console.print(f"  [red]{escape(result.error)}[/]", highlight=False)


def run_course(
    root: Path,
    chapters: list[str],
    *,
    force: bool = False,
    console: Console | None = None,
    log_path: Path | None = None,
    kernel_name: str = "python3",
) -> list[Result]:
    """Executes `chapters` (names of notebooks/*.ipynb; all when empty) into `_executed/`."""
    console = console or Console()
    executed = root / EXECUTED
    executed.mkdir(exist_ok=True)
    log_path = log_path or executed / "course.log"
    notebooks = [root / "notebooks" / f"{name}.ipynb" for name in chapters] or sorted(
        (root / "notebooks").glob("*.ipynb")
    )
    state = load_state(executed)
    package = package_fingerprint(root)
    results: list[Result] = []
    console.print(f"The kernels' messages go to {log_path}.")
    started = time.perf_counter()
    with (
        log_path.open("a") as log,
        Progress(
            TextColumn("[bold]{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("{task.fields[unit]}"),
            TimeElapsedColumn(),
            console=console,
        ) as progress,
    ):
        course = progress.add_task("Course", total=len(notebooks), unit="chapters")
        for k, notebook in enumerate(notebooks, start=1):
            name = notebook.stem
            out = executed / notebook.name
            print(f"== {notebook}", file=log, flush=True)
            mark = fingerprint(notebook, package)
            if not force and out.exists() and state.get(name, {}).get("fingerprint") == mark:
                cells = len(code_cells(nbformat.read(notebook, as_version=4)))
                results.append(Result(name, "unchanged", cells=cells))
                progress.console.print(f"[dim][{k}/{len(notebooks)}] {name}: unchanged, not run")
                progress.advance(course)
                continue
            task = progress.add_task(f"[{k}/{len(notebooks)}] {name}", total=None, unit="cells")

            def on_cell(done: int, total: int, task=task) -> None:
                progress.update(task, completed=done, total=total)

            result = execute(notebook, out, log=log, on_cell=on_cell, kernel_name=kernel_name)
            progress.remove_task(task)
            results.append(result)
            if result.status == "ran":
                state[name] = {"fingerprint": mark, "seconds": round(result.seconds, 1)}
                save_state(executed, state)
                progress.console.print(
                    f"[green][{k}/{len(notebooks)}] {name}: {result.cells} cells, "
                    f"{result.seconds:.1f} s"
                )
            else:
                out.unlink(missing_ok=True)  # a partial run is not shown in the book
                state.pop(name, None)
                save_state(executed, state)
                progress.console.print(
                    f"[red][{k}/{len(notebooks)}] {name}: FAILED at cell {result.failed_cell}"
                )
            progress.advance(course)
    console.print(summary_table(results))
    for result in results:
        if result.status == "failed":
            report_failure(console, result, root / "notebooks" / f"{result.chapter}.ipynb")
    ran = [r for r in results if r.status == "ran"]
    elapsed = time.perf_counter() - started
    if not ran and not any(r.status == "failed" for r in results):
        console.print(
            f"Nothing changed since the last run: no chapter executed ({elapsed:.1f} s). "
            "`--force` runs them all again."
        )
    else:
        console.print(f"{len(ran)} of {len(results)} chapters executed in {elapsed:.0f} s.")
    return results


def part_one_chapters(root: Path) -> list[str]:
    """The names of Part I's chapters (the book's first part in _quarto.yml) and the glossary:
    what a Part I install can run (Part II compares with pyPLNmodels, which it leaves out)."""
    import yaml

    entries = yaml.safe_load((root / "_quarto.yml").read_text())["book"]
    parts = [entry for entry in entries["chapters"] if isinstance(entry, dict) and "part" in entry]
    pages = parts[0]["chapters"] + [p for p in entries.get("appendices", []) if "glossary" in p]
    return [
        Path(page).stem
        for page in pages
        if (root / "notebooks" / f"{Path(page).stem}.ipynb").is_file()
    ]


GLOSSARY = "glossary"
"""Run with any chapter named: the chapters link their terms to it, and the local book keeps those
links local only where the glossary page is built."""


def with_glossary(root: Path, names: list[str]) -> list[str]:
    """Named chapters and the glossary, which they link to (once, and only where the book has one)."""
    if names and GLOSSARY not in names and (root / "notebooks" / f"{GLOSSARY}.ipynb").is_file():
        return [*names, GLOSSARY]
    return names


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("chapters", nargs="*", help="names of notebooks/*.ipynb (default: all)")
    parser.add_argument("--force", action="store_true", help="run unchanged chapters too")
    parser.add_argument("--root", type=Path, default=Path.cwd(), help="the repository root")
    parser.add_argument("--log", type=Path, help="the log file (default: _executed/course.log)")
    args = parser.parse_args(argv)
    names = [Path(c).name.removesuffix(".ipynb").removesuffix(".qmd") for c in args.chapters]
    unknown = [n for n in names if not (args.root / "notebooks" / f"{n}.ipynb").is_file()]
    if unknown:
        print(
            f"No chapter named {', '.join(map(repr, unknown))} (the names are those of "
            "notebooks/*.ipynb).",
            file=sys.stderr,
        )
        return 2
    if args.log is None:  # run alone: a fresh log (course.sh passes its own, the set-up's in it)
        (args.root / EXECUTED).mkdir(exist_ok=True)
        (args.root / EXECUTED / "course.log").write_text("")
    if not names and installed_mode(args.root) == "part1":
        names = part_one_chapters(args.root)
        print(
            "A Part I install (scripts/setup.sh --part1): running Part I's chapters only; "
            "bash scripts/setup.sh --full adds what Part II needs."
        )
    results = run_course(
        args.root, with_glossary(args.root, names), force=args.force, log_path=args.log
    )
    return 1 if any(r.status == "failed" for r in results) else 0


if __name__ == "__main__":
    sys.exit(main())
