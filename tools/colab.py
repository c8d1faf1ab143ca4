"""The first two cells of every notebook: a title with an Open-in-Colab link to the chapter's
exercise notebook, and a collapsed setup cell that, on Colab only, installs the course package
from its release tag with the jax and jaxlib that requirements.txt pins.

The repository comes from `_quarto.yml`'s `book.repo-url`, the release tag from pyproject's
version, the pins from requirements.txt (`tools.book`); none of them is typed here.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path, PurePosixPath

import nbformat

from tools import book
from tools.book import REF, ROOT

REPOSITORY = book.repository()
"""The course's GitHub repository (owner/name), from `_quarto.yml`'s `book.repo-url`."""

JAX_VERSION = book.pinned_jax_version()
"""The jax and jaxlib version that the Colab setup cell installs: requirements.txt's pin."""

COURSE_VERSION = book.course_version()
"""The course package's version (pyproject.toml), the one its release tag `REF` holds."""

STUDENT_DIR = "student"
"""Where the exercise notebooks are, below `notebooks/` (`tools.chapter_notebooks.STUDENT_DIR`)."""

WORK_DIR = "my-work"
"""The learner's copies of the exercise notebooks, on a laptop (`tools.learner.WORK_DIR`)."""

SAVE_A_COPY = "In Colab, first choose **File > Save a copy in Drive**, then work in that copy"
"""What every Colab link says before the link: Colab does not keep changes to a notebook opened
from GitHub, so a learner who skips this step loses their answers with the session."""

SETUP_TITLE = "Setup: on Colab, installs the course and a matching JAX (a minute)"
"""The one line a learner sees of the setup cell: Colab's form view hides the code below it."""

# The first words of the setup cell's last line. The cell prints them from here, and the pages
# that say what to do on each (workshop.qmd, prepare.qmd) print `messages_markdown()` in a hidden
# cell, so that no page describes a message the cell does not print (tests/test_colab.py).
READY = "Ready"
"""Everything is installed already (a second run): the cell installs nothing."""
RESTARTING = "RESTARTING"
"""The cell replaced a module the session had imported: it ends the kernel, and Colab restarts it."""
NO_RESTART = "No restart needed"
"""Nothing the cell replaced had been imported: carry on."""
MESSAGES = (READY, RESTARTING, NO_RESTART)


def messages_markdown() -> str:
    """What the setup cell's last line can say, and what to do then: a Markdown list for the pages
    that tell learners and instructors about Colab, in the cell's own words."""
    return (
        f"- **{RESTARTING}**: the session had loaded a module that the cell has just replaced, so "
        "the cell ends the session and Colab restarts it by itself; Colab may say that the session "
        "crashed. On a fresh runtime this is the usual first answer: Colab's kernel loads NumPy "
        "before any cell runs. Nothing is wrong: run the notebook again from the top "
        f"(*Runtime > Run all*). The setup cell then says **{READY}** and takes a few seconds.\n"
        f"- **{NO_RESTART}**: carry on.\n"
        "- After **changing the runtime type** (CPU to GPU or back), Colab starts a fresh machine "
        "with its own older JAX: run the notebook from the top again, setup cell first, so that it "
        "installs the matching versions for the new runtime.\n"
    )


def exercise_notebook(notebook: str) -> str:
    """The exercise version of a notebook, below `notebooks/`: 'jit', 'jit.ipynb',
    'student/jit.ipynb' and 'chapters/jit.qmd' all give 'student/jit.ipynb', and
    'blocks/x.ipynb' gives 'blocks/student/x.ipynb'."""
    path = PurePosixPath(notebook)
    if path.suffix != ".ipynb":  # a chapter's name or page
        return f"{STUDENT_DIR}/{path.stem}.ipynb"
    folder = path.parent.parent if path.parent.name == STUDENT_DIR else path.parent
    return (folder / STUDENT_DIR / path.name).as_posix()


def solution_notebook(notebook: str) -> str:
    """The solution version of a notebook, below `notebooks/`: 'student/jit.ipynb' and
    'jit.ipynb' give 'jit.ipynb'; 'blocks/student/x.ipynb' gives 'blocks/x.ipynb'."""
    path = PurePosixPath(exercise_notebook(notebook))
    return (path.parent.parent / path.name).as_posix()


