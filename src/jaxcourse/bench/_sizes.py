"""The benchmark's data sizes: a tiny simulated set for tests, oaks, and oaks stacked."""

from __future__ import annotations

import jax

from ..pln import PLNData, load_oaks, simulate
from ..pln.constants import BEST_KNOWN_ELBO_OAKS, OAKS100_COPIES

SIZES = {"tiny": None, "oaks": 1, "oaks100": OAKS100_COPIES}
"""Benchmark sizes: copies of oaks stacked (`tiny` is a small simulated data set, for tests)."""


def _check_size(size: str) -> None:
    if size not in SIZES:
        raise ValueError(f"size must be one of {sorted(SIZES)}, got {size!r}.")


def load_size(size: str) -> PLNData:
    """The `PLNData` of a benchmark size: `tiny`, `oaks` or `oaks100`."""
    _check_size(size)
    if SIZES[size] is None:
        return simulate(40, 6, key=jax.random.key(0)).data
    return load_oaks(SIZES[size])


def best_known_elbo(size: str) -> float | None:
    """The best ELBO known at `size` (exact convention): oaks' times the copies stacked, whose
    optimum is oaks' repeated; None for a simulated size."""
    _check_size(size)
    copies = SIZES[size]
    return None if copies is None else BEST_KNOWN_ELBO_OAKS * copies
