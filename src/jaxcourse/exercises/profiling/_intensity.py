"""Checker for the profiling chapter's Exercise 1: arithmetic intensity."""

from __future__ import annotations

import math
from collections.abc import Callable

import jax
import jax.numpy as jnp

from ...checks import (
    CheckFailed,
    call_answer,
    describe,
    exercise_checker,
    require,
    require_accepts,
)
from ...roofline import cost, cost_of
from ._common import _scale

HINTS = {
    "check_intensity": (
        "jax.jit(fn).lower(*args).compile().cost_analysis() is a dict with 'flops' and "
        "'bytes accessed'; lowering needs only shapes and dtypes, so do not call fn.",
        "Compile before reading the costs (the lowered program's are counted before "
        "fusion), and divide FLOPs BY bytes, not the other way round; return one float.",
    ),
}


def _elementwise_chain(x):
    return jnp.sum(jnp.sin(x) * 2.0 + jnp.cos(x) ** 2)


def _matmul(a, b):
    return a @ b


_INTENSITY_CASES = [
    # (description, function, arguments)
    ("x * 2 + 1 on 100,000 numbers", _scale, (jax.ShapeDtypeStruct((100_000,), jnp.float32),)),
    (
        "a 128 x 128 matmul",
        _matmul,
        (
            jax.ShapeDtypeStruct((128, 128), jnp.float32),
            jax.ShapeDtypeStruct((128, 128), jnp.float32),
        ),
    ),
    (
        "sum(sin(x) * 2 + cos(x)**2) on 1,000 numbers",
        _elementwise_chain,
        (jax.ShapeDtypeStruct((1_000,), jnp.float32),),
    ),
    (
        "a 64 x 256 by 256 x 32 matmul",
        _matmul,
        (
            jax.ShapeDtypeStruct((64, 256), jnp.float32),
            jax.ShapeDtypeStruct((256, 32), jnp.float32),
        ),
    ),
]


def _as_number(value, what: str) -> float:
    """`value` as a Python float, or a hint saying what it was instead."""
    require(
        not isinstance(value, (str, bytes, tuple, list, dict)) and value is not None,
        f"{what} should be one number (FLOPs per byte), got {describe(value)}.",
    )
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise CheckFailed(
            f"{what} should be one number (FLOPs per byte), got {describe(value)}."
        ) from None
    require(math.isfinite(number), f"{what} should be a finite number, got {number}.")
    return number


def _same(a: float, b: float) -> bool:
    return math.isclose(a, b, rel_tol=1e-6, abs_tol=1e-12)


@exercise_checker("Exercise 1 (arithmetic intensity)")
def check_intensity(intensity: Callable) -> None:
    """Checks `intensity(fn, *args)`: FLOPs / bytes accessed of `jax.jit(fn)` compiled for `args`."""
    require_accepts(intensity, _scale, jnp.ones(3), what="intensity")
    for case, fn, args in _INTENSITY_CASES:
        answer = _as_number(
            call_answer(intensity, fn, *args, what="intensity"), f"intensity(...) on {case}"
        )
        compiled = cost_of(fn, *args)
        lowered = cost(jax.jit(fn).lower(*args))
        if _same(answer, compiled.intensity):
            continue
        require(
            not _same(answer, compiled.flops),
            f"on {case} you returned {answer:g}, the FLOPs: divide them by the bytes accessed.",
        )
        require(
            not _same(answer, compiled.bytes_accessed / compiled.flops),
            f"on {case} you returned bytes per FLOP ({answer:.4g}); the intensity is FLOPs per byte, "
            f"{compiled.intensity:.4g}.",
        )
        require(
            not _same(answer, lowered.intensity),
            f"on {case} you returned {answer:.4g}, the intensity of the lowered program, before XLA fused "
            f"anything; compile it (.lower(*args).compile()) and read the compiled program's cost, "
            f"{compiled.intensity:.4g} FLOPs per byte.",
        )
        require(
            False,
            f"on {case} the compiled program does {compiled.flops:g} FLOPs and accesses "
            f"{compiled.bytes_accessed:g} bytes, an intensity of {compiled.intensity:.4g}; you returned {answer:.4g}.",
        )