def notebook_url(notebook: str, repository: str = REPOSITORY, ref: str = REF) -> str:
    """Where Colab opens a notebook given by its path below `notebooks/`, at the release tag."""
    return f"https://colab.research.google.com/github/{repository}/blob/{ref}/notebooks/{notebook}"


def colab_url(chapter: str, repository: str = REPOSITORY, ref: str = REF) -> str:
    """Where Colab opens the chapter's exercise notebook (never the solutions), at the release tag."""
    return notebook_url(exercise_notebook(chapter), repository, ref)


def badge_markdown(chapter: str, repository: str = REPOSITORY, ref: str = REF) -> str:
    """The Open-in-Colab badge of a chapter's exercise notebook, after the save-a-copy step."""
    image = "https://colab.research.google.com/assets/colab-badge.svg"
    return f"{SAVE_A_COPY}: [![Open In Colab]({image})]({colab_url(chapter, repository, ref)})"


def counterpart_markdown(notebook: str, repository: str = REPOSITORY, ref: str = REF) -> str:
    """The header line that points a notebook (its path below `notebooks/`) to its other version:
    an exercise notebook to its solution notebook, a solution notebook to its exercise notebook,
    each by its path in the course's folder and on Colab."""
    exercises, solutions = exercise_notebook(notebook), solution_notebook(notebook)
    if PurePosixPath(notebook).as_posix() == exercises:
        return (
            f"**Solutions:** every exercise of this notebook is solved in its solution notebook, "
            f"`notebooks/{solutions}` in the course's folder "
            f"([open it in Colab]({notebook_url(solutions, repository, ref)}))."
        )
    return (
        f"**The exercises without their solutions:** the exercise notebook, "
        f"`notebooks/{exercises}` in the course's folder (on a laptop, your copy is "
        f"`{WORK_DIR}/{solutions}`), or [open it in Colab]({notebook_url(exercises, repository, ref)}). "
        "Work there: this version holds every solution."
    )


def colab_link(
    chapter: str, label: str | None = None, repository: str = REPOSITORY, ref: str = REF
) -> str:
    """A Markdown link to a chapter's exercise notebook on Colab, for pages and the README."""
    label = label or f"open {Path(exercise_notebook(chapter)).stem} in Colab"
    return f"{SAVE_A_COPY}: [{label}]({colab_url(chapter, repository, ref)})"


def course_requirement(repository: str = REPOSITORY, ref: str = REF) -> str:
    """What the Colab setup cell asks pip for to install the course package: its release tag,
    with the `compare` extra (pyPLNmodels, for Part II; Colab's own torch satisfies it)."""
    return f"jaxcourse[compare] @ git+https://github.com/{repository}@{ref}"


COURSE_REQUIREMENT = course_requirement()
"""The course package as the setup cell of this repository's notebooks installs it."""


def _canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def pinned_dependencies(root: Path = ROOT) -> list[str]:
    """The course package's dependencies, the `compare` and `formula` extras' included, at requirements.txt's
    versions (jax and jaxlib aside, and torch, which Colab preinstalls): what CI tests, so that
    every learner in a room gets the same versions."""
    project = tomllib.loads((root / "pyproject.toml").read_text())["project"]
    extras = project["optional-dependencies"]
    wanted = project["dependencies"] + extras["compare"] + extras["formula"]
    names = {_canonical(re.match(r"[A-Za-z0-9._-]+", d)[0]) for d in wanted}
    names -= {"jax", "jaxlib", "torch"}  # Colab's preinstalled torch serves pyPLNmodels
    pins = {}
    for line in (root / "requirements.txt").read_text().splitlines():
        match = re.match(r"([A-Za-z0-9._-]+)\s*([=<>!~].*)$", line.split("#")[0].strip())
        if match and _canonical(match[1]) in names:
            pins[_canonical(match[1])] = f"{match[1]}{match[2].replace(' ', '')}"
    missing = names - set(pins)
    if missing:
        raise ValueError(f"requirements.txt does not pin the package's {sorted(missing)}")
    return [pins[name] for name in sorted(pins)]


