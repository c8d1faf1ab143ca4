"""Problem sizes chosen by device, so every page runs on a CPU laptop and at full size on a GPU."""

from __future__ import annotations

import jax


def on_accelerator() -> bool:
    """True when JAX computes on a GPU or TPU."""
    return jax.default_backend() != "cpu"


def by_device(*, cpu, accelerator):
    """Returns `accelerator` on a GPU/TPU and `cpu` otherwise."""
    return accelerator if on_accelerator() else cpu
