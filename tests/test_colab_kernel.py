"""The Colab setup cell in a real Jupyter kernel that, as Colab's does, has imported NumPy and pandas
before any cell runs, at Colab's older versions: the cell installs, says in one line that it
restarts the session, and ends the kernel process (Colab then starts a fresh one); run again in
the fresh kernel, it installs nothing and needs no restart.

pip, `nvidia-smi` and the installed packages are faked inside the kernel (a JSON file stands for
site-packages, so that it outlives the kernel); tests/test_colab_runtime.py runs the real install.
"""

from __future__ import annotations

import json
from pathlib import Path

import nbclient
import nbformat
from nbclient.exceptions import DeadKernelError

from tools import colab

COLAB_PREINSTALLED = {"jax": "0.7.2", "jaxlib": "0.7.2", "numpy": "2.1.3", "pandas": "2.2.3"}
"""Colab's versions (tests/fixtures/colab/pip-freeze.txt) of what decides a restart."""

FAKE_COLAB = """\
import json, subprocess, sys, types
import importlib.metadata as metadata
import numpy, pandas  # Colab's kernel imports them at start

STATE = {state!r}
def packages():
    return json.load(open(STATE))

for module in (numpy, pandas):  # what this kernel loaded is the version installed when it started
    module.__version__ = packages()[module.__name__]
sys.modules["google.colab"] = types.ModuleType("google.colab")

def version(name):
    try:
        return packages()[name]
    except KeyError:
        raise metadata.PackageNotFoundError(name) from None

def distributions():
    return [types.SimpleNamespace(metadata={{"Name": name}}) for name in packages()]

def run(args, **kwargs):
    if args[0] == "nvidia-smi":
        raise OSError("no nvidia-smi: a CPU runtime")
    assert args[1:3] == ["-m", "pip"], args
    with open(STATE + ".pip", "a") as log:
        log.write(" ".join(args[3:]) + "\\n")
    installed = packages()
    for requirement in args[4:]:
        if requirement.startswith(("jaxcourse @ ", "jaxcourse[compare] @ ")):
            installed["jaxcourse"] = {course!r}
        elif "==" in requirement:
            name, pinned = requirement.split("==")
            installed[name] = pinned
    json.dump(installed, open(STATE, "w"))
    return subprocess.CompletedProcess(args, 0)

metadata.version, metadata.distributions, subprocess.run = version, distributions, run
"""


def kernel_run(state: Path) -> tuple[str, Exception | None]:
    """A fresh kernel: Colab's start (NumPy and pandas imported), then the setup cell."""
    notebook = nbformat.v4.new_notebook(
        cells=[
            nbformat.v4.new_code_cell(
                FAKE_COLAB.format(state=str(state), course=colab.COURSE_VERSION)
            ),
            colab.setup_cell(),
        ]
    )
    client = nbclient.NotebookClient(notebook, timeout=120, kernel_name="python3")
    error = None
    try:
        client.execute()
    except DeadKernelError as dead:
        error = dead
    outputs = notebook.cells[1].get("outputs", [])
    text = "".join(o.get("text", "") for o in outputs)
    errors = [o for o in outputs if o.get("output_type") == "error"]
    assert not errors, errors
    return text, error


def test_colab_kernel_with_numpy_preloaded_restarts_then_is_ready(tmp_path):
    state = tmp_path / "site-packages.json"
    state.write_text(json.dumps(COLAB_PREINSTALLED))

    first, dead = kernel_run(state)
    lines = first.strip().splitlines()
    assert lines[0].startswith("Installing jax==")
    assert lines[-1].startswith(
        "RESTARTING: this session had loaded numpy 2.1.3, pandas 2.2.3, which this cell has just"
        " replaced, so Colab now restarts the session"
    )
    assert "run the notebook again from the top" in lines[-1]
    assert isinstance(dead, DeadKernelError)  # the kernel process ended: Colab restarts it
    installed = json.loads(state.read_text())
    assert installed["jax"] == installed["jaxlib"] == colab.JAX_VERSION
    assert installed["numpy"] != COLAB_PREINSTALLED["numpy"]

    pip_calls = (tmp_path / "site-packages.json.pip").read_text().splitlines()
    second, dead = kernel_run(state)  # the restarted session, NumPy and pandas imported again
    assert dead is None
    assert second.splitlines() == [
        f"Ready: jax {colab.JAX_VERSION} and the course {colab.COURSE_VERSION} are installed.",
        "No restart needed: nothing this cell upgraded had been imported.",
    ]
    assert (tmp_path / "site-packages.json.pip").read_text().splitlines() == pip_calls
