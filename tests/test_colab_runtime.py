"""Colab's runtime, rebuilt: the notebooks' setup cell turns Colab's old JAX into a matched set.

A Python 3.13 virtual environment gets the versions that Colab preinstalls (the pip freezes in
tests/fixtures/colab/). The setup cell of a generated notebook then runs there, with `google.colab`
faked and the course installed from this checkout instead of GitHub: on a CPU runtime, on a GPU
runtime (a fake `nvidia-smi` lists a GPU), and on a CPU runtime again after the GPU one. Two
notebooks then execute there with nbmake. Colab's versions are downloaded (torch is recorded as
installed without its files, like the GPU runtime's CUDA libraries), so the first run takes minutes;
pip's cache makes later runs faster.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from jaxcourse.environment import GPU_UNUSED_WARNING
from tools import chapter_notebooks
from tools import colab as notebook_setup

pytestmark = [pytest.mark.slow, pytest.mark.network]  # downloads Colab's packages; minutes

ROOT = Path(__file__).resolve().parents[1]
FREEZES = ROOT / "tests" / "fixtures" / "colab"
CPU_FREEZE, GPU_FREEZE = FREEZES / "pip-freeze.txt", FREEZES / "pip-freeze.gpu.txt"
PREINSTALLED = (
    # What decides the setup cell's pip resolution: JAX and its dependencies, the course's
    # dependencies (pyPLNmodels' among them), and what runs notebooks.
    "jax",
    "jaxlib",
    "ml_dtypes",
    "opt_einsum",
    "numpy",
    "scipy",
    "pandas",
    "matplotlib",
    "optax",
    "PyYAML",
    "threadpoolctl",
    "flatbuffers",  # jax.export serialization (the export-precision chapter)
    "setuptools",
    "torch",
    "scikit-learn",
    "seaborn",
    "patsy",
    "tqdm",
    "networkx",
    "jupytext",
    "nbformat",
    "nbclient",
    "ipykernel",
    "pytest",
)
GPU_PREINSTALLED = ("jax-cuda12-plugin", "jax-cuda12-pjrt")
INSTALLED_BY_THE_CELL = ("jaxcourse", "pyPLNmodels")  # not on Colab until the cell runs
# Preinstalled as metadata only, at Colab's version: what the setup cell's pip sees of torch (it
# satisfies pyPLNmodels' requirement, so the cell installs none) is all that matters here, the
# notebooks run below are Part I's and never import it, and PyPI's torch is a CUDA build of
# several GB that took this file four of its seven minutes.
STUBBED = ("torch",)
NOTEBOOKS = ("tracing.ipynb", "pytrees.ipynb")  # two of the quickest
FAKE_GPU = "GPU 0: NVIDIA T4 (UUID: GPU-fake)"
NO_DRIVER = "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver."


def canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def colab_versions(freeze: Path) -> dict[str, str]:
    """`name==version` lines of a Colab pip freeze, by canonical name, without local labels (+cu128)."""
    versions = {}
    for line in freeze.read_text().splitlines():
        match = re.match(r"([A-Za-z0-9._-]+)==([^\s#+]+)", line)
        if match:
            versions[canonical(match[1])] = match[2]
    return versions


def constraints(freeze: Path) -> str:
    """Colab's versions as a pip constraints file, CUDA's runtime libraries left out.

    Colab's CPU runtime has a CPU build of torch, which needs no CUDA library. Where pip finds
    PyPI's torch (a CUDA build) instead, that wheel pins its own nvidia-*-cu13 versions, which
    differ from Colab's, so constraining them would make torch uninstallable.
    """
    cuda = re.compile(r"(nvidia-|cuda-|triton$)")
    return "".join(
        f"{name}=={v}\n" for name, v in colab_versions(freeze).items() if not cuda.match(name)
    )


def python_313() -> str:
    """A Python 3.13, Colab's: this test's own interpreter in CI (scripts/test.sh runs in .venv)."""
    if sys.version_info[:2] == (3, 13):
        return sys.executable
    pyenv = sorted((Path.home() / ".pyenv" / "versions").glob("3.13.*"), reverse=True)
    found = shutil.which("python3.13") or next((str(p / "bin" / "python") for p in pyenv), None)
    if found is None:
        pytest.fail(
            "tests/test_colab_runtime.py needs a Python 3.13 (Colab's): run it from a 3.13 .venv"
        )
    return found


class ColabRuntime:
    """A virtual environment with Colab's preinstalled versions, and the commands to run in it."""

    def __init__(self, root: Path):
        self.root = root
        self.venv = root / "venv"
        self.python = str(self.venv / "bin" / "python")
        self.fake_bin = {True: root / "gpu-bin", False: root / "cpu-bin"}
        self.fake_bin[True].mkdir()
        self.fake_bin[False].mkdir()
        # nvidia-smi as on a GPU runtime, and as on a machine without an NVIDIA driver; either one
        # comes first on PATH, so a real nvidia-smi of the test machine is never consulted.
        self._script(self.fake_bin[True] / "nvidia-smi", f'echo "{FAKE_GPU}"')
        self._script(self.fake_bin[False] / "nvidia-smi", f'echo "{NO_DRIVER}" >&2; exit 9')

    @staticmethod
    def _script(path: Path, body: str) -> None:
        path.write_text(f"#!/bin/sh\n{body}\n")
        path.chmod(0o755)

    def env(self, *, gpu: bool) -> dict[str, str]:
        env = {
            name: value
            for name, value in os.environ.items()
            if not name.startswith("PYTEST_")
            and name not in ("VIRTUAL_ENV", "PYTHONPATH", "PYTHONHOME")
        }
        path = [str(self.fake_bin[gpu]), str(self.venv / "bin"), env.get("PATH", "")]
        env["PATH"] = os.pathsep.join(path)
        # Notebook kernels: the venv's own kernelspec, not one of the test machine's.
        env["JUPYTER_PATH"] = str(self.venv / "share" / "jupyter")
        # pip installs without byte-compiling (its --no-compile), the setup cell's pip included:
        # measured on 2026-12-06, the preinstall took 38.6 CPU-s compiling and 14.8 without, and
        # the tests marked network 181 s and 109 s; the versions pip picks do not depend on it.
        # pip reads PIP_NO_COMPILE as the value of its `compile` setting, so "0" turns compiling
        # off ("1" would turn it on); the fixture checks that it did.
        env["PIP_NO_COMPILE"] = "0"
        return env

    def run(
        self, *args: str, gpu: bool = False, cwd: Path | None = None, returncode: int = 0
    ) -> str:
        env, cwd = self.env(gpu=gpu), cwd or self.root
        done = subprocess.run(args, env=env, cwd=cwd, capture_output=True, text=True)
        output = done.stdout + done.stderr
        assert done.returncode == returncode, f"{' '.join(args)} failed:\n{output[-6000:]}"
        return done.stdout

    def pip(self, *args: str) -> str:
        return self.run(self.python, "-m", "pip", *args, "--quiet", "--disable-pip-version-check")

    def versions(self) -> dict[str, str]:
        code = (
            "import json, importlib.metadata as m\n"
            "print(json.dumps({d.metadata['Name']: d.version for d in m.distributions()}))"
        )
        return {
            canonical(name): v for name, v in json.loads(self.run(self.python, "-c", code)).items()
        }

    def preinstall(self, freeze: Path, names: tuple[str, ...]) -> None:
        """Colab's versions of `names`, as on a fresh runtime: nothing the setup cell installs."""
        pins = self.root / f"constraints-{freeze.stem}.txt"
        pins.write_text(constraints(freeze))
        self.pip(
            "install", "-c", str(pins), "pip"
        )  # Colab's pip, which runs the setup cell's install
        self.pip("install", "-c", str(pins), *(n for n in names if n not in STUBBED))
        for name in STUBBED:
            self.stub_distribution(name, colab_versions(freeze)[canonical(name)])
        installed = self.versions()
        leftovers = [name for name in INSTALLED_BY_THE_CELL if canonical(name) in installed]
        if leftovers:
            self.pip("uninstall", "--yes", *leftovers)
        wanted = colab_versions(freeze)
        public = {
            n: installed[canonical(n)].split("+")[0] for n in names
        }  # torch 2.11.0+cpu is 2.11.0
        assert public == {n: wanted[canonical(n)] for n in names}

    def stub_cuda_libraries(self, freeze: Path) -> list[str]:
        """Records Colab's CUDA libraries (nvidia-*-cu12) as installed, without their files.

        Colab's GPU runtime has them (its torch uses them too), so pip finds there the libraries
        that `jax[cuda12]` needs and downloads none: so it does here. Their files (about 2.5 GB)
        would only slow the test down: without a GPU nothing loads them, and what the setup cell's
        pip does depends only on the versions it sees.
        """
        stubbed = []
        for name, version in colab_versions(freeze).items():
            if re.fullmatch(r"nvidia-[a-z0-9-]+-cu12", name):
                self.stub_distribution(name, version)
                stubbed.append(name)
        return stubbed

    def stub_distribution(self, name: str, version: str) -> None:
        """Records `name` at `version` as installed (its metadata only, no files): pip's choices
        depend only on what it sees installed."""
        (site_packages,) = (self.venv / "lib").glob("python3.*/site-packages")
        info = site_packages / f"{name.replace('-', '_')}-{version}.dist-info"
        info.mkdir(exist_ok=True)
        (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
        (info / "INSTALLER").write_text("test_colab_runtime\n")
        files = ("METADATA", "INSTALLER", "RECORD")
        (info / "RECORD").write_text("".join(f"{info.name}/{file},,\n" for file in files))

    def run_setup_cell(self, source: str, *, gpu: bool, import_jax_first: bool = False) -> str:
        """Runs the cell as Colab's kernel would: `google.colab` imported, jax imported or not.

        With jax imported first, the cell replaces it and ends the process (SIGKILL), as it ends
        Colab's kernel so that Colab restarts it."""
        cell = self.root / "setup_cell.py"
        cell.write_text(source)
        driver = "\n".join(
            [
                "import sys, types",
                "import jax"
                if import_jax_first
                else "",  # before the fake google.colab, which jax would use
                "colab = types.ModuleType('google.colab')",
                "colab.output = types.ModuleType('google.colab.output')",
                "sys.modules.update({'google.colab': colab, 'google.colab.output': colab.output})",
                f"exec(compile(open({str(cell)!r}).read(), 'setup cell', 'exec'), {{'__name__': '__main__'}})",
            ]
        )
        killed = -9 if import_jax_first else 0
        output = self.run(self.python, "-c", driver, gpu=gpu, returncode=killed)
        print(output)
        return output

    def banner(self, *, gpu: bool) -> str:
        code = "from jaxcourse.bench import environment_line; print(environment_line())"
        return self.run(self.python, "-c", code, gpu=gpu).strip().splitlines()[-1]


def course_repository(destination: Path) -> Path:
    """This checkout's package (working tree, uncommitted changes included) as a git repository,
    whose release tag `REF` the setup cell installs from as it does from GitHub."""
    ignore = shutil.ignore_patterns("__pycache__", "*.egg-info")
    destination.mkdir()
    shutil.copytree(ROOT / "src", destination / "src", ignore=ignore)
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, destination / name)
    git = [
        "git",
        "-c",
        "user.name=test",
        "-c",
        "user.email=test@example.com",
        "-c",
        "commit.gpgsign=false",
    ]
    subprocess.run(["git", "init", "--quiet", "-b", "main", str(destination)], check=True)
    subprocess.run([*git, "-C", str(destination), "add", "--all"], check=True)
    subprocess.run(
        [*git, "-C", str(destination), "commit", "--quiet", "-m", "snapshot"], check=True
    )
    subprocess.run([*git, "-C", str(destination), "tag", notebook_setup.REF], check=True)
    return destination


