"""Every committed notebook opens in Colab and installs the course there, and only there."""

import subprocess
import sys
import types
from pathlib import Path

import nbformat
import pytest

from jaxcourse import notebooks

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb")) + sorted((ROOT / "notebooks" / "student").glob("*.ipynb"))


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: str(p.relative_to(ROOT)))
def test_notebook_starts_with_badge_then_setup(path):
    cells = nbformat.read(path, as_version=4).cells
    badge, setup = cells[0], cells[1]
    name = str(path.relative_to(ROOT / "notebooks"))
    assert badge.cell_type == "markdown"
    assert f"({notebooks.colab_url(name)})" in badge.source
    assert notebooks.colab_url(name).endswith(f"/notebooks/{name}")
    assert "colab-badge.svg" in badge.source
    assert setup.cell_type == "code" and setup.source == notebooks.setup_source()


def test_there_are_notebooks():
    assert NOTEBOOKS


@pytest.fixture
def recorded_runs(monkeypatch):
    calls = []
    monkeypatch.setattr(subprocess, "run", lambda *args, **kwargs: calls.append((args, kwargs)))
    return calls


def test_setup_cell_does_nothing_outside_colab(recorded_runs, monkeypatch, capsys):
    monkeypatch.delitem(sys.modules, "google.colab", raising=False)
    exec(notebooks.setup_source(), {})
    assert recorded_runs == []
    assert capsys.readouterr().out == ""


def test_setup_cell_installs_the_course_on_colab(recorded_runs, monkeypatch, capsys):
    google = types.ModuleType("google")
    colab = types.ModuleType("google.colab")
    google.colab = colab
    monkeypatch.setitem(sys.modules, "google", sys.modules.get("google", google))
    monkeypatch.setitem(sys.modules, "google.colab", colab)
    exec(notebooks.setup_source(), {})
    ((args, kwargs),) = recorded_runs
    assert args[0] == [
        sys.executable, "-m", "pip", "install", "--quiet",
        f"jaxcourse @ git+https://github.com/{notebooks.REPOSITORY}@{notebooks.REF}",
    ]
    assert kwargs.get("check") is True
    assert capsys.readouterr().out.startswith("jax ")
