"""Every notebook opens in Colab at its exercise version, and its setup cell, collapsed to one title
line, installs there (and only there) the course from its release tag with a matched JAX: jax,
jaxlib and, on a GPU runtime, the CUDA plugin of the same version. When it replaced a module the
session had imported, it ends the kernel, which Colab restarts. The banner says when a GPU is
present but JAX computes on the CPU.

These tests fake pip and Colab's installed packages; tests/test_colab_kernel.py runs the cell in a
real kernel with NumPy and pandas imported, and tests/test_colab_runtime.py runs the real install
in a rebuilt Colab environment.
"""

import os
import re
import subprocess
import sys
import types
from importlib import metadata
from pathlib import Path

import jax
import nbformat
import pytest

from jaxcourse import environment as environment_module
from jaxcourse.environment import GPU_UNUSED_WARNING, environment_line, nvidia_gpu_listed
from tools import book
from tools import colab as notebook_setup

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb")) + sorted(
    (ROOT / "notebooks" / "student").glob("*.ipynb")
)
X = notebook_setup.JAX_VERSION
PLUGINS = ["jax-cuda12-pjrt", "jax-cuda12-plugin"]
FAKE_GPU = 'echo "GPU 0: NVIDIA T4 (UUID: GPU-fake)"'
NO_DRIVER = 'echo "NVIDIA-SMI has failed: no NVIDIA driver is running." >&2; exit 9'


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: str(p.relative_to(ROOT)))
def test_notebook_starts_with_badge_then_setup(path):
    cells = nbformat.read(path, as_version=4).cells
    badge, setup = cells[0], cells[1]
    name = str(path.relative_to(ROOT / "notebooks"))
    assert badge.cell_type == "markdown"
    url = notebook_setup.colab_url(name)
    assert url.endswith(f"/blob/{notebook_setup.REF}/notebooks/student/{path.name}")
    # The solutions' badge opens the exercises too, and the save-a-copy step comes first.
    assert f"{notebook_setup.SAVE_A_COPY}: [![Open In Colab]" in badge.source
    assert notebook_setup.badge_markdown(name).count("colab.research.google.com/github/") == 1
    assert f"({url})" in notebook_setup.badge_markdown(name) in badge.source
    assert "colab-badge.svg" in badge.source
    assert setup.cell_type == "code" and setup.source == notebook_setup.setup_source()


@pytest.mark.parametrize("path", NOTEBOOKS[:1], ids=lambda p: str(p.relative_to(ROOT)))
def test_setup_cell_is_collapsed_to_its_title(path):
    """Colab's form view (`cellView: form`, a `# @title` first line) and JupyterLab show one line."""
    setup = nbformat.read(path, as_version=4).cells[1]
    assert setup.metadata["cellView"] == "form"
    assert setup.metadata["jupyter"] == {"source_hidden": True}
    assert setup.source.splitlines()[0] == f"# @title {notebook_setup.SETUP_TITLE}"


def test_the_student_folder_is_the_notebooks_one():
    from tools import chapter_notebooks

    assert notebook_setup.STUDENT_DIR == chapter_notebooks.STUDENT_DIR
    for name in ("jit", "jit.ipynb", "student/jit.ipynb", "chapters/jit.qmd"):
        assert notebook_setup.exercise_notebook(name) == "student/jit.ipynb"
    for name in ("blocks/x.ipynb", "blocks/student/x.ipynb"):
        assert notebook_setup.exercise_notebook(name) == "blocks/student/x.ipynb"


def test_the_course_is_installed_from_the_release_tag_of_its_version():
    """Not a moving branch: the tag v<pyproject's version>, which CONTRIBUTING says how to cut."""
    version = book.course_version()
    assert (
        version
        == __import__("tomllib").loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
    )
    assert notebook_setup.REF == book.REF == f"v{version}"
    assert notebook_setup.COURSE_REQUIREMENT.endswith(f"@v{version}")
    assert notebook_setup.setup_source().count(f'COURSE_VERSION = "{version}"') == 1
    guide = (ROOT / "CONTRIBUTING.md").read_text()
    assert "git tag v<version>" in guide and "git push origin v<version>" in guide