@pytest.fixture(scope="module")
def setup_cell(tmp_path_factory) -> str:
    """The setup cell of a notebook generated in memory, installing the course from this checkout."""
    chapter = ROOT / "chapters" / "tracing.qmd"
    notebook = chapter_notebooks.chapter_to_notebook(chapter.read_text(), "tracing.ipynb")
    source = notebook.cells[1].source
    assert source == notebook_setup.setup_source()
    github = f"https://github.com/{notebook_setup.REPOSITORY}"
    assert source.count(github) == 1 and source.count(notebook_setup.COURSE_REQUIREMENT) == 1
    local = course_repository(tmp_path_factory.mktemp("course") / "course")
    return source.replace(github, local.as_uri())


@pytest.fixture(scope="module")
def colab(tmp_path_factory):
    """A fresh Colab CPU runtime's versions, in a Python 3.13 venv removed afterwards (GBs).

    The tests below share it in file order, each leaving the state the next one starts from
    (the first gets it fresh); a test run alone brings it to its own starting state.
    """
    root = tmp_path_factory.mktemp("colab")
    runtime = ColabRuntime(root)
    subprocess.run([python_313(), "-m", "venv", str(runtime.venv)], check=True)
    runtime.preinstall(CPU_FREEZE, PREINSTALLED)
    (site_packages,) = (runtime.venv / "lib").glob("python3.*/site-packages")
    assert not list((site_packages / "scipy").rglob("*.pyc")), "pip byte-compiled: see env()"
    yield runtime
    shutil.rmtree(runtime.venv, ignore_errors=True)


