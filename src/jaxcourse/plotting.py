"""Figures shared by chapters: ELBO traces, count matrices, profiler timelines and rooflines."""

from __future__ import annotations

from collections.abc import Mapping

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
    tails = [t[int(skip_fraction * t.size) :] for t in arrays.values() if t.size]
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
    image = ax.imshow(
        np.log1p(np.asarray(counts)), aspect="auto", interpolation="nearest", cmap="viridis"
    )
    ax.figure.colorbar(image, ax=ax, label="log(1 + count)")
    ax.set_xlabel("species (column)")
    ax.set_ylabel("sample (row)")
    ax.grid(False)
    if title:
        ax.set_title(title)
    return ax


TIMELINE_ROWS = ("dispatch", "compile", "run", "thunk")
"""The kinds of trace event `plot_timeline` draws, one row each, top to bottom."""


def plot_timeline(events, *, ax=None, min_gap_us: float = 50.0, title: str | None = None):
    """Draws a profiler trace as a timeline: one row per kind of event (`profiling.KINDS`:
    Python's calls of jitted functions, compilation, the executable's run, XLA:CPU's thunks),
    time in milliseconds, and the idle gaps between thunks longer than `min_gap_us` hatched in
    red on the thunks' row (say so in the figure's caption: the plot has no legend).
    `events` are `profiling.TraceEvent`s (`profiling.read_trace`); returns the axes."""
    from .profiling import KINDS, idle_gaps

    if ax is None:
        _, ax = plt.subplots(figsize=(8, 3))
    colours = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for row, kind in enumerate(TIMELINE_ROWS):
        spans = [
            (event.start_us / 1e3, event.duration_us / 1e3)
            for event in events
            if event.kind == kind
        ]
        ax.broken_barh(spans, (row - 0.35, 0.7), facecolors=colours[row % len(colours)])
    gaps = [
        (start / 1e3, length / 1e3) for start, length in idle_gaps(events, min_gap_us=min_gap_us)
    ]
    thunk_row = TIMELINE_ROWS.index("thunk")
    ax.broken_barh(
        gaps, (thunk_row - 0.5, 1.0), facecolors="none", edgecolors="red", hatch="//", linewidth=0.5
    )
    ax.set_yticks(range(len(TIMELINE_ROWS)), [KINDS[kind] for kind in TIMELINE_ROWS])
    ax.set_ylim(len(TIMELINE_ROWS) - 0.5, -0.5)
    ax.set_xlabel("time since the first event (ms)")
    ax.grid(False, axis="y")
    if title:
        ax.set_title(title)
    return ax


def plot_roofline(roofline, points: Mapping[str, tuple], *, ax=None):
    """Draws a roofline: the attainable FLOP rate against arithmetic intensity (log-log), the
    machine's two roofs (`roofline.Roofline`) meeting at the ridge, and one marker per program.

    Args:
        roofline: the measured `Roofline`.
        points: label -> `(cost, seconds)`: a program's `roofline.Cost` and one run's time.
            Each is drawn at its intensity and attained rate (FLOPs / seconds).

    Returns the axes.
    """
    if ax is None:
        _, ax = plt.subplots()
    intensities = [cost.intensity for cost, _ in points.values() if cost.intensity > 0]
    low = min([roofline.ridge / 100, *intensities]) / 2
    high = max([roofline.ridge * 100, *intensities]) * 2
    grid = np.geomspace(low, high, 200)
    ax.plot(
        grid,
        [roofline.bound(value) for value in grid],
        color="black",
        linewidth=1.5,
        label="roofline",
    )
    ax.axvline(
        roofline.ridge,
        color="grey",
        linestyle=":",
        linewidth=1,
        label=f"ridge, {roofline.ridge:.1f} FLOP/byte",
    )
    markers = "osD^v<>ph*"
    for index, (label, (cost, seconds)) in enumerate(points.items()):
        ax.plot(
            cost.intensity,
            cost.flops / seconds,
            marker=markers[index % len(markers)],
            linestyle="none",
            label=label,
        )
    ax.set(
        xscale="log", yscale="log", xlabel="arithmetic intensity (FLOPs per byte)", ylabel="FLOP/s"
    )
    ax.legend(fontsize="small", loc="center left", bbox_to_anchor=(1.02, 0.5))
    return ax
