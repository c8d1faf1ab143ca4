"""Helpers shared by the vmap chapter's checkers: shapes, values, and how many vmaps a program uses."""

from __future__ import annotations

import contextlib
import itertools

import numpy as np

from ...checks import (
    close,
    require,
    require_array,
)
from .._jaxpr import traced_program

_fresh_sizes = itertools.count(11)
"""Batch sizes used by no earlier check, so that no cached trace hides how an answer batches."""


def _shape(value) -> tuple | None:
    """The shape of an array answer; None for a tuple, list, dict or anything without one."""
    return tuple(value.shape) if hasattr(value, "shape") and hasattr(value, "dtype") else None


@contextlib.contextmanager
def _batching_depths():
    """Records, for every primitive JAX batches while the block runs, how many `vmap`s it sits
    under (a list of depths, empty when nothing was batched).

    It watches JAX's batching interpreter (internal API, pinned jax version); where that
    interpreter is missing, yields None and the method goes unchecked.
    """
    try:
        from jax._src.interpreters import batching

        batch_trace = batching.BatchTrace
        original = batch_trace.process_primitive
    except (ImportError, AttributeError):
        yield None
        return
    depths: list[int] = []

    def depth(trace) -> int:
        levels = 0
        while trace is not None:
            levels += isinstance(trace, batch_trace)
            trace = getattr(trace, "parent_trace", None)
        return levels

    def recording(self, *args, **kwargs):
        depths.append(depth(self))
        return original(self, *args, **kwargs)

    batch_trace.process_primitive = recording
    try:
        yield depths
    finally:
        batch_trace.process_primitive = original


def _vmap_depth(answer, *args, what: str) -> int | None:
    """How many nested `vmap`s the answer's program uses (0: none), traced afresh."""
    with _batching_depths() as depths:
        traced_program(answer, *args, what=what)
    if depths is None:
        return None
    return max(depths, default=0)


def _require_vmap(answer, args: tuple, levels: int, hint: str, what: str) -> None:
    depth = _vmap_depth(answer, *args, what=what)
    require(depth is None or depth >= levels, hint)


def _require_values(
    result, expected: np.ndarray, what: str, expected_words: str, wrong_values_hint: str
) -> None:
    """One array of the expected shape first (a hint naming what came instead), then its values."""
    result = require_array(result, expected.shape, what=what, expected=expected_words)
    require(close(result, expected, rtol=1e-4, atol=1e-5), wrong_values_hint)
