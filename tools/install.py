"""What `scripts/setup.sh` installs: Part I alone, everything, or everything with the developers'
tools, and where torch comes from.

Runs on the interpreter that builds `.venv` (standard library only), from the repository root:

    python -m tools.install announce MODE       the set-up's first line: what it downloads
    python -m tools.install requirements MODE   the requirements file pip gets for MODE
    python -m tools.install torch-args [--cuda] [--python .venv/bin/python]
                                                pip's arguments for the pinned torch from
                                                PyTorch's CPU wheel index, or nothing
    python -m tools.install check MODE          (in .venv) imports everything the install has
    python -m tools.install wheelhouse DIR [--platform NAME ...] [--python-version 3.13]
                                                (in .venv) downloads every wheel a Part I install
                                                needs into DIR, for an install with no network

MODE is `part1`, `full` or `dev`. A learner's install (`part1` or `full`) is requirements.txt:
the package's dependencies, Jupyter, and what scripts/course.sh runs. Part I needs neither torch
nor pyPLNmodels: the `compare` extra of pyproject.toml lists what only the comparison with
pyPLNmodels needs, the `formula` extra what only model formulas need (formulaic), and
`requirements part1` leaves exactly those names out. `dev` is the full
install plus requirements-dev.txt (tests and lint), what scripts/test.sh sets up. For the
full and dev installs, `torch-args` probes PyTorch's CPU wheel index (`JAXCOURSE_TORCH_INDEX`, default
`CPU_INDEX`, with a timeout of `JAXCOURSE_PROBE_TIMEOUT` seconds): when its `torch/` page lists the
pinned version, pip takes torch from there (a CPU build of a few hundred MB); when it cannot be
reached, pip takes PyPI's build, a CUDA build on Linux, and one line on stderr says why and how
large that download is. `--cuda` asks for PyPI's CUDA build outright. On macOS and Windows PyPI's
wheels are CPU builds already, so there is nothing to probe.

`wheelhouse` makes a wheel folder (for a USB stick, against a venue's network): `pip download` of
the Part I requirements and of the build back-end that `pip install -e .` needs (pyproject.toml's
`build-system`), into DIR, with DIR/requirements-part1.txt beside them. By default the wheels are
this machine's; each `--platform` (one of `PLATFORMS`) downloads another system's wheels instead,
binary wheels only, for `--python-version` (default: this interpreter's). `bash scripts/setup.sh
--part1 --wheelhouse DIR` then installs from the folder with no index (`pip install --no-index
--find-links DIR`).
"""

from __future__ import annotations

import argparse
import html.parser
import os
import platform
import re
import subprocess
import sys
import tomllib
import urllib.error
import urllib.request
from pathlib import Path

from tools import wheelhouse

ROOT = Path(__file__).resolve().parents[1]

CPU_INDEX = "https://download.pytorch.org/whl/cpu"
"""PyTorch's own index of CPU-only wheels (PEP 503), with the same versions as PyPI's."""

PROBE_TIMEOUT_S = 5.0
"""How long `torch-args` waits for the CPU index before it falls back to PyPI."""

# Download sizes for Python 3.13 on Linux x86_64. Part I, measured on 2026-11-28: `pip download -r
# <part1 requirements>` fetched 227 MB of wheels (jax, jaxlib, SciPy, pandas, Matplotlib, Jupyter
# and what scripts/course.sh runs); requirements-dev.txt's tests and lint add 11 MB (ruff, pytest,
# pytest-xdist, nbmake and their dependencies; pytest-rerunfailures, added on 2026-12-06, is a 24 kB
# wheel). Measured on 2026-11-25: the comparison adds pyPLNmodels with its dependencies other than
# torch (scikit-learn, seaborn, sympy, ...: 22 MB) and torch: the 2.13.0+cpu wheel is 192 MB; PyPI's
# Linux wheel is 527 MB and pulls the NVIDIA CUDA libraries (cuBLAS, cuDNN, NCCL, cuSPARSELt, ...)
# and triton, 2.2 GB more (their wheel sizes on PyPI's simple index).
PART1_DOWNLOAD = "about 230 MB"
DEV_DOWNLOAD = "about 11 MB"
COMPARE_DOWNLOAD_CPU = "about 220 MB"
COMPARE_DOWNLOAD_CUDA = "about 2.8 GB"
# What `du -sh .venv` says on a fresh clone after `bash scripts/check-setup.sh --part1` (1018 MB on
# 2026-11-28, without the tests and lint that requirements-dev.txt now holds; 1.1 GB with them),
# and after `bash scripts/setup.sh --full` with PyPI's CUDA build of torch (5.7 GB, 5816 MB, on
# 2026-11-28). README.md states both.
PART1_INSTALLED = "1.0 GB"
FULL_INSTALLED_CUDA = "5.7 GB"

