"""Problem sizes chosen by device, so every page runs on a CPU laptop and at full size on a GPU."""

from __future__ import annotations

from typing import NamedTuple

import jax


def on_accelerator() -> bool:
    """True when JAX computes on a GPU or TPU."""
    return jax.default_backend() != "cpu"


def by_device(*, cpu, accelerator):
    """Returns `accelerator` on a GPU/TPU and `cpu` otherwise."""
    return accelerator if on_accelerator() else cpu


class PLNSizes(NamedTuple):
    """Problem sizes of the PLN chapters.

    Attributes:
        repeat: copies of the oaks data stacked (1: n = 116; 100: n = 11600, the seed's size).
        n_iter: iterations of a full fit (enough to converge at the default learning rate).
        n_iter_eager: iterations run by the slow eager level 0, and in the level-parity figure.
        timing_repeats: timed repetitions of each fit.
    """

    repeat: int
    n_iter: int
    n_iter_eager: int
    timing_repeats: int


def pln_sizes() -> PLNSizes:
    """Small on CPU (each chapter runs in about a minute), the seed's full size on a GPU."""
    return by_device(
        cpu=PLNSizes(repeat=1, n_iter=300, n_iter_eager=40, timing_repeats=3),
        accelerator=PLNSizes(repeat=100, n_iter=1000, n_iter_eager=100, timing_repeats=5),
    )
