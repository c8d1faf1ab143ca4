"""What a benchmark ran on: device, library versions, CPU model."""

from __future__ import annotations

import platform
from importlib import metadata

import jax


def _version(package: str) -> str:
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return "not installed"


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as cpuinfo:
            for line in cpuinfo:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def environment() -> dict[str, str]:
    """The device JAX computes on and the versions that matter for timings."""
    device = jax.devices()[0]
    return {
        "backend": jax.default_backend(),
        "device": getattr(device, "device_kind", str(device)),
        "device_count": str(jax.device_count()),
        "cpu": _cpu_model(),
        "jax": jax.__version__,
        "jaxlib": _version("jaxlib"),
        "optax": _version("optax"),
        "python": platform.python_version(),
    }


def environment_line() -> str:
    """One line for a page: 'jax X on DEVICE (backend)'."""
    env = environment()
    return f"Executed with jax {env['jax']} on {env['device']} ({env['backend']}, {env['device_count']} device(s))."
