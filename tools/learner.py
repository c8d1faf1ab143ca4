"""A learner's own copies of the exercise notebooks, and a check of the set-up that never fails
because the learner has saved work.

Usage, from the repository root (`scripts/course.sh` and `scripts/check-setup.sh` run both):
    python -m tools.learner copy    # my-work/<chapter>.ipynb from notebooks/student/, only where missing
    python -m tools.learner check   # Python, the pinned jax, the package, a Jupyter kernel that runs JAX

`my-work/` is git-ignored: nothing here, in git or in the course's commands, ever writes over a
notebook in it. The notebook sync check (`python -m tools.notebooks --check`, in `scripts/test.sh`)
is a developer's check; `check` only lists the notebooks under `notebooks/` that hold saved changes
(`git status`).
"""

from __future__ import annotations

import argparse
import importlib.metadata
import shutil
import subprocess
import sys
from pathlib import Path

import nbclient
import nbformat

from tools.book import pinned_jax_version
from tools.chapter_notebooks import STUDENT_DIR

WORK_DIR = "my-work"
"""The learner's folder (git-ignored), beside `notebooks/`."""

OPEN_NOTEBOOKS = f"source .venv/bin/activate && jupyter lab {WORK_DIR}"
"""How a learner opens the exercise notebooks with the course's environment (a system-wide
`jupyter lab` would start a kernel without JAX): the check's last line, and the README's."""

PROBLEM = "SET-UP PROBLEM"
"""The first words of a failed check's report (scripts/course.sh looks for them)."""

KERNEL_CHECK = """\
import jax, jaxcourse
print(jax.__version__, jax.jit(lambda x: 2 * x + 1)(20))
"""


def copy_missing(sources: list[Path], folder: Path) -> tuple[list[Path], list[Path]]:
    """Copies each of `sources` into `folder` where no file of its name is there yet (a learner's
    copy is never overwritten); returns (copied, kept)."""
    folder.mkdir(parents=True, exist_ok=True)
    copied, kept = [], []
    for source in sources:
        target = folder / source.name
        if target.exists():
            kept.append(target)
        else:
            shutil.copyfile(source, target)
            copied.append(target)
    return copied, kept


def make_work_copies(root: Path) -> tuple[list[Path], list[Path]]:
    """Copies every student notebook into `my-work/` where no copy exists; returns (copied, kept)."""
    return copy_missing(sorted((root / "notebooks" / STUDENT_DIR).glob("*.ipynb")), root / WORK_DIR)


def setup_problems(root: Path) -> list[str]:
    """What is wrong with this machine's set-up for the course, in words ([] when nothing is)."""
    problems = []
    if sys.version_info[:2] < (3, 12):  # noqa: UP036
        problems.append(f"Python {sys.version.split()[0]}: the course needs 3.12 or 3.13")
    pinned = pinned_jax_version(root)
    for name in ("jax", "jaxlib"):
        try:
            installed = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            installed = None
        if installed != pinned:
            problems.append(f"{name} {installed or 'is not installed'}: the course pins {pinned}")
    try:
        import jaxcourse
    except ImportError as error:
        problems.append(f"the course package does not import ({error}): run bash scripts/setup.sh")
    else:
        if (root / "src").resolve() not in Path(jaxcourse.__file__).resolve().parents:
            problems.append(
                f"jaxcourse is imported from {jaxcourse.__file__}, not from this repository's src/"
            )
    return problems


def kernel_problems(pinned: str) -> list[str]:
    """Runs JAX in the `python3` Jupyter kernel, as the notebooks do; [] when it works."""
    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(KERNEL_CHECK)])
    try:
        # The kernel's own log lines (ipykernel warns that its local TCP link is unencrypted)
        # are not the learner's business; a failure still comes back as the exception.
        nbclient.NotebookClient(notebook, timeout=300, kernel_name="python3").execute(
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
    except Exception as error:  # any failure to start or run the kernel is the finding
        return [f"the python3 Jupyter kernel cannot run JAX: {type(error).__name__}: {error}"]
    output = "".join(o.get("text", "") for o in notebook.cells[0].outputs)
    if output.split() != [pinned, "41"]:
        return [
            f"the python3 Jupyter kernel printed {output.strip()!r}, expected jax {pinned} and 41"
        ]
    return []


def changed_notebooks(root: Path) -> list[str] | None:
    """Notebooks under `notebooks/` that differ from the clone's commit (git), None without git."""
    try:
        status = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=all", "--", "notebooks"],
            cwd=root,
            capture_output=True,
            text=True,
            check=True,
        )
    except (OSError, subprocess.CalledProcessError):
        return None
    return sorted(
        line[3:].strip('"') for line in status.stdout.splitlines() if line.endswith(".ipynb")
    )


def check(root: Path) -> int:
    """Prints what works and what is saved; 1 if the set-up is broken, never because of saved work."""
    problems = setup_problems(root)
    if not problems:
        problems = kernel_problems(pinned_jax_version(root))
    work = sorted((root / WORK_DIR).glob("*.ipynb"))
    changed = changed_notebooks(root)
    print(
        f"Your work: {len(work)} notebooks in {WORK_DIR}/ (git-ignored; the course never overwrites them)."
    )
    if changed:
        print(
            "Saved changes in notebooks/ (kept as they are; `git pull` may conflict with them, "
            f"so prefer working in {WORK_DIR}/):",
            ", ".join(changed),
        )
    if problems:
        print(f"{PROBLEM}:", *problems, sep="\n  ")
        return 1
    print(
        f"Set-up OK: Python {sys.version.split()[0]}, jax {pinned_jax_version(root)}, "
        "the course package, and a Jupyter kernel that runs JAX."
    )
    print(f"Open your exercise notebooks: {OPEN_NOTEBOOKS}")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("command", choices=["copy", "check"])
    parser.add_argument("--root", type=Path, default=Path.cwd(), help="the repository root")
    args = parser.parse_args(argv)
    if args.command == "check":
        return check(args.root)
    copied, kept = make_work_copies(args.root)
    if copied:
        print(
            f"Copied {len(copied)} exercise notebooks into {WORK_DIR}/: work there (it is yours, never overwritten)."
        )
    if kept:
        print(f"Kept your {len(kept)} notebooks in {WORK_DIR}/ as they are.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
