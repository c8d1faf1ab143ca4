"""The prepared GPU check (`tools/gpu_check.py`, issue 41), dry-run on the CPU so that nothing
about the command, its report or its parsing is first debugged on a GPU."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import nbformat
import pytest

from tools import gpu_check, notebook_runner
from tools.gpu_check import ROOT


def _check(tmp_path, *options):
    command = [sys.executable, "-m", "tools.gpu_check", "--out", str(tmp_path), *options]
    return subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=900)


@pytest.mark.slow
def test_the_dry_run_runs_every_step_on_the_cpu_and_writes_a_report_that_reads_back(tmp_path):
    done = _check(tmp_path, "--dry-run")
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    report = gpu_check.load_report(tmp_path)
    assert report["environment"]["backend"] == "cpu"
    assert report["environment"]["jax_pinned"] == report["environment"]["jax"]
    timed = {row["level"]: row["per_1000_s"] for row in report["levels"]}
    assert all(timed[level] > 0 for level in gpu_check.LEVELS), timed
    assert timed["level 0"] is None  # the seed's no-jit figure is shown, not rerun
    assert report["pallas"]["status"] == "passed" and report["pallas"]["interpret"] is True
    assert [row["status"] for row in report["notebooks"]] == ["passed"]
    markdown = (tmp_path / "gpu-check.md").read_text()
    assert "| level 2 | 20 |" in markdown and "| 2.8 |" in markdown
    assert report["headline"] in markdown and "seed's 2.8 s" in report["headline"]


def test_a_spent_budget_stops_every_step_and_still_writes_the_report(tmp_path):
    budget = gpu_check.REPORT_MARGIN_S + 1  # a second for everything
    done = _check(tmp_path, "--dry-run", "--budget-s", str(budget))
    assert done.returncode == 1
    report = gpu_check.load_report(tmp_path)
    assert report["benchmark"]["status"] == "timed out"
    assert report["pallas"]["status"] == gpu_check.NOT_RUN
    assert {row["status"] for row in report["notebooks"]} == {gpu_check.NOT_RUN}
    assert report["headline"] == "level 2 did not run."
    assert report["seconds"] < 60


def test_a_report_missing_a_part_is_refused_by_name(tmp_path):
    (tmp_path / "gpu-check.json").write_text(json.dumps({"environment": {}, "levels": []}))
    with pytest.raises(ValueError, match="'benchmark'"):
        gpu_check.load_report(tmp_path)


def test_the_level_table_puts_the_course_beside_the_seed():
    runs = [{"name": f"level {k}", "n_steps": 1000, "run_s": k / 10, "per_iteration_s": k / 1e4}
            for k in range(1, 7)]  # fmt: skip
    rows = gpu_check.level_rows({"runs": runs})
    level2 = next(row for row in rows if row["level"] == "level 2")
    assert level2["per_1000_s"] == pytest.approx(0.2) and level2["seed_1000_s"] == 2.8
    assert gpu_check.headline(rows) == (
        "level 2 (lax.scan) takes 0.2 s for 1000 iterations against the seed's 2.8 s; "
        "the fastest, level 1, 0.1 s."
    )


def _notebook(path, *cells):
    notebook = nbformat.v4.new_notebook()
    for source, tags in cells:
        notebook.cells.append(nbformat.v4.new_code_cell(source, metadata={"tags": tags}))
    nbformat.write(notebook, path)
    return path


def test_the_runner_lets_a_tagged_cell_raise_and_stops_at_any_other(tmp_path):
    allowed = _notebook(
        tmp_path / "allowed.ipynb",
        ("x = 1", []),
        ("raise TypeError('shown on the page')", ["raises-exception"]),
        ("assert x == 1", []),
    )
    environment = dict(os.environ)
    assert notebook_runner.run_cells(allowed) == 0
    # In-process, the runner leaves the environment alone: an `MPLBACKEND=Agg` it left behind
    # was inherited by the kernels test_site started later in the same worker (pages without figures).
    assert dict(os.environ) == environment
    failing = _notebook(tmp_path / "failing.ipynb", ("x = 1", []), ("1 / 0", []), ("x = 2", []))
    run = [sys.executable, "-m", "tools.notebook_runner", str(failing)]
    done = subprocess.run(run, cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 1
    assert "FAILED at code cell 2" in done.stderr and "ZeroDivisionError" in done.stderr


def test_without_ipython_the_runner_stands_in_for_its_display(monkeypatch):
    monkeypatch.setitem(sys.modules, "IPython", None)  # `import IPython` now raises ImportError
    # setitem, not delitem: the stand-in put in sys.modules is taken out again after the test.
    monkeypatch.setitem(sys.modules, "IPython.display", None)
    assert notebook_runner._ipython_stand_in() is True
    from IPython.display import Markdown, display

    assert display(Markdown("shown nowhere")) is None


def test_the_runner_draws_figures_off_screen_in_its_own_process(tmp_path):
    notebook = _notebook(
        tmp_path / "backend.ipynb",
        ("import matplotlib; assert matplotlib.get_backend().lower() == 'agg'", []),
    )
    run = [sys.executable, "-m", "tools.notebook_runner", str(notebook)]
    environment = {k: v for k, v in os.environ.items() if k != "MPLBACKEND"}
    done = subprocess.run(
        run, cwd=ROOT, env=environment, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