MODES = ("part1", "full", "dev")

DEV_REQUIREMENTS = "requirements-dev.txt"
"""The developers' tools, on top of requirements.txt (which it includes with `-r`)."""

DEV_IMPORTS = {
    "pytest": "pytest",
    "xdist": "pytest-xdist",
    "pytest_rerunfailures": "pytest-rerunfailures",
    "nbmake": "nbmake",
    "ruff": "ruff",
}
"""What `check dev` imports besides the full install (module: distribution): requirements-dev.txt's
packages."""


def installed_mode(root: Path = ROOT) -> str:
    """The install `.venv` holds: "part1", "full" or "dev", as scripts/setup.sh recorded it (a
    `.venv` set up before it recorded anything is a full one)."""
    try:
        mode = (root / ".venv" / "jaxcourse-install").read_text().strip()
    except OSError:
        return "full"
    return mode if mode in MODES else "full"


def canonical(name: str) -> str:
    """A distribution name as pip compares them (PEP 503): lower case, runs of -_. as one -."""
    return re.sub(r"[-_.]+", "-", name).lower()


def requirement_name(line: str) -> str | None:
    """The distribution a requirements.txt line asks for, or None for comments, options, blanks."""
    line = line.split("#", 1)[0].strip()
    if not line or line.startswith("-"):
        return None
    match = re.match(r"[A-Za-z0-9][A-Za-z0-9._-]*", line)
    return canonical(match.group(0)) if match else None


def extra(name: str, root: Path = ROOT) -> set[str]:
    """The distributions of pyproject.toml's optional extra `name`."""
    project = tomllib.loads((root / "pyproject.toml").read_text())["project"]
    return {requirement_name(spec) for spec in project["optional-dependencies"][name]}


def compare_extra(root: Path = ROOT) -> set[str]:
    """The distributions of pyproject.toml's `compare` extra (what only the comparison needs)."""
    return extra("compare", root)


def formula_extra(root: Path = ROOT) -> set[str]:
    """The distributions of pyproject.toml's `formula` extra (formulaic, for model formulas)."""
    return extra("formula", root)


def part1_left_out(root: Path = ROOT) -> set[str]:
    """What `requirements part1` leaves out of requirements.txt: the `compare` and `formula`
    extras' distributions (the few small packages formulaic needs stay pinned in both installs)."""
    return compare_extra(root) | formula_extra(root)


def dev_extra(root: Path = ROOT) -> set[str]:
    """The distributions of pyproject.toml's `dev` extra (the developers' tests and lint)."""
    project = tomllib.loads((root / "pyproject.toml").read_text())["project"]
    return {requirement_name(spec) for spec in project["optional-dependencies"]["dev"]}


def requirements(mode: str, root: Path = ROOT) -> str:
    """The requirements file pip gets for `mode`: requirements-dev.txt (which includes
    requirements.txt) for `dev`; requirements.txt for `full`; for `part1`, requirements.txt
    without the lines that pin a distribution of the `compare` or `formula` extra."""
    if mode not in MODES:
        raise ValueError(f"mode must be one of {MODES}, got {mode!r}.")
    if mode == "dev":
        return (root / DEV_REQUIREMENTS).read_text()
    lines = (root / "requirements.txt").read_text().splitlines(keepends=True)
    if mode == "full":
        return "".join(lines)
    left_out = part1_left_out(root)
    return "".join(line for line in lines if requirement_name(line) not in left_out)


def pinned_names(path: Path) -> set[str]:
    """Every distribution a requirements file pins, following its `-r other.txt` includes."""
    names = set()
    for line in path.read_text().splitlines():
        included = re.match(r"\s*(?:-r|--requirement)\s*(\S+)", line)
        if included:
            names |= pinned_names(path.parent / included.group(1))
        elif (name := requirement_name(line)) is not None:
            names.add(name)
    return names


def pinned_version(name: str, root: Path = ROOT) -> str:
    """The version requirements.txt pins `name` to (`name==VERSION`)."""
    for line in (root / "requirements.txt").read_text().splitlines():
        if requirement_name(line) == canonical(name):
            match = re.search(r"==\s*([^\s;#]+)", line)
            if match:
                return match.group(1)
    raise LookupError(f"requirements.txt pins no version of {name}.")


