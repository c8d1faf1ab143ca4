"""Tools of the debugging chapter: a jit-versus-float64 parity check, and the lines of a traceback
that belong to your own code rather than to JAX."""

from __future__ import annotations

import os
import traceback
from collections.abc import Callable
from typing import NamedTuple

import jax
import jaxlib
import numpy as np

from .jit_parity import RTOL, is_close

_JAX_FOLDERS = tuple(module.__path__[0] + os.sep for module in (jax, jaxlib))


class Parity(NamedTuple):
    """One scalar computed three ways: jitted and eager on float32 data, and in float64."""

    jit: float
    eager: float
    float64: float
    rtol: float

    @property
    def jit_agrees(self) -> bool:
        """Whether the jitted value is within `rtol * |float64|` of the float64 value."""
        return is_close(self.jit, self.float64, self.rtol)

    @property
    def eager_agrees(self) -> bool:
        """Whether the eager float32 value is within `rtol * |float64|` of the float64 value."""
        return is_close(self.eager, self.float64, self.rtol)


def _scalar(value, what: str) -> float:
    if np.shape(value) != ():
        raise ValueError(f"fn must return a scalar; {what} returned shape {np.shape(value)}.")
    return float(value)


def compare_with_float64(
    fn: Callable, x, *, reference: Callable | None = None, rtol: float = RTOL
) -> Parity:
    """Runs a scalar-valued `fn` on the float32 array `x` under `jax.jit` and eagerly, and
    compares both with a float64 reference.

    Args:
        fn: a JAX function of one array that returns a scalar.
        x: a float32 array (NumPy or JAX), of the size you really run.
        reference: a NumPy function that computes the same value in float64; by default `fn`
            itself, run eagerly on `x` converted to float64 inside `jax.enable_x64(True)`.
        rtol: the tolerance, relative to the float64 value.

    Returns:
        A `Parity` with the three values; `.jit_agrees` and `.eager_agrees` give the verdicts.
    """
    if not callable(fn) or (reference is not None and not callable(reference)):
        raise TypeError("fn and reference must be functions.")
    x = np.asarray(x)
    if x.dtype != np.float32:
        raise TypeError(f"x must be a float32 array (what your code runs on), got {x.dtype}.")
    if not rtol > 0:
        raise ValueError(f"rtol must be positive, got {rtol}.")
    jitted = _scalar(jax.jit(fn)(x), "jax.jit(fn)")
    with jax.disable_jit():
        eager = _scalar(fn(x), "eager fn")
    x64 = x.astype(np.float64)
    if reference is None:
        with jax.enable_x64(True):  # without it, JAX would round x64 back to float32
            exact = _scalar(fn(x64), "fn in float64")
    else:
        exact = _scalar(reference(x64), "reference")
    return Parity(jitted, eager, exact, rtol)


def frames_outside_jax(error: BaseException) -> list[str]:
    """The frames of `error`'s traceback that are not JAX's own code, as 'function: line'.

    With `jax.debug_nans`, the last of them is the line of your code whose operation made a NaN.
    """
    if not isinstance(error, BaseException):
        raise TypeError(f"expected an exception, got {type(error).__name__}.")
    frames = traceback.extract_tb(error.__traceback__)
    return [
        f"{frame.name}: {(frame.line or '').strip()}"
        for frame in frames
        if not frame.filename.startswith(_JAX_FOLDERS)
    ]
