"""A learner's work survives the course's commands, and the learner's set-up check passes with it.

A copy of the repository's working tree, committed to a fresh git repository (its own notebooks and
scripts; this repository's `.venv` and `src/` linked), plays the learner's clone. The learner saves
an answer in `my-work/` and another in `notebooks/student/`, then runs the commands the workshop
guide gives: `scripts/check-setup.sh`, then `scripts/course.sh` (one chapter, set-up skipped), which
runs the set-up check again and logs it. Both pass, the check reports the saved notebook as saved
work, both answers are still there, and the developers' sync check still reports the saved
notebook.
"""

import os
import shutil
import subprocess
from pathlib import Path

import nbformat
import pytest

from tools.learner import OPEN_NOTEBOOKS, WORK_DIR, make_work_copies, setup_problems

# More than a few seconds: left out of the fast tier (scripts/test.sh --fast).
pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[1]
COPIED = [
    "scripts",
    "tools",
    "notebooks",
    "chapters",
    "resources",
    "_quarto.yml",
    "index.qmd",
    "workshop.qmd",
    "instructors.qmd",
    "prepare.qmd",
    "workshop",
    "requirements.txt",
    "pyproject.toml",  # the release tag of the Colab links (tools/book.py's REF) reads its version
    ".gitignore",
]
LINKED = [".venv", "src"]  # the environment is not rebuilt; the editable install points at src/
CHAPTER = "tracing"
"""The chapter course.sh executes here: the fastest to run."""


def make_clone(folder: Path) -> Path:
    for name in COPIED:
        source = ROOT / name
        if source.is_dir():
            shutil.copytree(source, folder / name, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy2(source, folder / name)
    for name in LINKED:
        (folder / name).symlink_to(ROOT / name)
    git = ["git", "-c", "user.name=Learner", "-c", "user.email=learner@example.org"]
    for command in (["init", "-q"], ["add", "-A"], ["commit", "-q", "-m", "the learner's clone"]):
        subprocess.run([*git, *command], cwd=folder, check=True, capture_output=True)
    return folder


def run(clone: Path, *command: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, JAXCOURSE_SKIP_SETUP="1", JAXCOURSE_WITHOUT_QUARTO="1")
    env.pop("JAXCOURSE_ENFORCE_VERDICTS", None)
    return subprocess.run(command, cwd=clone, env=env, capture_output=True, text=True, timeout=900)


def save_answer(path: Path, answer: str) -> None:
    """What Jupyter does when the learner replaces the first exercise stub's body and saves."""
    notebook = nbformat.read(path, as_version=4)
    stub = next(cell for cell in notebook.cells if "raise NotImplementedError" in cell.source)
    stub.source = stub.source.replace("raise NotImplementedError", f"return x  {answer}", 1)
    nbformat.write(notebook, path)


def test_work_copies_are_made_once_and_never_overwritten(tmp_path):
    student = tmp_path / "notebooks" / "student"
    student.mkdir(parents=True)
    (student / "a.ipynb").write_text("generated a")
    copied, kept = make_work_copies(tmp_path)
    assert [p.name for p in copied] == ["a.ipynb"] and kept == []
    (tmp_path / WORK_DIR / "a.ipynb").write_text("my answer")
    (student / "a.ipynb").write_text("generated a, regenerated")
    (student / "b.ipynb").write_text("a new chapter")
    copied, kept = make_work_copies(tmp_path)
    assert [p.name for p in copied] == ["b.ipynb"] and [p.name for p in kept] == ["a.ipynb"]
    assert (tmp_path / WORK_DIR / "a.ipynb").read_text() == "my answer"


def test_work_folder_is_ignored_by_git():
    if not (ROOT / ".git").exists():
        pytest.skip("not a git checkout")
    result = subprocess.run(["git", "check-ignore", "-q", f"{WORK_DIR}/jit.ipynb"], cwd=ROOT)
    assert result.returncode == 0, f"{WORK_DIR}/ is not git-ignored"


def test_setup_check_names_a_wrong_jax(tmp_path):
    (tmp_path / "requirements.txt").write_text("jax==0.0.1\njaxlib==0.0.1\n")
    (tmp_path / "src").symlink_to(ROOT / "src")
    problems = setup_problems(tmp_path)
    assert any("the course pins 0.0.1" in problem for problem in problems), problems
    assert setup_problems(ROOT) == []


def test_saved_answers_survive_the_learner_commands(tmp_path):
    clone = make_clone(tmp_path / "clone")
    first = run(clone, "bash", "scripts/check-setup.sh")
    assert first.returncode == 0, first.stdout + first.stderr
    assert "Set-up OK" in first.stdout
    # Its last line says how to open the notebooks from the course's environment.
    assert first.stdout.splitlines()[-1] == f"Open your exercise notebooks: {OPEN_NOTEBOOKS}"
    work = clone / WORK_DIR / f"{CHAPTER}.ipynb"
    student = clone / "notebooks" / "student" / f"{CHAPTER}.ipynb"
    assert work.read_text() == student.read_text()

    save_answer(work, "# ANSWER SAVED IN MY-WORK")
    save_answer(student, "# ANSWER SAVED IN NOTEBOOKS/STUDENT")
    saved = {path: path.read_text() for path in (work, student)}

    # course.sh runs check-setup.sh again first, and keeps what it printed in its log
    course = run(clone, "bash", "scripts/course.sh", CHAPTER)
    assert course.returncode == 0, course.stdout[-3000:] + course.stderr[-3000:]
    again = (clone / "_executed" / "course.log").read_text()
    assert "Set-up OK" in again, again
    assert f"student/{CHAPTER}.ipynb" in again  # reported as saved work, not as a failure
    assert "_site/index.html" in course.stdout
    assert (clone / "_site" / "chapters" / f"{CHAPTER}.html").exists()
    assert {path: path.read_text() for path in (work, student)} == saved

    developer = run(
        clone, str(ROOT / ".venv" / "bin" / "python"), "-m", "tools.notebooks", "--check"
    )
    assert developer.returncode == 1 and f"student/{CHAPTER}.ipynb" in developer.stdout