def announce(mode: str) -> str:
    """The set-up's first line: what this install downloads, roughly."""
    if mode == "part1":
        return (
            f"Set-up, Part I only (no torch, no pyPLNmodels): a first run downloads {PART1_DOWNLOAD}; "
            "later runs only what changed. (`--full` adds the comparison with pyPLNmodels.)"
        )
    if mode == "dev":
        return (
            f"Set-up for developers: the full install (Part I, Part II, pyPLNmodels and torch: "
            f"{PART1_DOWNLOAD} plus {COMPARE_DOWNLOAD_CPU}, {COMPARE_DOWNLOAD_CUDA} with PyPI's "
            f"CUDA build of torch) and the tests and lint of {DEV_REQUIREMENTS} ({DEV_DOWNLOAD}); "
            "later runs only what changed."
        )
    return (
        f"Set-up, full (Part I, Part II and the comparison with pyPLNmodels): a first run downloads "
        f"{PART1_DOWNLOAD} plus {COMPARE_DOWNLOAD_CPU} for pyPLNmodels and a CPU build of torch "
        f"({COMPARE_DOWNLOAD_CUDA} where only PyPI's CUDA build can be had); later runs only what "
        "changed. (`--part1` installs Part I alone.)"
    )


class _Links(html.parser.HTMLParser):
    """The file names that a PEP 503 project page links to."""

    def __init__(self):
        super().__init__()
        self.names: list[str] = []

    def handle_starttag(self, tag, attrs):
        href = dict(attrs).get("href") if tag == "a" else None
        if href:
            self.names.append(href.split("#", 1)[0].rstrip("/").rsplit("/", 1)[-1])


def index_lists(index: str, version: str, timeout: float) -> str | None:
    """None if `index`'s `torch/` page lists a wheel of torch `version`, else why not (one phrase)."""
    url = index.rstrip("/") + "/torch/"
    try:
        with urllib.request.urlopen(url, timeout=timeout) as response:
            page = response.read().decode("utf-8", "replace")
    except urllib.error.HTTPError as error:
        return f"{url} answered HTTP {error.code}"
    except (urllib.error.URLError, OSError, ValueError) as error:
        reason = getattr(error, "reason", None) or error
        return f"{url} cannot be reached ({reason})"
    parser = _Links()
    parser.feed(page)
    wheel = re.compile(rf"torch-{re.escape(version)}(\+[^-]+)?-.*\.whl$")
    if not any(wheel.match(name) for name in parser.names):
        return f"{url} lists no wheel of torch {version}"
    return None


def installed_version(python: str | None, name: str) -> str | None:
    """The version of `name` installed for the interpreter `python`, or None."""
    if not python or not Path(python).exists():
        return None
    code = f"import importlib.metadata as m; print(m.version({name!r}))"
    result = subprocess.run([python, "-c", code], capture_output=True, text=True)
    return result.stdout.strip() if result.returncode == 0 else None


def torch_args(*, cuda: bool = False, python: str | None = None, system: str | None = None):
    """pip's arguments that install the pinned torch from the CPU index, and the line to print.

    Returns:
        `(args, message)`: `args` is empty when pip should take torch from PyPI with the rest of
        requirements.txt (or torch is installed already); `message` is the one line that says
        why PyPI's build is taken and how large it is, or None.
    """
    version = pinned_version("torch")
    have = installed_version(python, "torch")
    if cuda and have == f"{version}+cpu":  # pip would keep the CPU build: it satisfies the pin
        return ["--force-reinstall", f"torch=={version}"], (
            f"torch: replacing the CPU build by PyPI's torch {version}, a CUDA build as asked "
            f"(--cuda): {COMPARE_DOWNLOAD_CUDA} to download, {FULL_INSTALLED_CUDA} installed in all."
        )
    if have is not None and have.split("+", 1)[0] == version:
        return [], None
    system = system or platform.system()
    if cuda and system == "Darwin":
        return (
            [],
            f"torch: there is no CUDA build for macOS; pip takes PyPI's torch {version} (CPU).",
        )
    if cuda:
        return [], (
            f"torch: PyPI's torch {version}, a CUDA build as asked (--cuda): "
            f"{COMPARE_DOWNLOAD_CUDA} to download with the NVIDIA libraries, {FULL_INSTALLED_CUDA} "
            "installed in all."
        )
    if system != "Linux":
        return [], None  # PyPI's macOS and Windows wheels are CPU builds
    index = os.environ.get("JAXCOURSE_TORCH_INDEX") or CPU_INDEX
    timeout = float(os.environ.get("JAXCOURSE_PROBE_TIMEOUT") or PROBE_TIMEOUT_S)
    why_not = index_lists(index, version, timeout)
    if why_not is None:
        return ["--index-url", index, f"torch=={version}"], None
    return [], (
        f"torch: {why_not}, so pip takes PyPI's torch {version}, a CUDA build (it runs on a CPU "
        f"too): {COMPARE_DOWNLOAD_CUDA} to download, {FULL_INSTALLED_CUDA} installed in all."
    )


