"""`scripts/course.sh`'s run (tools/run_course.py): one progress display, chapter k of n with its
cells done and time; a closing table of the chapters; the failing cell and its error for a chapter
that stopped; chapters unchanged since their last successful run are not executed again (unless
`--force`); and the installer's and kernels' messages go to a log file whose path is printed.

A tiny book in tmp_path stands for the course: two notebooks of a few cells, one of which fails.
"""

from __future__ import annotations

import io
import os
import shutil
import subprocess
from pathlib import Path

import nbformat
import pytest
from rich.console import Console

from tools import run_course
from tools.run_course import Result

ROOT = Path(__file__).resolve().parents[1]


def make_book(root: Path) -> Path:
    """notebooks/a.ipynb (two code cells that run, the second draws a figure) and
    notebooks/b.ipynb (its second cell fails), with a package in src/jaxcourse/."""
    (root / "notebooks").mkdir(parents=True)
    (root / "src" / "jaxcourse").mkdir(parents=True)
    (root / "src" / "jaxcourse" / "__init__.py").write_text("x = 1\n")
    cell = nbformat.v4.new_code_cell
    a = [
        nbformat.v4.new_markdown_cell("# A"),
        cell("import sys\nprint('kernel noise', file=sys.__stderr__)"),
        cell("import matplotlib.pyplot as plt\n\nx = 2\nplt.plot([0, x])\nplt.show()"),
    ]
    b = [cell("y = 1"), cell("def f():\n    return 1 / 0\n\nf()"), cell("z = 3")]
    for name, cells in (("a", a), ("b", b)):
        nbformat.write(nbformat.v4.new_notebook(cells=cells), root / "notebooks" / f"{name}.ipynb")
    return root


def terminal() -> tuple[Console, io.StringIO]:
    """A console that renders as a terminal does (the live display included), into a string."""
    out = io.StringIO()
    return Console(file=out, force_terminal=True, width=110, color_system=None), out


@pytest.fixture(scope="module")
def first_run(tmp_path_factory):
    """The tiny book run once for real (two kernels): the results and what the console showed.
    The shell's `MPLBACKEND` is `Agg`, as on many headless machines."""
    root = make_book(tmp_path_factory.mktemp("book"))
    console, out = terminal()
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("MPLBACKEND", "Agg")
        results = run_course.run_course(root, [], console=console)
    return root, results, out.getvalue()


def test_progress_shows_chapter_k_of_n_cells_and_time(first_run):
    root, results, shown = first_run
    assert [(r.chapter, r.status, r.cells) for r in results] == [
        ("a", "ran", 2),
        ("b", "failed", 3),
    ]
    assert "[1/2] a: 2 cells, " in shown and "[2/2] b: FAILED at cell 2" in shown
    assert "2/2 chapters" in shown  # the course's bar
    assert "[1/2] a" in shown and "cells" in shown and "0:00:0" in shown  # the live display
    assert (root / "_executed" / "a.ipynb").exists()
    executed = nbformat.read(root / "_executed" / "a.ipynb", as_version=4)
    assert all(c.execution_count for c in executed.cells if c.cell_type == "code")


def test_figures_reach_the_page_whatever_backend_the_shell_set(first_run):
    root, _, _ = first_run
    executed = nbformat.read(root / "_executed" / "a.ipynb", as_version=4)
    outputs = [o for c in executed.cells for o in c.get("outputs", [])]
    assert any("image/png" in o.get("data", {}) for o in outputs), outputs


def test_the_run_ends_with_a_table_and_the_failing_cell(first_run):
    root, results, shown = first_run
    table = shown[shown.index("The course run") :]
    rows = [line for line in table.splitlines() if line.startswith("│")]
    assert rows[0].split("│")[1:4] == [" a       ", " ran              ", "     2 "]
    assert "FAILED at cell 2" in rows[1] and " b " in rows[1]
    assert "b stopped at code cell 2 of 3" in shown
    assert "    def f():\n        return 1 / 0\n" in shown  # the cell's code
    assert "ZeroDivisionError: division by zero" in shown
    assert not (root / "_executed" / "b.ipynb").exists()  # a partial run is not in the book
    failed = results[1]
    assert failed.failed_cell == 2 and "1 / 0" in failed.failed_source


