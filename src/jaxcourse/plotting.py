"""Figures shared by chapters: ELBO traces and count matrices."""

from __future__ import annotations

from typing import Mapping

import matplotlib.pyplot as plt
import numpy as np

LINESTYLES = ("-", "--", "-.", ":", (0, (5, 1)), (0, (1, 1)), (0, (3, 1, 1, 1)))


def plot_elbo_traces(
    traces: Mapping[str, object],
    *,
    ax=None,
    reference: float | None = None,
    reference_label: str = "reference",
    skip_fraction: float = 0.05,
):
    """Plots ELBO-versus-iteration curves that may coincide; returns the axes.

    Curves are drawn with decreasing widths and different dash styles, so identical traces
    stay visible on top of each other. The ELBO is plotted as it is (it is negative: its log
    would be NaN); the y-range starts after the first `skip_fraction` of iterations so the
    steep start does not hide the end.
    """
    if ax is None:
        _, ax = plt.subplots()
    arrays = {name: np.asarray(trace, dtype=float) for name, trace in traces.items()}
    for index, (name, trace) in enumerate(arrays.items()):
        ax.plot(
            np.arange(1, trace.size + 1),
            trace,
            label=name,
            linestyle=LINESTYLES[index % len(LINESTYLES)],
            linewidth=max(3.5 - 0.6 * index, 1.0),
        )
    tails = [t[int(skip_fraction * t.size):] for t in arrays.values() if t.size]
    if tails:
        low = min(np.nanmin(t) for t in tails)
        high = max(np.nanmax(t) for t in tails)
        if reference is not None:
            high = max(high, reference)
        margin = 0.05 * (high - low or abs(high) or 1.0)
        ax.set_ylim(low - margin, high + margin)
    if reference is not None:
        ax.axhline(reference, color="black", linewidth=0.8, label=reference_label)
    ax.set_xlabel("iteration")
    ax.set_ylabel("ELBO")
    ax.legend()
    return ax


def plot_count_matrix(counts, *, ax=None, title: str | None = None):
    """Shows an `(n_samples, n_species)` count matrix as an image of log(1 + count)."""
    if ax is None:
        _, ax = plt.subplots()
    image = ax.imshow(np.log1p(np.asarray(counts)), aspect="auto", interpolation="nearest", cmap="viridis")
    ax.figure.colorbar(image, ax=ax, label="log(1 + count)")
    ax.set_xlabel("species (column)")
    ax.set_ylabel("sample (row)")
    ax.grid(False)
    if title:
        ax.set_title(title)
    return ax