def check(mode: str) -> str:
    """Imports everything the install has (torch and pyPLNmodels too for a full or dev install,
    or wherever they are installed; the tests and lint for a dev one) and loads oaks; returns one
    line naming the versions."""
    import importlib.metadata
    import importlib.util
    import warnings

    warnings.filterwarnings("ignore", message="pkg_resources is deprecated")  # pyPLNmodels'
    names = ["jax", "jaxlib", "optax", "numpy", "scipy", "pandas", "matplotlib", "jaxcourse"]
    optional = ["torch", "pyPLNmodels", "formulaic"]
    for name in optional:
        try:
            present = importlib.util.find_spec(name) is not None
        except (ImportError, ValueError):  # a finder refused it, or sys.modules holds None
            present = False
        if mode != "part1" or present:
            names.append(name)
    if mode == "dev":
        names.extend(DEV_IMPORTS)
    missing = []
    for name in names:
        try:
            importlib.import_module(name)
        except ImportError as error:
            missing.append(f"{name} ({error})")
    if missing:
        raise SystemExit(
            f"The {mode} install lacks {', '.join(missing)}: run `bash scripts/setup.sh --{mode}`."
        )
    from jaxcourse.pln import load_oaks

    shape = load_oaks().counts.shape
    versions = ", ".join(
        f"{dist} {importlib.metadata.version(dist)}"
        for dist in (DEV_IMPORTS.get(name, name) for name in names)
        if dist != "jaxcourse"
    )
    return (
        f"Set-up check ({mode} install): Python {platform.python_version()}, {versions}; "
        f"oaks loads, {shape[0]} x {shape[1]}."
    )


def build_parser() -> argparse.ArgumentParser:
    """The command line of `python -m tools.install` (the pages' commands are checked with it)."""
    parser = argparse.ArgumentParser(
        prog="python -m tools.install", description=__doc__.split("\n")[0]
    )
    commands = parser.add_subparsers(dest="command", required=True)
    for command in ("announce", "requirements", "check"):
        commands.add_parser(command).add_argument("mode", choices=MODES)
    torch_parser = commands.add_parser("torch-args")
    torch_parser.add_argument("--cuda", action="store_true", help="PyPI's CUDA build of torch")
    torch_parser.add_argument("--python", help="the interpreter whose installed torch counts")
    wheel_parser = commands.add_parser("wheelhouse", help="a Part I install's wheels, into DIR")
    wheel_parser.add_argument("folder", type=Path, metavar="DIR")
    wheel_parser.add_argument(
        "--platform",
        action="append",
        default=[],
        choices=sorted(wheelhouse.PLATFORMS),
        help="another system's wheels (repeat for several); default: this machine's",
    )
    wheel_parser.add_argument(
        "--python-version", help="with --platform: the participants' Python, such as 3.12"
    )
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.command == "wheelhouse":
        try:
            text = requirements(wheelhouse.WHEELHOUSE_MODE)
            print(
                wheelhouse.download(
                    args.folder, args.platform, args.python_version, requirements=text, root=ROOT
                )
            )
        except (ValueError, subprocess.CalledProcessError) as error:
            print(f"No wheel folder: {error}", file=sys.stderr)
            return 1
        return 0
    if args.command == "announce":
        print(announce(args.mode))
    elif args.command == "requirements":
        sys.stdout.write(requirements(args.mode))
    elif args.command == "check":
        print(check(args.mode))
    else:
        pip_args, message = torch_args(cuda=args.cuda, python=args.python)
        if message:
            print(message, file=sys.stderr)
        print(" ".join(pip_args))
    return 0


if __name__ == "__main__":
    sys.exit(main())