def test_kernel_noise_goes_to_the_log_whose_path_is_printed(first_run):
    root, _, shown = first_run
    log = root / "_executed" / "course.log"
    assert f"go to {log}" in shown.replace("\n", "")
    assert "kernel noise" in log.read_text() and "kernel noise" not in shown


@pytest.fixture
def fake_kernel(monkeypatch):
    """`execute` without a kernel: records which chapters ran, and writes their notebook."""
    ran = []

    def execute(notebook_path, out_path, *, log, on_cell, **kwargs):
        ran.append(notebook_path.stem)
        on_cell(1, 1)
        shutil.copy(notebook_path, out_path)
        return Result(notebook_path.stem, "ran", cells=1, seconds=0.1)

    monkeypatch.setattr(run_course, "execute", execute)
    return ran


def test_an_unchanged_chapter_is_not_run_again(tmp_path, fake_kernel):
    root = make_book(tmp_path)
    run_course.run_course(root, ["a"], console=terminal()[0])
    console, out = terminal()
    results = run_course.run_course(root, ["a"], console=console)
    assert fake_kernel == ["a"] and [r.status for r in results] == ["unchanged"]
    shown = out.getvalue()
    assert "[1/1] a: unchanged, not run" in shown
    assert "Nothing changed since the last run: no chapter executed" in shown


@pytest.mark.parametrize(
    "change",
    ["notebook", "package", "executed notebook removed", "force"],
)
def test_a_changed_chapter_runs_again_and_force_runs_any(tmp_path, fake_kernel, change):
    root = make_book(tmp_path)
    run_course.run_course(root, ["a", "b"], console=terminal()[0])
    force = False
    if change == "notebook":
        notebook = nbformat.read(root / "notebooks" / "a.ipynb", as_version=4)
        notebook.cells[-1].source = "x = 3"
        nbformat.write(notebook, root / "notebooks" / "a.ipynb")
    elif change == "package":
        (root / "src" / "jaxcourse" / "__init__.py").write_text("x = 2\n")
    elif change == "executed notebook removed":
        (root / "_executed" / "a.ipynb").unlink()
    else:
        force = True
    fake_kernel.clear()
    results = run_course.run_course(root, ["a", "b"], force=force, console=terminal()[0])
    expected = ["a", "b"] if change in ("package", "force") else ["a"]
    assert fake_kernel == expected
    assert [r.status for r in results] == [
        "ran" if name in expected else "unchanged" for name in ("a", "b")
    ]


def test_a_failed_chapter_runs_again(tmp_path, fake_kernel, monkeypatch):
    root = make_book(tmp_path)
    recording = run_course.execute  # fake_kernel's

    def failing(notebook_path, out_path, **kwargs):
        recording(notebook_path, out_path, **kwargs)
        return Result(notebook_path.stem, "failed", cells=1, failed_cell=1, error="E: e")

    monkeypatch.setattr(run_course, "execute", failing)
    run_course.run_course(root, ["a"], console=terminal()[0])
    monkeypatch.setattr(run_course, "execute", recording)
    run_course.run_course(root, ["a"], console=terminal()[0])
    assert fake_kernel == ["a", "a"]


def test_an_unknown_chapter_is_refused(tmp_path, capsys):
    make_book(tmp_path)
    assert run_course.main(["--root", str(tmp_path), "nowhere"]) == 2
    assert "No chapter named 'nowhere'" in capsys.readouterr().err