SETUP_CELL = """\
# @title {title}
# Anywhere but Colab this cell does nothing.
import sys

JAX_VERSION = "{jax_version}"
COURSE_VERSION = "{course_version}"
COURSE = "{course}"
PINNED = {pinned}

if "google.colab" in sys.modules:
    import importlib
    import os
    import signal
    import subprocess
    import time
    from importlib.metadata import PackageNotFoundError, distributions, version

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

    def installed(name):
        try:
            return version(name)
        except PackageNotFoundError:
            return None

    def pip(*args):
        subprocess.run([sys.executable, "-m", "pip", *args, "--quiet"], check=True)

    # Modules this session has imported keep running their old code until a restart. Colab's
    # kernel imports numpy and pandas at start, older than those the pinned JAX needs.
    MODULES = ("jax", "jaxlib", "numpy", "scipy", "pandas", "matplotlib", "optax")

    def imported_versions():
        return {{name: getattr(sys.modules[name], "__version__", "?")
                for name in MODULES if name in sys.modules}}

    def ready(gpu):
        # What an earlier run of this cell left: nothing to install again after the restart.
        plugins = cuda_plugins()
        return (installed("jax") == installed("jaxlib") == JAX_VERSION
                and installed("jaxcourse") == COURSE_VERSION
                and (bool(plugins) if gpu else not plugins)
                and all(installed(name) == JAX_VERSION for name in plugins))

    def install(gpu):
        # Colab preinstalls an older JAX, and pip would upgrade jax and jaxlib but not the CUDA
        # plugin. So one pip command installs all three at one version (jax[cuda12] brings the
        # plugin) with the course and its pinned dependencies, and any other plugin goes: with
        # no GPU it is of no use.
        if gpu:
            jax = [f"jax[cuda12]=={{JAX_VERSION}}"]
        else:
            jax = [f"jax=={{JAX_VERSION}}", f"jaxlib=={{JAX_VERSION}}"]
        print("Installing", *jax, "and the course for a", "GPU" if gpu else "CPU", "runtime (a minute).")
        unused = [name for name in cuda_plugins() if not (gpu and name.startswith("jax-cuda12-"))]
        if unused:
            pip("uninstall", "--yes", *unused)
        # pip may then list conflicts with preinstalled packages that the course does not use.
        pip("install", *jax, *PINNED, COURSE)
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
    gpu = gpu_present()
    if ready(gpu):
        print(f"{ready}: jax {{JAX_VERSION}} and the course {{COURSE_VERSION}} are installed.")
    else:
        install(gpu)
        check_versions()
    outdated = [f"{{name}} {{old}}" for name, old in imported.items() if old != installed(name)]
    if outdated:
        print(f"{restarting}: this session had loaded {{', '.join(outdated)}}, which this cell has"
              " just replaced, so Colab now restarts the session (it may say it crashed). Then run"
              " the notebook again from the top: this cell will take a few seconds.", flush=True)
        time.sleep(1)  # lets the line reach the notebook before the kernel ends
        os.kill(os.getpid(), signal.SIGKILL)  # Colab starts a fresh kernel by itself
    else:
        print("{no_restart}: nothing this cell upgraded had been imported.")
"""


def setup_source(repository: str = REPOSITORY, ref: str = REF) -> str:
    """The first code cell of every notebook: on Colab, installs the course with a matching JAX.

    Colab preinstalls an older jax and jaxlib, and on a GPU runtime a CUDA plugin of their
    version; its kernel has imported numpy (and pandas) before any cell runs. The cell installs
    `JAX_VERSION` and the course at its release tag `ref` with the dependencies at
    requirements.txt's versions, in one pip command (with the plugin of the same version when
    `nvidia-smi -L` lists a GPU, and without any plugin otherwise), checks that the plugin's
    version is jaxlib's and prints what is installed. When it replaced a module the session had
    imported, it says so in one line and ends the kernel process, which Colab restarts; run
    again, it finds everything installed and installs nothing. It never imports jax: the
    sharding chapter configures JAX after it. Elsewhere it does nothing.
    """
    return SETUP_CELL.format(
        title=SETUP_TITLE,
        jax_version=JAX_VERSION,
        course_version=COURSE_VERSION,
        course=course_requirement(repository, ref),
        pinned=repr(pinned_dependencies()),
        ready=READY,
        restarting=RESTARTING,
        no_restart=NO_RESTART,
    ).rstrip("\n")


def setup_cell(repository: str = REPOSITORY, ref: str = REF) -> nbformat.NotebookNode:
    """The setup cell, collapsed to its title line: Colab's form view, and JupyterLab's."""
    cell = nbformat.v4.new_code_cell(setup_source(repository, ref))
    cell.metadata["cellView"] = "form"
    cell.metadata["jupyter"] = {"source_hidden": True}
    return cell