def test_the_course_dependencies_are_pinned_to_requirements_txt():
    """Every dependency of the package comes at the version CI tests, not only jax and jaxlib."""
    pins = notebook_setup.pinned_dependencies()
    requirements = (ROOT / "requirements.txt").read_text().splitlines()
    assert pins and all(pin in requirements for pin in pins)
    assert "numpy==" in " ".join(pins) and not any(p.startswith("jax") for p in pins)
    assert f"PINNED = {pins!r}" in notebook_setup.setup_source()


def test_every_colab_link_a_learner_sees_opens_the_exercises_after_save_a_copy():
    """README, index and workshop pages: every Colab link opens notebooks/student/, at the tag, and
    the text says to save a copy in Drive before it."""
    seen = 0
    for page in ("README.md", "index.qmd", "workshop.qmd"):
        text = (ROOT / page).read_text()
        for match in re.finditer(r"https://colab\.research\.google\.com/github/\S+", text):
            seen += 1
            assert f"/blob/{notebook_setup.REF}/notebooks/student/" in match[0], (page, match[0])
            before = text[max(0, match.start() - 400) : match.start()]
            assert "Save a copy in Drive" in before, (page, match[0])
    assert seen >= 1  # the README's


def test_there_are_notebooks():
    assert NOTEBOOKS


def test_jax_version_is_the_pin_of_requirements_txt():
    """The setup cell installs on Colab the jax and jaxlib that CI tests: requirements.txt's pins."""
    assert X == book.pinned_jax_version()
    assert notebook_setup.setup_source().count(X) == 1


def test_setup_cell_installs_from_the_course_repository():
    """The cell's install target is derived from _quarto.yml's repo-url, not typed into it."""
    assert notebook_setup.REPOSITORY == book.repository()
    assert notebook_setup.setup_source().count(notebook_setup.COURSE_REQUIREMENT) == 1
    fork = notebook_setup.setup_source("someone/fork", "dev")
    assert fork.count(notebook_setup.course_requirement("someone/fork", "dev")) == 1
    assert "someone/fork" not in notebook_setup.setup_source()
    assert (
        "import jax" not in notebook_setup.setup_source()
    )  # the sharding chapter configures JAX after this cell


@pytest.fixture
def recorded_runs(monkeypatch):
    calls = []
    monkeypatch.setattr(subprocess, "run", lambda *args, **kwargs: calls.append((args, kwargs)))
    return calls


def test_setup_cell_does_nothing_outside_colab(recorded_runs, monkeypatch, capsys):
    monkeypatch.delitem(sys.modules, "google.colab", raising=False)
    exec(notebook_setup.setup_source(), {})
    assert recorded_runs == []
    assert capsys.readouterr().out == ""


class FakeColab:
    """Colab's installed packages (jax 0.7.2) and a pip that installs what it is asked for.

    `nvidia-smi` runs for real: `set_nvidia_smi` puts a script of that name alone on PATH.
    """

    def __init__(self, bin_dir: Path, packages: dict[str, str]):
        self.bin_dir, self.packages, self.pip_calls = bin_dir, dict(packages), []
        self.pip_upgrades_plugins = True
        self.killed = []

    def set_nvidia_smi(self, body: str) -> None:
        script = self.bin_dir / "nvidia-smi"
        script.write_text(f"#!/bin/sh\n{body}\n")
        script.chmod(0o755)

    def run(self, args, **kwargs):
        if args[0] != sys.executable:
            return REAL_RUN(args, **kwargs)
        assert args[1:3] == ["-m", "pip"] and kwargs.get("check") is True
        self.pip_calls.append(args[3:])
        command, *requirements = [arg for arg in args[3:] if not arg.startswith("-")]
        for requirement in requirements:
            if command == "uninstall":
                del self.packages[requirement]
            elif requirement.startswith(("jaxcourse @ ", "jaxcourse[compare] @ ")):
                self.packages["jaxcourse"] = notebook_setup.COURSE_VERSION
            elif "==" not in requirement:
                continue  # a bound (setuptools<81): Colab's version satisfies it
            else:
                name, version = requirement.split("==")
                if name == "jax[cuda12]":
                    self.packages.update(jax=version, jaxlib=version)
                    if self.pip_upgrades_plugins:
                        self.packages.update(dict.fromkeys(PLUGINS, version))
                else:
                    self.packages[name] = version
        return subprocess.CompletedProcess(args, 0)

    def version(self, name):
        if name in self.packages:
            return self.packages[name]
        if name == "jaxcourse":  # installed in this .venv, not yet on a fresh Colab
            raise metadata.PackageNotFoundError(name)
        return REAL_VERSION(name)

    def kill(self, pid, sig):
        """Colab restarts a kernel whose process ends; here the cell's end is recorded."""
        assert pid == os.getpid()
        self.killed.append(sig)

    def distributions(self):
        return [types.SimpleNamespace(metadata={"Name": name}) for name in self.packages]

    def run_setup_cell(self) -> None:
        exec(notebook_setup.setup_source(), {})


