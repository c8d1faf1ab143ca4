"""The drawing helpers every diagram shares: colours per index, axes, boxes, arrows and labels."""

from __future__ import annotations

import inspect
from collections.abc import Callable

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.patches import FancyArrowPatch, FancyBboxPatch

MONO = "DejaVu Sans Mono"
SHARED_COLOR = (0.85, 0.85, 0.85, 1.0)  # a shared input, a replicated block


def index_color(index: int) -> tuple[float, ...]:
    """One distinct colour per batch index, leaf or device (tab10, then tab20 beyond 10)."""
    palette = plt.get_cmap("tab10" if index < 10 else "tab20")
    return palette(index % palette.N)


def light(color, amount: float = 0.55) -> tuple[float, ...]:
    """`color` mixed with white, light enough to write black text on."""
    rgb = np.asarray(color[:3])
    return tuple(rgb + (1.0 - rgb) * amount)


def cell_color(index: int) -> tuple[float, ...]:
    """The fill of a cell or block that belongs to batch index, leaf or device `index` (RGBA)."""
    return (*light(index_color(index), 0.35), 1.0)


def new_axes(ax, figsize: tuple[float, float]):
    """`ax` (or new axes of `figsize` when it is None), with its frame and ticks turned off."""
    if ax is None:
        _, ax = plt.subplots(figsize=figsize)
    ax.set_axis_off()
    return ax


def box(ax, center, size, title: str, body: str = "", *, color="white", mono_body: bool = False):
    """A rounded box with a bold title line and an optional body below it."""
    (x, y), (width, height) = center, size
    ax.add_patch(
        FancyBboxPatch(
            (x - width / 2, y - height / 2),
            width,
            height,
            boxstyle="round,pad=0.02,rounding_size=0.08",
            facecolor=color,
            edgecolor="#444444",
            linewidth=1,
        )
    )
    top = y + height / 2 - 0.12
    ax.text(x, top, title, ha="center", va="top", fontsize=9, fontweight="bold")
    if body:
        ax.text(
            x - width / 2 + 0.12 if mono_body else x,
            top - 0.3,
            body,
            ha="left" if mono_body else "center",
            va="top",
            fontsize=7 if mono_body else 8,
            family=MONO if mono_body else None,
            linespacing=1.3,
        )


def arrow(ax, start, end, label: str = "", *, label_offset=(0.0, 0.12), color="#333333"):
    """A straight arrow from `start` to `end`, with an optional italic label above its middle."""
    ax.add_patch(
        FancyArrowPatch(start, end, arrowstyle="-|>", mutation_scale=12, color=color, linewidth=1.2)
    )
    if label:
        middle = (np.asarray(start) + np.asarray(end)) / 2 + np.asarray(label_offset)
        ax.text(*middle, label, ha="center", va="bottom", fontsize=7.5, color=color, style="italic")


def parameter_names(fun: Callable, n_args: int) -> tuple[str, ...] | None:
    """The names of `fun`'s parameters if it has exactly `n_args` of them, else None."""
    try:
        names = tuple(inspect.signature(fun).parameters)
    except (TypeError, ValueError):  # some builtins and C functions have no signature
        return None
    return names if len(names) == n_args else None


def shape_text(shape: tuple[int, ...]) -> str:
    """A shape as Python writes it: (3,), (2, 4), ()."""
    return "(" + ", ".join(map(str, shape)) + ("," if len(shape) == 1 else "") + ")"
