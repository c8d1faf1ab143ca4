"""Helpers shared by the vmap chapter's checkers: shapes, values, and how many vmaps a program uses."""

from __future__ import annotations

import contextlib
import itertools

import jax.numpy as jnp
import numpy as np

from ...checks import (
    close,
    require,
    require_array,
)
from .._jaxpr import primitive_names, traced_program

_fresh_sizes = itertools.count(11)
"""Batch sizes used by no earlier check, so that no cached trace hides how an answer batches."""


def _shape(value) -> tuple | None:
    """The shape of an array answer; None for a tuple, list, dict or anything without one."""
    return tuple(value.shape) if hasattr(value, "shape") and hasattr(value, "dtype") else None


@contextlib.contextmanager
def _batched_primitives():
    """Records, for every primitive JAX batches while the block runs, how many `vmap`s it sits
    under and the shapes of its operands as the function being mapped sees them (one example's
    shape): a list of `(depth, shapes)`, empty when nothing was batched.

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
    seen: list[tuple[int, tuple]] = []

    def depth(trace) -> int:
        levels = 0
        while trace is not None:
            levels += isinstance(trace, batch_trace)
            trace = getattr(trace, "parent_trace", None)
        return levels

    def recording(self, primitive, tracers, *args, **kwargs):
        shapes = tuple(tuple(operand.aval.shape) for operand in tracers if hasattr(operand, "aval"))
        seen.append((depth(self), shapes))
        return original(self, primitive, tracers, *args, **kwargs)

    batch_trace.process_primitive = recording
    try:
        yield seen
    finally:
        batch_trace.process_primitive = original


def _vmap_depth(answer, *args, what: str) -> int | None:
    """How many nested `vmap`s the answer's program uses (0: none), traced afresh."""
    with _batched_primitives() as seen:
        traced_program(answer, *args, what=what)
    if seen is None:
        return None
    return max((depth for depth, _ in seen), default=0)


def _require_vmap(answer, args: tuple, levels: int, hint: str, what: str) -> None:
    depth = _vmap_depth(answer, *args, what=what)
    require(depth is None or depth >= levels, hint)


def _require_mapped_function_reads(
    answer, args: tuple, levels: int, shape: tuple, hint: str, what: str
) -> None:
    """Fails with `hint` unless an operation under `levels` nested vmaps reads a value of one
    example's `shape` (such as one row of xs): the mapped function itself computes the answer,
    rather than a vmap wrapped round a result computed outside it."""
    with _batched_primitives() as seen:
        traced_program(answer, *args, what=what)
    require(
        seen is None or any(depth >= levels and tuple(shape) in shapes for depth, shapes in seen),
        hint,
    )


def _require_values(
    result, expected: np.ndarray, what: str, expected_words: str, wrong_values_hint: str
) -> None:
    """One array of the expected shape first (a hint naming what came instead), then its values."""
    result = require_array(result, expected.shape, what=what, expected=expected_words)
    require(close(result, expected, rtol=1e-4, atol=1e-5), wrong_values_hint)


def _require_not_like(result, candidates: list[tuple[object, str]], rtol=1e-4, atol=1e-5) -> None:
    """Fails with the hint of the first known wrong answer that `result` equals (a candidate of
    another shape never matches): the hint then names what the answer did."""
    for candidate, hint in candidates:
        candidate = np.asarray(candidate)
        if _shape(result) == candidate.shape and close(
            np.asarray(result, np.float64), candidate, rtol=rtol, atol=atol
        ):
            require(False, hint)


def _require_float32(result, what: str) -> None:
    """Fails when a float result came back in a narrower float type (float16, bfloat16)."""
    dtype = getattr(result, "dtype", None)
    if dtype is None or not jnp.issubdtype(dtype, jnp.floating):
        return
    require(
        jnp.finfo(dtype).bits >= 32,
        f"{what} returned {jnp.dtype(dtype).name}: the values are rounded to {jnp.finfo(dtype).bits} "
        "bits. Keep the float32 that the inputs have (no .astype to a narrower type).",
    )


def _grows_with_batch(answer, make_args, what: str) -> tuple[int, int, int, int] | None:
    """(small, its equation count, large, its equation count) when the answer's program has more
    equations for a larger batch (a Python loop over the examples, unrolled); else None."""
    small, large = next(_fresh_sizes), next(_fresh_sizes) + 5
    counts = [
        len(primitive_names(traced_program(answer, *make_args(n), what=what)))
        for n in (small, large)
    ]
    return (small, counts[0], large, counts[1]) if counts[0] != counts[1] else None