def jax_versions(installed: dict[str, str]) -> dict[str, str]:
    """The installed jax, jaxlib and CUDA plugins: what the setup cell must keep at one version."""
    return {
        n: v for n, v in installed.items() if n in ("jax", "jaxlib") or n.startswith("jax-cuda")
    }


def test_colab_freezes_have_the_old_jax_the_cell_replaces():
    """The fixtures are Colab's: jax 0.7.2, with its CUDA plugin on the GPU runtime only."""
    cpu, gpu = colab_versions(CPU_FREEZE), colab_versions(GPU_FREEZE)
    assert (
        cpu["jax"] == cpu["jaxlib"] == gpu["jax-cuda12-plugin"] == gpu["jax-cuda12-pjrt"] == "0.7.2"
    )
    assert not any(name.startswith("jax-cuda") for name in cpu)
    assert cpu["jax"] != notebook_setup.JAX_VERSION


def test_cpu_runtime_gets_the_pinned_jax_and_no_cuda_plugin(colab, setup_cell):
    """On Colab's CPU runtime, with Colab's jax already imported: jax == jaxlib == JAX_VERSION,
    no CUDA plugin, and the cell restarts the session; JAX then computes on the CPU, no warning."""
    output = colab.run_setup_cell(setup_cell, gpu=False, import_jax_first=True)
    installed = colab.versions()
    print("CPU runtime:", jax_versions(installed))
    assert jax_versions(installed) == {
        "jax": notebook_setup.JAX_VERSION,
        "jaxlib": notebook_setup.JAX_VERSION,
    }
    assert (
        f"Installed: jax {notebook_setup.JAX_VERSION}, jaxlib {notebook_setup.JAX_VERSION}\n"
        in output
    )
    assert "RESTARTING: this session had loaded jax 0.7.2, jaxlib 0.7.2, numpy 2.1.3" in output
    assert "run the notebook again from the top" in output
    banner = colab.banner(gpu=False)
    print(banner)
    assert banner.startswith(f"Executed with jax {notebook_setup.JAX_VERSION} on cpu (cpu backend")
    assert GPU_UNUSED_WARNING not in banner


