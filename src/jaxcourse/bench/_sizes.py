"""The benchmark's data sizes: a tiny simulated set for tests, oaks, and oaks stacked."""

from __future__ import annotations

import jax

from ..optional import require_compare
from ..pln import PLNData, load_oaks, make_data, simulate
from ..pln.constants import BEST_KNOWN_ELBO_OAKS, OAKS100_COPIES

SIZES = {"tiny": None, "oaks": 1, "oaks100": OAKS100_COPIES, "microcosm": None}
"""Benchmark sizes: copies of oaks stacked (`tiny` is a small simulated data set, for tests;
`microcosm` the largest real data set pyPLNmodels ships, `load_microcosm`)."""


def _check_size(size: str) -> None:
    if size not in SIZES:
        raise ValueError(f"size must be one of {sorted(SIZES)}, got {size!r}.")


def load_size(size: str) -> PLNData:
    """The `PLNData` of a benchmark size: `tiny`, `oaks`, `oaks100` or `microcosm`."""
    _check_size(size)
    if size == "microcosm":
        return load_microcosm()
    copies = SIZES[size]
    if copies is None:
        return simulate(40, 6, key=jax.random.key(0)).data
    return load_oaks(copies)


def load_microcosm() -> PLNData:
    """pyPLNmodels' microcosm data in full (921 samples of 1209 taxa, dairy cows' microbiota):
    the counts, offsets log(total count of the sample) and the sampling site, one-hot (4
    columns, no separate intercept)."""
    import numpy as np

    require_compare("the microcosm data (pyPLNmodels ships it)")
    from pyPLNmodels import load_microcosm as _pyplnmodels_load_microcosm

    micro = _pyplnmodels_load_microcosm(n_samples=921, dim=1209)
    counts = np.asarray(micro["endog"], dtype=np.float64)
    offsets = np.repeat(np.log(counts.sum(axis=1, keepdims=True)), counts.shape[1], axis=1)
    return make_data(counts, offsets, np.asarray(micro["site_1hot"], dtype=np.float64))


def best_known_elbo(size: str) -> float | None:
    """The best ELBO known at `size` (exact convention): oaks' times the copies stacked, whose
    optimum is oaks' repeated; None for a simulated size."""
    _check_size(size)
    copies = SIZES[size]
    return None if copies is None else BEST_KNOWN_ELBO_OAKS * copies
