"""The first two cells of every notebook: an Open-in-Colab badge, and a setup cell that, on Colab
only, installs the course package with the jax and jaxlib that requirements.txt pins.

The repository comes from `_quarto.yml`'s `book.repo-url` and the JAX version from
requirements.txt (`tools.book`); neither is typed here.
"""

from __future__ import annotations

from tools import book
from tools.book import REF

REPOSITORY = book.repository()
"""The course's GitHub repository (owner/name), from `_quarto.yml`'s `book.repo-url`."""

JAX_VERSION = book.pinned_jax_version()
"""The jax and jaxlib version that the Colab setup cell installs: requirements.txt's pin."""


def colab_url(notebook_name: str, repository: str = REPOSITORY, ref: str = REF) -> str:
    """Where Colab opens `notebooks/<notebook_name>` of the repository."""
    return f"https://colab.research.google.com/github/{repository}/blob/{ref}/notebooks/{notebook_name}"


def badge_markdown(notebook_name: str, repository: str = REPOSITORY, ref: str = REF) -> str:
    """The Open-in-Colab badge for one notebook, as Markdown."""
    image = "https://colab.research.google.com/assets/colab-badge.svg"
    return f"[![Open In Colab]({image})]({colab_url(notebook_name, repository, ref)})"


def course_requirement(repository: str = REPOSITORY, ref: str = REF) -> str:
    """What the Colab setup cell asks pip for to install the course package."""
    return f"jaxcourse @ git+https://github.com/{repository}@{ref}"


COURSE_REQUIREMENT = course_requirement()
"""The course package as the setup cell of this repository's notebooks installs it."""

SETUP_CELL = """\
# Setup: on Colab, install the course and a matching JAX; anywhere else this cell does nothing.
import sys

JAX_VERSION = "{jax_version}"
COURSE = "{course}"

if "google.colab" in sys.modules:
    import importlib
    import subprocess
    from importlib.metadata import distributions, version

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

    def pip(*args):
        subprocess.run([sys.executable, "-m", "pip", *args, "--quiet"], check=True)

    def imported_versions():
        # A module this session has imported keeps running its old code until a restart.
        return {{name: getattr(sys.modules[name], "__version__", "?")
                for name in ("jax", "jaxlib", "numpy") if name in sys.modules}}

    def install(gpu):
        # Colab preinstalls an older JAX, and pip would upgrade jax and jaxlib but not the CUDA
        # plugin. So one pip command installs all three at one version (jax[cuda12] brings the
        # plugin) with the course, and any other plugin goes: with no GPU it is of no use.
        if gpu:
            jax = [f"jax[cuda12]=={{JAX_VERSION}}"]
        else:
            jax = [f"jax=={{JAX_VERSION}}", f"jaxlib=={{JAX_VERSION}}"]
        print("Installing", *jax, "and the course for a", "GPU" if gpu else "CPU", "runtime (a minute).")
        unused = [name for name in cuda_plugins() if not (gpu and name.startswith("jax-cuda12-"))]
        if unused:
            pip("uninstall", "--yes", *unused)
        # pip may then list conflicts with preinstalled packages that the course does not use.
        pip("install", *jax, COURSE)
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
    install(gpu_present())
    check_versions()
    outdated = [f"{{name}} {{old}}" for name, old in imported.items() if old != version(name)]
    if outdated:
        print(f"RESTART NEEDED: this session had imported {{', '.join(outdated)}}, which this cell"
              " replaced. Choose Runtime > Restart session, then run the notebook again from the top.")
    else:
        print("No restart needed: nothing this cell upgraded had been imported.")
"""


def setup_source(repository: str = REPOSITORY, ref: str = REF) -> str:
    """The first code cell of every notebook: on Colab, installs the course with a matching JAX.

    Colab preinstalls an older jax and jaxlib, and on a GPU runtime a CUDA plugin of their
    version. The cell installs `JAX_VERSION` in one pip command (with the plugin of the same
    version when `nvidia-smi -L` lists a GPU, and without any plugin otherwise), checks that
    the plugin's version is jaxlib's, prints what is installed, and says whether the session must
    restart. It never imports jax: the sharding chapter configures JAX after it. Elsewhere it
    does nothing.
    """
    return SETUP_CELL.format(
        jax_version=JAX_VERSION, course=course_requirement(repository, ref)
    ).rstrip("\n")