def test_notebooks_run_in_colabs_cpu_runtime(colab, setup_cell, tmp_path):
    """After the setup cell, two notebooks run top to bottom with nbmake in the Colab environment."""
    if colab.versions().get("jaxcourse") is None:
        colab.run_setup_cell(setup_cell, gpu=False)
    requirements = (ROOT / "requirements-dev.txt").read_text().splitlines()
    nbmake = next(line for line in requirements if line.startswith("nbmake=="))
    colab.pip("install", nbmake)  # not on Colab: only this test runs notebooks with it
    colab.run(colab.python, "-m", "ipykernel", "install", "--sys-prefix")
    for name in NOTEBOOKS:
        shutil.copy(ROOT / "notebooks" / name, tmp_path / name)
    kernel_check = nbformat.v4.new_notebook(
        cells=[
            nbformat.v4.new_code_cell(
                f"import sys, jax\nassert sys.prefix == {str(colab.venv)!r}, sys.prefix\n"
                f"assert jax.__version__ == {notebook_setup.JAX_VERSION!r}, jax.__version__"
            )
        ]
    )
    kernel_check.metadata = nbformat.read(
        tmp_path / NOTEBOOKS[0], as_version=4
    ).metadata  # same kernel
    nbformat.write(kernel_check, tmp_path / "kernel_check.ipynb")
    output = colab.run(
        colab.python,
        "-m",
        "pytest",
        "--nbmake",
        "--nbmake-timeout=600",
        "-p",
        "no:cacheprovider",
        "-q",
        "kernel_check.ipynb",
        *NOTEBOOKS,
        cwd=tmp_path,
    )
    print(output.strip().splitlines()[-1])
    assert f"{len(NOTEBOOKS) + 1} passed" in output