REAL_RUN, REAL_VERSION = subprocess.run, metadata.version
MODULES = ("jax", "jaxlib", "numpy", "scipy", "pandas", "matplotlib", "optax")
PINNED = notebook_setup.pinned_dependencies()


@pytest.fixture
def colab(monkeypatch, tmp_path):
    """A fresh Colab CPU runtime: jax 0.7.2 installed, nothing imported, no nvidia-smi."""
    fake = FakeColab(tmp_path, {"jax": "0.7.2", "jaxlib": "0.7.2"})
    google = types.ModuleType("google")
    google.colab = types.ModuleType("google.colab")
    monkeypatch.setitem(sys.modules, "google", sys.modules.get("google", google))
    monkeypatch.setitem(sys.modules, "google.colab", google.colab)
    for name in MODULES:  # imported in this process, not yet in a fresh kernel
        monkeypatch.delitem(sys.modules, name, raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setattr(os, "kill", fake.kill)
    monkeypatch.setattr("time.sleep", lambda seconds: None)
    monkeypatch.setattr(subprocess, "run", fake.run)
    monkeypatch.setattr(metadata, "version", fake.version)
    monkeypatch.setattr(metadata, "distributions", fake.distributions)
    return fake


def test_setup_cell_on_a_cpu_runtime_installs_jax_and_jaxlib_with_the_course(colab, capsys):
    """One pip command: jax and jaxlib at JAX_VERSION with the course; no plugin, no restart."""
    colab.run_setup_cell()
    install = [
        "install",
        f"jax=={X}",
        f"jaxlib=={X}",
        *PINNED,
        notebook_setup.COURSE_REQUIREMENT,
        "--quiet",
    ]
    assert colab.pip_calls == [install]
    out = capsys.readouterr().out
    assert f"Installed: jax {X}, jaxlib {X}\n" in out
    assert "No restart needed" in out and colab.killed == []
    assert "jax" not in sys.modules  # the cell never imports jax


def test_setup_cell_run_again_installs_nothing(colab, capsys):
    """After the restart the learner runs the cell again: everything is there, so no pip at all."""
    colab.run_setup_cell()
    colab.pip_calls.clear()
    colab.run_setup_cell()
    assert colab.pip_calls == []
    out = capsys.readouterr().out
    ready = f"{notebook_setup.READY}: jax {X} and the course {notebook_setup.COURSE_VERSION}"
    assert f"{ready} are installed." in out


def test_setup_cell_on_a_gpu_runtime_installs_the_plugin_of_jaxlibs_version(colab, capsys):
    """With `nvidia-smi -L` listing a GPU and Colab's plugin 0.7.2, one pip command asks for
    jax[cuda12], and the plugin and its PJRT come out at jaxlib's version."""
    colab.packages.update(dict.fromkeys(PLUGINS, "0.7.2"))
    colab.set_nvidia_smi(FAKE_GPU)
    colab.run_setup_cell()
    assert colab.pip_calls == [
        ["install", f"jax[cuda12]=={X}", *PINNED, notebook_setup.COURSE_REQUIREMENT, "--quiet"]
    ]
    out = capsys.readouterr().out
    assert f"Installed: jax {X}, jaxlib {X}, jax-cuda12-pjrt {X}, jax-cuda12-plugin {X}\n" in out


def test_setup_cell_without_a_gpu_uninstalls_cuda_plugins(colab, capsys):
    """nvidia-smi that fails (no driver) means no GPU: the CUDA plugin is uninstalled first."""
    colab.packages.update(dict.fromkeys(PLUGINS, "0.7.2"))
    colab.set_nvidia_smi(NO_DRIVER)
    colab.run_setup_cell()
    assert colab.pip_calls[0] == ["uninstall", "--yes", *PLUGINS, "--quiet"]
    assert colab.pip_calls[1][:3] == ["install", f"jax=={X}", f"jaxlib=={X}"]
    assert not set(PLUGINS) & set(colab.packages)
    assert f"Installed: jax {X}, jaxlib {X}\n" in capsys.readouterr().out


def test_setup_cell_rejects_a_plugin_that_jaxlib_would_ignore(colab):
    """If the plugin is not at jaxlib's version after the install, the cell raises, not JAX on the CPU."""
    colab.packages.update(dict.fromkeys(PLUGINS, "0.7.2"))
    colab.set_nvidia_smi(FAKE_GPU)
    colab.pip_upgrades_plugins = False  # what a plain `pip install jax` does
    with pytest.raises(
        RuntimeError, match=rf"jaxlib {re.escape(X)} does not load jax-cuda12-pjrt 0\.7\.2"
    ):
        colab.run_setup_cell()


@pytest.mark.parametrize("name, old", [("jax", "0.7.2"), ("numpy", "2.1.3"), ("pandas", "2.2.3")])
def test_setup_cell_restarts_the_session_when_it_replaced_an_imported_module(
    colab, monkeypatch, capsys, name, old
):
    """A module imported before the cell (Colab's kernel imports numpy and pandas at start) keeps
    running its old code: the cell says so in one line and ends the kernel, which Colab restarts."""
    colab.packages[name] = old
    monkeypatch.setitem(sys.modules, name, types.SimpleNamespace(__version__=old))
    colab.run_setup_cell()
    out = capsys.readouterr().out
    (line,) = [line for line in out.splitlines() if line.startswith(notebook_setup.RESTARTING)]
    assert line.startswith(
        f"{notebook_setup.RESTARTING}: this session had loaded {name} {old}, which this cell"
    )
    assert "run the notebook again from the top" in line and notebook_setup.NO_RESTART not in out
    assert colab.killed == [9]


def test_setup_cell_needs_no_restart_when_the_imported_jax_is_current(colab, monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "jax", types.SimpleNamespace(__version__=X))
    colab.packages.update(jax=X, jaxlib=X)
    colab.run_setup_cell()
    out = capsys.readouterr().out
    assert out.splitlines()[-1].startswith(f"{notebook_setup.NO_RESTART}: ")
    assert colab.killed == []


# --- the pages say what the setup cell says ----------------------------------------------------


def tracked_pages() -> list[Path]:
    listed = subprocess.run(
        ["git", "ls-files", "*.md", "*.qmd"], cwd=ROOT, capture_output=True, text=True, check=True
    )
    return [ROOT / name for name in listed.stdout.split()]


def prose(text: str) -> str:
    """A page's text without its code: fenced blocks and inline code spans."""
    text = re.sub(r"^(`{3,}|~{3,}).*?^\1", "", text, flags=re.M | re.S)
    return re.sub(r"`[^`\n]+`", "", text)


def messages_the_code_prints() -> set[str]:
    """The all-caps words the course's code prints to learners: the Colab setup cell's, the
    checkers' verdicts and the set-up check's problem line, each read from the code."""
    from jaxcourse.checks import Verdict
    from tools import learner

    verdicts = {
        str(Verdict("x", passed, "m")).split("]")[0].lstrip("[") for passed in (True, False)
    }
    return {*notebook_setup.MESSAGES, *verdicts, learner.PROBLEM}


# A bolded all-caps phrase (two words, or one of six letters or more: **RESTART NEEDED**,
# **PASSED**), and any all-caps word that starts with RESTART, bold or not.
QUOTED_MESSAGE = re.compile(
    r"\*\*([A-Z]+(?:[ -][A-Z]+)+|[A-Z]{6,})\*\*|\b(RESTART[A-Z]*(?: [A-Z]{2,})*)\b"
)


def test_every_all_caps_message_a_page_quotes_is_one_the_code_prints():
    """The workshop pages once told participants to wait for **RESTART NEEDED**, which the setup
    cell never prints (it prints RESTARTING and restarts the session itself)."""
    known = messages_the_code_prints()
    assert {"RESTARTING", "PASSED", "NOT YET", "SET-UP PROBLEM"} <= known
    quoted = {}
    for page in tracked_pages():
        for match in QUOTED_MESSAGE.finditer(prose(page.read_text())):
            quoted.setdefault(match[1] or match[2], set()).add(page.relative_to(ROOT).as_posix())
    assert "RESTARTING" in quoted or "PASSED" in quoted  # the pattern finds what pages quote
    unknown = {phrase: pages for phrase, pages in quoted.items() if phrase not in known}
    assert unknown == {}, f"pages quote messages the code never prints: {unknown}"


def test_the_quoted_message_pattern_finds_the_old_wrong_message():
    text = "its last line says **RESTART NEEDED**; the cell ends with RESTART NEEDED. `RESTARTX`"
    found = [m[1] or m[2] for m in QUOTED_MESSAGE.finditer(prose(text))]
    assert found == ["RESTART NEEDED", "RESTART NEEDED"]


def test_the_setup_cell_prints_each_message_the_pages_describe():
    source = notebook_setup.setup_source()
    for message in notebook_setup.MESSAGES:
        assert f'"{message}: ' in source or f'f"{message}: ' in source, message
        assert f"**{message}**" in notebook_setup.messages_markdown(), message


@pytest.mark.parametrize("page", ["workshop.qmd", "prepare.qmd"])
def test_the_colab_pages_print_the_messages_from_tools_colab(page):
    """Typed by hand nowhere: a hidden cell prints `messages_markdown()` when the page is built."""
    from tools.blocks import render_asis

    text = (ROOT / page).read_text()
    for message in notebook_setup.MESSAGES:
        assert f"**{message}**" not in prose(text), (page, message)
    assert "colab.messages_markdown()" in text
    assert notebook_setup.messages_markdown() in render_asis(text)


def test_no_chapter_or_page_types_a_setup_cell_message():
    for page in ROOT.glob("**/*.qmd"):
        if "_site" in page.parts or ".venv" in page.parts:
            continue
        text = prose(page.read_text())
        assert notebook_setup.RESTARTING not in text, page
        assert not any(f"**{message}**" in text for message in notebook_setup.MESSAGES), page


# --- each notebook points to its other version ------------------------------------------------

ALL_NOTEBOOKS = sorted((ROOT / "notebooks").rglob("*.ipynb"))


def test_each_notebook_kind_has_a_counterpart_rule():
    pairs = {
        "jit.ipynb": "student/jit.ipynb",
        "blocks/x.ipynb": "blocks/student/x.ipynb",
    }
    for solutions, exercises in pairs.items():
        assert notebook_setup.exercise_notebook(solutions) == exercises
        assert notebook_setup.solution_notebook(exercises) == solutions
        assert notebook_setup.solution_notebook(solutions) == solutions
        to_solutions = notebook_setup.counterpart_markdown(exercises)
        to_exercises = notebook_setup.counterpart_markdown(solutions)
        assert f"`notebooks/{solutions}`" in to_solutions and "/student/" not in to_solutions
        assert f"`notebooks/{exercises}`" in to_exercises
        assert f"`{notebook_setup.WORK_DIR}/{solutions}`" in to_exercises  # the laptop copy


def test_the_work_folder_is_the_learners_one():
    from tools import learner

    assert notebook_setup.WORK_DIR == learner.WORK_DIR


@pytest.mark.parametrize("path", ALL_NOTEBOOKS, ids=lambda p: str(p.relative_to(ROOT)))
def test_each_notebook_links_its_counterpart_in_the_folder_and_on_colab(path):
    """A learner in a solution notebook finds the exercise notebook, and the other way round:
    chapters, their exercise notebooks and the workshop's blocks alike."""
    name = path.relative_to(ROOT / "notebooks").as_posix()
    header = nbformat.read(path, as_version=4).cells[0].source
    if name == notebook_setup.exercise_notebook(name):
        other = notebook_setup.solution_notebook(name)
    else:
        other = notebook_setup.exercise_notebook(name)
    assert other != name and (ROOT / "notebooks" / other).exists(), other
    assert f"`notebooks/{other}`" in header
    links = re.findall(r"\]\((https://colab\.research\.google\.com/github/[^)]+)\)", header)
    assert notebook_setup.notebook_url(other) in links
    for link in links:  # every Colab link of the header opens a notebook of this repository
        below = link.split(f"/blob/{notebook_setup.REF}/notebooks/", 1)[1]
        assert (ROOT / "notebooks" / below).exists(), link


# --- the banner -------------------------------------------------------------------------------


@pytest.fixture
def nvidia_smi(monkeypatch, tmp_path):
    """Puts a `nvidia-smi` with the given shell body alone on PATH."""

    def install(body: str) -> None:
        script = tmp_path / "nvidia-smi"
        script.write_text(f"#!/bin/sh\n{body}\n")
        script.chmod(0o755)

    monkeypatch.setenv("PATH", str(tmp_path))
    return install


@pytest.mark.parametrize(
    "body, listed",
    [
        (FAKE_GPU, True),
        (NO_DRIVER, False),  # Colab's CPU runtime or a machine without an NVIDIA driver
        ('echo "No devices were found"', False),
        (None, False),  # no nvidia-smi at all
    ],
)
def test_gpu_probe_reads_nvidia_smi(nvidia_smi, body, listed):
    if body is not None:
        nvidia_smi(body)
    assert nvidia_gpu_listed() is listed


@pytest.mark.parametrize("backend", ["cpu", "gpu"])
@pytest.mark.parametrize("gpu_listed", [True, False])
def test_banner_warns_only_when_a_gpu_is_present_but_jax_uses_the_cpu(
    monkeypatch, backend, gpu_listed
):
    """The banner names the backend in use, and ends with a warning exactly in the silent-CPU case."""
    monkeypatch.setattr(environment_module, "nvidia_gpu_listed", lambda: gpu_listed)
    monkeypatch.setattr(jax, "default_backend", lambda: backend)
    line = environment_line()
    assert line.startswith(f"Executed with jax {jax.__version__} on ")
    assert f"({backend} backend, {jax.device_count()} device(s))." in line
    assert line.endswith(GPU_UNUSED_WARNING) is (gpu_listed and backend == "cpu")
    if gpu_listed and backend == "cpu":
        assert "a GPU is present but JAX is computing on the CPU" in line and "setup cell" in line


def test_setup_cell_installs_part_two_s_comparison_but_keeps_colabs_torch():
    """Part II's notebooks compare with pyPLNmodels (the `compare` extra). Colab preinstalls
    torch, which satisfies pyPLNmodels, so the cell pins pyPLNmodels and never asks for torch."""
    assert notebook_setup.COURSE_REQUIREMENT.startswith("jaxcourse[compare] @ git+")
    pinned = notebook_setup.pinned_dependencies()
    assert "pyPLNmodels==1.0.10" in pinned
    assert "formulaic==1.2.2" in pinned  # the practice chapter's model formula
    assert not any(pin.lower().startswith("torch") for pin in pinned)
