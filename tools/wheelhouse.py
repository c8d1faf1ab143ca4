"""A wheel folder for a venue without a usable network: everything a Part I install needs, downloaded
beforehand into one folder (`python -m tools.install wheelhouse DIR`), for this machine or another
system; `scripts/setup.sh --part1 --wheelhouse DIR` then installs from it with no index.
"""

from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path

WHEELHOUSE_MODE = "part1"
"""What a wheel folder holds: a one-day workshop's install (Part I; torch alone is 200 MB to
2.8 GB more)."""

OLDEST_GLIBC_MINOR = 31
"""A Linux wheel folder is for glibc 2.31 or newer (Ubuntu 20.04 and later); the pinned jaxlib
itself needs 2.27."""


def _manylinux(arch: str) -> tuple[str, ...]:
    """Every manylinux tag a system with glibc 2.OLDEST_GLIBC_MINOR accepts (pip's `--platform`
    does not add the older ones itself, except manylinux2010 and manylinux1 for manylinux2014)."""
    newest_first = range(OLDEST_GLIBC_MINOR, 16, -1)
    return (*(f"manylinux_2_{minor}_{arch}" for minor in newest_first), f"manylinux2014_{arch}")


PLATFORMS = {
    "linux-x86_64": _manylinux("x86_64"),
    "linux-aarch64": _manylinux("aarch64"),
    "macos-arm64": ("macosx_12_0_arm64",),
}
"""The systems the course runs on (scripts/setup.sh), as pip's platform tags for `pip download
--platform`. WSL is linux-x86_64. macOS: wheels for macOS 12 or newer, every Apple Silicon Mac but
those still on macOS 11 (pip adds the older macOS tags and universal2 itself; SciPy's oldest arm64
wheel is for macOS 12)."""


def build_requirements(root: Path) -> list[str]:
    """What pyproject.toml's `build-system` needs to build the course package (`pip install -e .`)."""
    return tomllib.loads((root / "pyproject.toml").read_text())["build-system"]["requires"]


def wheelhouse_commands(
    folder: Path,
    platforms: list[str] = (),
    python_version: str | None = None,
    *,
    root: Path,
) -> list[list[str]]:
    """pip's arguments (after `python -m pip`) that fill `folder` with a Part I install's wheels:
    the requirements (folder/requirements-part1.txt, which `wheelhouse` writes) and the build
    back-end. With `platforms` (names of `PLATFORMS`), each system's binary wheels in turn (one
    `pip download` picks one wheel per package, so each system needs its own)."""
    unknown = sorted(set(platforms) - set(PLATFORMS))
    if unknown:
        raise ValueError(f"unknown platform {unknown}: choose among {sorted(PLATFORMS)}.")
    if python_version and not platforms:
        raise ValueError("--python-version goes with --platform (this machine's Python is used).")
    version = python_version or f"{sys.version_info.major}.{sys.version_info.minor}"
    base = ["download", "--disable-pip-version-check", "--dest", str(folder)]
    targets = [
        [
            *(option for tag in PLATFORMS[name] for option in ("--platform", tag)),
            *("--only-binary=:all:", "--implementation", "cp", "--python-version", version),
        ]
        for name in platforms
    ] or [[]]
    requirements_file = folder / f"requirements-{WHEELHOUSE_MODE}.txt"
    return [
        [*base, *target, *what]
        for target in targets
        for what in (["-r", str(requirements_file)], build_requirements(root))
    ]


def download(
    folder: Path,
    platforms: list[str] = (),
    python_version: str | None = None,
    *,
    requirements: str,
    root: Path,
) -> str:
    """Downloads a Part I install's wheels into `folder` (see `wheelhouse_commands`) with this
    interpreter's pip: `requirements` is the text of its requirements file
    (`install.requirements(WHEELHOUSE_MODE)`). Returns the line that says how to install from it."""
    folder = Path(folder).resolve()
    folder.mkdir(parents=True, exist_ok=True)
    commands = wheelhouse_commands(folder, platforms, python_version, root=root)
    (folder / f"requirements-{WHEELHOUSE_MODE}.txt").write_text(requirements)
    for command in commands:
        subprocess.run([sys.executable, "-m", "pip", *command], check=True)
    wheels = sorted(folder.glob("*.whl"))
    size = sum(wheel.stat().st_size for wheel in wheels) / 1e6
    return (
        f"{len(wheels)} wheels, {size:.0f} MB, in {folder}. Install from it with no network: "
        f"bash scripts/setup.sh --part1 --wheelhouse {folder}"
    )
