"""JAX's persistent compilation cache, the course's way: one folder under the user's cache
directory, every compiled program kept, off unless you turn it on."""

from __future__ import annotations

import os
from pathlib import Path

import jax

SETTINGS = {
    "jax_persistent_cache_min_compile_time_secs": 0.0,
    "jax_persistent_cache_min_entry_size_bytes": -1,
}
"""What `enable` sets besides the folder. JAX's defaults keep only programs that took at least
a second to compile; the course's fits compile in about a second each, and their small
helpers in milliseconds, so the course keeps every program, whatever its compile time or size."""


def default_directory() -> Path:
    """`$XDG_CACHE_HOME/jaxcourse/jax-compilation-cache`, or `~/.cache/jaxcourse/...` when
    `XDG_CACHE_HOME` is not set: the usual place for caches on Linux, and a plain folder in
    your home directory on macOS and Windows."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "jaxcourse" / "jax-compilation-cache"


def enable(directory=None) -> Path:
    """Turns on JAX's persistent compilation cache for this process, in `directory`.

    Call it at the start of a script or notebook, before the first jitted call: JAX then
    writes every program it compiles to the folder, and a later process that compiles the
    same program for the same shapes, devices and versions reads it back instead of
    compiling. The cache stays off unless this is called (the course's tests call it in their
    own processes, with a temporary folder: tests/conftest.py).

    Args:
        directory: the folder; `default_directory()` when None. It is created if missing.

    Returns:
        The folder, as a `Path`.
    """
    directory = default_directory() if directory is None else Path(directory).expanduser()
    directory.mkdir(parents=True, exist_ok=True)
    jax.config.update("jax_compilation_cache_dir", str(directory))
    for name, value in SETTINGS.items():
        jax.config.update(name, value)
    return directory


def environment(directory) -> dict[str, str]:
    """The environment variables that turn the cache on in `directory` for a new process (the
    same settings as `enable`; JAX reads `JAX_...` variables when it starts)."""
    variables = {"JAX_COMPILATION_CACHE_DIR": str(directory)}
    variables.update({name.upper(): str(value) for name, value in SETTINGS.items()})
    return variables


def is_enabled() -> bool:
    """True when this process has a persistent cache folder set."""
    return jax.config.jax_compilation_cache_dir is not None


def entries(directory) -> list[Path]:
    """The compiled programs stored in a cache folder (one file each), sorted by name."""
    directory = Path(directory)
    if not directory.is_dir():
        return []
    return sorted(
        path for path in directory.iterdir() if path.is_file() and path.name.endswith("-cache")
    )
