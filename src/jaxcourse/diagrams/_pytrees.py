"""Flatten, drawn from `jax.tree.flatten` itself: a container -> leaves + treedef (with aux data)
-> back."""

from __future__ import annotations

import itertools
import textwrap
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import jax
import numpy as np

from ._drawing import MONO, arrow, index_color, light, new_axes


@dataclass(frozen=True)
class TreeNode:
    """One node of a pytree as flatten sees it: a leaf (with its index in the flat list), None
    (a node without leaves), or a container with its aux data and keyed children."""

    kind: str  # "leaf", "none" or "container"
    label: str
    leaf_index: int | None = None
    aux: Any = None
    children: tuple[tuple[str, TreeNode], ...] = ()


@dataclass(frozen=True)
class FlattenLayout:
    """A pytree, its leaves in flattening order, and its treedef."""

    root: TreeNode
    leaves: tuple[str, ...]
    treedef: str


def _leaf_label(leaf) -> str:
    if isinstance(leaf, (jax.Array, np.ndarray)):
        return (
            str(jax.typeof(leaf))
            if isinstance(leaf, jax.Array)
            else f"{leaf.dtype}{list(leaf.shape)}"
        )
    return textwrap.shorten(repr(leaf), 14, placeholder="…")


def _tree_node(tree, leaf_numbers: Iterator[int]) -> TreeNode:
    """Builds the TreeNode of `tree`, numbering its leaves from `leaf_numbers` as it meets them."""
    if tree is None:
        return TreeNode("none", "None")
    treedef = jax.tree.structure(tree)
    if treedef.num_nodes == 1 and treedef.num_leaves == 1:  # type: ignore[attr-defined]  # jaxlib ships no stub for PyTreeDef; ([] is one node too, with no leaf)
        return TreeNode("leaf", _leaf_label(tree), leaf_index=next(leaf_numbers))
    node_type, aux = treedef.node_data()  # type: ignore[attr-defined]  # jaxlib ships no stub for PyTreeDef
    # One level down: every strict subtree of `tree` counts as a leaf, so None children stay.
    children, _ = jax.tree_util.tree_flatten_with_path(tree, is_leaf=lambda node: node is not tree)
    return TreeNode(
        "container",
        node_type.__name__,
        aux=aux,
        children=tuple(
            (jax.tree_util.keystr(path), _tree_node(child, leaf_numbers))
            for path, child in children
        ),
    )


def flatten_layout(tree) -> FlattenLayout:
    """What `jax.tree.flatten(tree)` does, node by node: which leaf lands at which index, the aux
    data each container keeps in the treedef, and the treedef itself."""
    leaves, treedef = jax.tree.flatten(tree)
    root = _tree_node(tree, itertools.count())
    return FlattenLayout(
        root=root, leaves=tuple(_leaf_label(leaf) for leaf in leaves), treedef=str(treedef)
    )


def _place(node: TreeNode, depth: int, next_x: list[float], positions: list) -> float:
    """Lays the tree out: terminals left to right in order, parents centred over their children."""
    if not node.children:
        x = next_x[0]
        next_x[0] += TREE_SPACING
    else:
        xs = [_place(child, depth + 1, next_x, positions) for _, child in node.children]
        x = (xs[0] + xs[-1]) / 2
    positions.append((node, x, depth))
    return x


TREE_SPACING, TREE_DEPTH = 1.55, 1.2


def _aux_text(aux) -> str:
    return "aux: " + textwrap.shorten(repr(aux), 22, placeholder="…")


def _node_style(node: TreeNode) -> tuple[str, tuple | str, str]:
    """The text, fill colour and edge colour of one node of the drawn tree."""
    if node.leaf_index is not None:  # only a leaf has one
        return f"{node.leaf_index}: {node.label}", light(index_color(node.leaf_index)), "#444444"
    if node.kind == "container":
        return node.label if node.children else f"{node.label}\n(empty)", "white", "#444444"
    return "None\n(no leaf)", "white", "#aaaaaa"


def _leaf_box(ax, xy, text: str, color, **style):
    ax.text(
        *xy,
        text,
        va="center",
        fontsize=8,
        family=MONO,
        linespacing=1.1,
        bbox=dict(
            boxstyle="round,pad=0.3", facecolor=color, edgecolor=style.pop("edge", "#444444")
        ),
        **style,
    )


def plot_flatten(layout: FlattenLayout, *, ax=None):
    """Draws `layout` (from `flatten_layout`): the tree with each leaf in its colour and number,
    each container with its aux data; then the flat list of leaves and the treedef, with the
    flatten and unflatten arrows between them. Returns the axes."""
    ax = new_axes(ax, (10, 4.6))
    positions: list = []
    _place(layout.root, 0, [0.0], positions)
    xs = {id(node): x for node, x, _ in positions}
    top = 0.0
    for node, x, depth in positions:
        y = top - depth * TREE_DEPTH
        for key, child in node.children:
            child_x, child_y = xs[id(child)], y - TREE_DEPTH
            ax.plot(
                [x, child_x], [y - 0.22, child_y + 0.22], color="#888888", linewidth=1, zorder=0
            )
            ax.text(
                x + 0.55 * (child_x - x),
                y - 0.55 * TREE_DEPTH,
                key,
                fontsize=7.5,
                family=MONO,
                ha="center",
                va="center",
                backgroundcolor="white",
            )
        text, color, edge = _node_style(node)
        _leaf_box(ax, (x, y), text, color, edge=edge, ha="center")
        if node.aux is not None:
            ax.text(
                x + 0.4,
                y + 0.12,
                _aux_text(node.aux),
                ha="left",
                va="bottom",
                fontsize=7.5,
                color="#555555",
            )
    bottom = top - TREE_DEPTH * max(depth for *_, depth in positions)
    width = max(x for _, x, _ in positions) + 0.9
    right = width + 2.9
    ax.text(
        right,
        top + 0.3,
        "leaves: a list, in flattening order",
        fontsize=9,
        fontweight="bold",
        va="bottom",
    )
    for index, label in enumerate(layout.leaves):
        _leaf_box(
            ax,
            (right, top - 0.45 * index),
            f"{index}: {label}",
            light(index_color(index)),
            ha="left",
        )
    treedef_top = top - 0.45 * len(layout.leaves) - 0.3
    ax.text(
        right,
        treedef_top,
        "treedef: the structure, * for each leaf;\ncontainers keep their aux data",
        fontsize=9,
        fontweight="bold",
        va="top",
    )
    treedef = "\n".join(textwrap.wrap(layout.treedef, 46))
    ax.text(right, treedef_top - 0.7, treedef, fontsize=8, family=MONO, va="top")
    arrow(ax, (width, top - 0.2), (right - 0.25, top - 0.2), "jax.tree.flatten")
    arrow(
        ax,
        (right - 0.25, treedef_top - 0.9),
        (width, treedef_top - 0.9),
        "jax.tree.unflatten(treedef, leaves)",
        label_offset=(0.0, -0.4),
    )
    ax.set_xlim(-0.8, right + 4.8)
    ax.set_ylim(min(bottom, treedef_top - 1.6) - 0.4, top + 0.8)
    return ax