def test_course_sh_logs_the_installer_and_passes_force(tmp_path):
    """course.sh itself, with a stand-in set-up and Python: pip's lines go to the log only, the
    set-up's first line and the check's verdict are shown, and --force reaches the runner."""
    (tmp_path / "scripts").mkdir()
    shutil.copy(ROOT / "scripts" / "course.sh", tmp_path / "scripts" / "course.sh")
    (tmp_path / "scripts" / "check-setup.sh").write_text(
        "echo 'Setting up: downloads about 1 GB.'\n"
        "echo 'Collecting numpy==2.4.6'\n"
        "echo '  Downloading numpy-2.4.6.whl (16 MB)' >&2\n"
        "echo 'Set-up OK: Python 3.13.'\n"
    )
    bin_dir = tmp_path / ".venv" / "bin"
    bin_dir.mkdir(parents=True)
    (bin_dir / "activate").write_text(f'PATH="{bin_dir}:$PATH"\n')
    python = bin_dir / "python"
    python.write_text(f'#!/bin/sh\necho "$@" >> "{tmp_path}/python-calls"\n')
    python.chmod(0o755)
    env = {k: v for k, v in os.environ.items() if k not in ("JAXCOURSE_SKIP_SETUP", "VIRTUAL_ENV")}
    env["JAXCOURSE_WITHOUT_QUARTO"] = "1"
    done = subprocess.run(
        ["bash", str(tmp_path / "scripts" / "course.sh"), "--force", "jit"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    log = tmp_path / "_executed" / "course.log"
    assert f"messages go to {log}" in done.stdout
    assert "Setting up: downloads about 1 GB." in done.stdout and "Set-up OK" in done.stdout
    assert "numpy" not in done.stdout + done.stderr and "Downloading numpy" in log.read_text()
    calls = (tmp_path / "python-calls").read_text().splitlines()
    assert calls[0] == f"-m tools.run_course --log {log} --force jit"
    assert calls[1].startswith("-m tools.site")
    # The book is newer than everything it is built from: a second run does not build it again.
    (tmp_path / "_site").mkdir()
    (tmp_path / "_site" / "index.html").write_text("the book")
    again = subprocess.run(
        ["bash", str(tmp_path / "scripts" / "course.sh")],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert again.returncode == 0 and "The local book is up to date" in again.stdout
    calls = (tmp_path / "python-calls").read_text().splitlines()
    assert calls[2:] == [f"-m tools.run_course --log {log}"]


def test_a_part_one_install_runs_part_one_only(tmp_path, monkeypatch, capsys):
    """On a `setup.sh --part1` install (no pyPLNmodels), course.sh with no chapter named runs
    Part I's chapters and the glossary, and says why in one line; named chapters run as asked."""
    for name in ("jit", "vmap", "pln-model", "glossary"):
        (tmp_path / "notebooks").mkdir(exist_ok=True)
        (tmp_path / "notebooks" / f"{name}.ipynb").write_text("{}")
    (tmp_path / "_quarto.yml").write_text(
        "book:\n  chapters:\n    - index.qmd\n"
        "    - part: One\n      chapters: [chapters/jit.qmd, chapters/vmap.qmd]\n"
        "    - part: Two\n      chapters: [chapters/pln-model.qmd]\n"
        "  appendices: [workshop.qmd, chapters/glossary.qmd]\n"
    )
    (tmp_path / ".venv").mkdir()
    (tmp_path / ".venv" / "jaxcourse-install").write_text("part1\n")
    asked = []
    monkeypatch.setattr(
        run_course, "run_course", lambda root, names, **kwargs: asked.append(names) or []
    )
    assert run_course.main(["--root", str(tmp_path)]) == 0
    assert asked == [["jit", "vmap", "glossary"]]
    assert "Part I's chapters only" in capsys.readouterr().out
    assert run_course.main(["--root", str(tmp_path), "pln-model"]) == 0
    assert asked[-1] == ["pln-model", "glossary"]


def test_named_chapters_bring_the_glossary_their_links_point_to(tmp_path, monkeypatch):
    """`course.sh jit vmap` runs the glossary too, so that the local book's glossary links stay
    local; named once when asked for, and not added to a book without one."""
    (tmp_path / "notebooks").mkdir()
    for name in ("jit", "vmap", "glossary"):
        (tmp_path / "notebooks" / f"{name}.ipynb").write_text("{}")
    asked = []
    monkeypatch.setattr(
        run_course, "run_course", lambda root, names, **kwargs: asked.append(names) or []
    )
    assert run_course.main(["--root", str(tmp_path), "jit", "vmap"]) == 0
    assert run_course.main(["--root", str(tmp_path), "glossary", "jit"]) == 0
    (tmp_path / "notebooks" / "glossary.ipynb").unlink()
    assert run_course.main(["--root", str(tmp_path), "jit"]) == 0
    assert asked == [["jit", "vmap", "glossary"], ["glossary", "jit"], ["jit"]]