def test_gpu_runtime_gets_the_cuda_plugin_of_jaxlibs_version(colab, setup_cell):
    """On Colab's GPU runtime (its jax-cuda12-plugin 0.7.2 installed, nvidia-smi lists a GPU), the
    plugin and its PJRT come out at jaxlib's version, JAX_VERSION, with no restart needed."""
    colab.preinstall(GPU_FREEZE, PREINSTALLED + GPU_PREINSTALLED)
    assert colab.stub_cuda_libraries(GPU_FREEZE)
    before = jax_versions(colab.versions())
    assert before["jax-cuda12-plugin"] == before["jax-cuda12-pjrt"] == before["jaxlib"] == "0.7.2"
    output = colab.run_setup_cell(setup_cell, gpu=True)
    installed = jax_versions(colab.versions())
    for name in GPU_PREINSTALLED:
        print(f"{name} {installed[name]} == jaxlib {installed['jaxlib']}")
    assert installed == dict.fromkeys(
        ["jax", "jaxlib", *GPU_PREINSTALLED], notebook_setup.JAX_VERSION
    )
    assert f"jax-cuda12-plugin {notebook_setup.JAX_VERSION}" in output
    assert "No restart needed" in output
    # This machine has no GPU, so JAX falls back to the CPU; the banner must say so loudly.
    banner = colab.banner(gpu=True)
    print(banner)
    assert banner.endswith(GPU_UNUSED_WARNING)


def test_cpu_runtime_removes_a_cuda_plugin(colab, setup_cell):
    """On a runtime without a GPU, the cell uninstalls any CUDA plugin (here the GPU test's)."""
    if "jax-cuda12-plugin" not in colab.versions():
        colab.preinstall(GPU_FREEZE, PREINSTALLED + GPU_PREINSTALLED)
    output = colab.run_setup_cell(setup_cell, gpu=False)
    installed = jax_versions(colab.versions())
    print("CPU runtime after a GPU one:", installed)
    assert installed == {"jax": notebook_setup.JAX_VERSION, "jaxlib": notebook_setup.JAX_VERSION}
    assert "No restart needed" in output
