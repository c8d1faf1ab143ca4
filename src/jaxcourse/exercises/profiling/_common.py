"""A small function shared by the profiling chapter's Exercises 1 and 2."""

from __future__ import annotations


def _scale(x):
    return x * 2.0 + 1.0
