"""What a benchmark or a page ran on: backend, devices, library versions, CPU model."""

from __future__ import annotations

import platform
import subprocess
from importlib import metadata

import jax

from .jit_parity import cpu_model  # the upstream reproducer reports it too, and stands alone


def _version(package: str) -> str:
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return "not installed"


VERSIONED_PACKAGES = ("jax", "jaxlib", "optax", "torch", "pyPLNmodels", "numpy")
"""The packages whose versions a benchmark records."""


def versions() -> dict[str, str]:
    """The installed version of each of `VERSIONED_PACKAGES` ("not installed" if absent)."""
    return {package: _version(package) for package in VERSIONED_PACKAGES}


def nvidia_gpu_listed() -> bool:
    """Whether `nvidia-smi -L` runs and lists a GPU, that is whether the machine has an NVIDIA GPU.

    It says nothing of what JAX uses: with no CUDA plugin of jaxlib's version, JAX computes on
    the CPU although this is True.
    """
    try:
        listing = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return listing.returncode == 0 and "GPU " in listing.stdout


GPU_UNUSED_WARNING = (
    "WARNING: a GPU is present but JAX is computing on the CPU: most often no CUDA plugin of"
    " jaxlib's version is installed (`pip install jax[cuda12]==<jax's version>`). On Colab, re-run"
    " the setup cell (the first code cell), restart (Runtime > Restart session) and run the"
    " notebook from the top."
)
"""The banner's last sentence when `nvidia-smi` lists a GPU and JAX's backend is the CPU."""


def environment() -> dict[str, str]:
    """The backend and devices JAX computes on, and the versions that matter for timings."""
    device = jax.devices()[0]
    return {
        "backend": jax.default_backend(),
        "device": getattr(device, "device_kind", str(device)),
        "device_count": str(jax.device_count()),
        "cpu": cpu_model(),
        "jax": jax.__version__,
        "jaxlib": _version("jaxlib"),
        "optax": _version("optax"),
        "python": platform.python_version(),
    }


def environment_line() -> str:
    """One line for a page: 'jax X on DEVICE (BACKEND backend, N device(s))'.

    It ends with `GPU_UNUSED_WARNING` when an NVIDIA GPU is present but JAX's backend is the CPU.
    """
    env = environment()
    line = (
        f"Executed with jax {env['jax']} on {env['device']}"
        f" ({env['backend']} backend, {env['device_count']} device(s))."
    )
    if env["backend"] == "cpu" and nvidia_gpu_listed():
        line += " " + GPU_UNUSED_WARNING
    return line
