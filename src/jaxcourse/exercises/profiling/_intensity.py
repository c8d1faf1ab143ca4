"""Checker for the profiling chapter's exercise on arithmetic intensity."""

from __future__ import annotations

import math
from collections.abc import Callable

import jax
import jax.numpy as jnp

from ...checks import (
    CheckFailed,
    describe,
    exercise_checker,
    require,
    require_accepts,
)
from ...roofline import cost, cost_of
from ._common import _call_compiling, _not_run, _scale


def _elementwise_chain(x):
    return jnp.sum(jnp.sin(x) * 2.0 + jnp.cos(x) ** 2)


def _matmul(a, b):
    return a @ b


# Each function is passed to every call as one object, as a learner's code would see it.
_SCALE, _MATMUL, _CHAIN = _not_run(_scale), _not_run(_matmul), _not_run(_elementwise_chain)


def _shapes(*shapes):
    return lambda: tuple(jax.ShapeDtypeStruct(shape, jnp.float32) for shape in shapes)


_INTENSITY_CASES = [
    # (description, function, a function making the arguments)
    ("x * 2 + 1 on 100,000 numbers", _SCALE, _shapes((100_000,))),
    ("a 128 x 128 matmul", _MATMUL, _shapes((128, 128), (128, 128))),
    ("sum(sin(x) * 2 + cos(x)**2) on 1,000 numbers", _CHAIN, _shapes((1_000,))),
    ("a 64 x 256 by 256 x 32 matmul", _MATMUL, _shapes((64, 256), (256, 32))),
    (
        "x * 2 + 1 on an array of 10,000 numbers (an array, not a ShapeDtypeStruct)",
        _SCALE,
        lambda: (jnp.linspace(-1.0, 1.0, 10_000),),
    ),
]


def _as_number(value, what: str) -> float:
    """`value` as a Python float, or a hint saying what it was instead."""
    require(
        not (isinstance(value, dict) and "flops" in value),
        f"{what} should be one number (FLOPs per byte), got {describe(value)}, the whole cost "
        "analysis: divide its 'flops' by its 'bytes accessed'.",
    )
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


def _argument_and_result_bytes(fn, args) -> int:
    """The bytes of the arguments and of the result: what a program that kept every intermediate
    in registers would access."""
    result = jax.eval_shape(fn, *args)
    return sum(
        math.prod(leaf.shape) * jnp.dtype(leaf.dtype).itemsize
        for leaf in jax.tree.leaves((args, result))
    )


@exercise_checker(
    hints=(
        "jax.jit(fn).lower(*args).compile().cost_analysis() is a dict with 'flops' and "
        "'bytes accessed'; lowering needs only shapes and dtypes, so do not call fn.",
        "Compile before reading the costs (the lowered program's are counted before "
        "fusion), and divide FLOPs BY bytes, not the other way round; return one float.",
    )
)
def check_intensity(intensity: Callable) -> None:
    """Checks `intensity(fn, *args)`: FLOPs / bytes accessed of `jax.jit(fn)` compiled for `args`,
    which are `jax.ShapeDtypeStruct`s or arrays, without running `fn`."""
    require_accepts(intensity, _scale, jnp.ones(3), what="intensity")
    earlier = []  # (case, function, compiled intensity) of the calls made so far
    for case, fn, make_arguments in _INTENSITY_CASES:
        args = make_arguments()
        answer = _as_number(
            _call_compiling(intensity, fn, *args, what="intensity"), f"intensity(...) on {case}"
        )
        compiled = cost_of(fn, *args)
        earlier.append((case, fn, compiled.intensity))
        if _same(answer, compiled.intensity):
            continue
        lowered = cost(jax.jit(fn).lower(*args))
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
            not _same(answer, math.floor(compiled.intensity)),
            f"on {case} you returned {answer:g}, the intensity {compiled.intensity:.4g} rounded down: "
            "divide with /, not //.",
        )
        moved = _argument_and_result_bytes(fn, args)
        require(
            not _same(answer, compiled.flops / moved),
            f"on {case} you returned {answer:.4g}, the FLOPs divided by the bytes of the arguments and "
            f"the result ({moved:,}); the compiled program accesses {compiled.bytes_accessed:,.0f} bytes "
            "(its operations write and read intermediates too). Read 'bytes accessed' from its "
            "cost_analysis(), not from the shapes.",
        )
        analysis = jax.jit(fn).lower(*args).compile().cost_analysis()
        if isinstance(analysis, (list, tuple)):  # older jax: one dict per device program
            analysis = analysis[0]
        if analysis is None:
            raise ValueError("this backend gives no cost analysis of its compiled programs.")
        every_bytes_entry = sum(
            float(value) for key, value in analysis.items() if key.startswith("bytes accessed")
        )
        require(
            not _same(answer, compiled.flops / every_bytes_entry),
            f"on {case} you returned {answer:.4g}, the FLOPs divided by the sum of every 'bytes "
            f"accessed...' entry of the cost analysis ({every_bytes_entry:,.0f}); the entries with an "
            "operand or 'out' in their key count some of the same bytes again. Divide by the "
            f"'bytes accessed' entry alone, {compiled.bytes_accessed:,.0f}.",
        )
        for earlier_case, earlier_fn, earlier_intensity in earlier[:-1]:
            require(
                not (earlier_fn is fn and _same(answer, earlier_intensity)),
                f"on {case} you returned {answer:.4g}, the intensity of the same function on your "
                f"earlier call, {earlier_case}: is a result kept from one call to the next, keyed by "
                f"fn alone? The shapes change the program; this one's is {compiled.intensity:.4g}. "
                "Compile jax.jit(fn) for each call's arguments.",
            )
        require(
            False,
            f"on {case} the compiled program does {compiled.flops:g} FLOPs and accesses "
            f"{compiled.bytes_accessed:g} bytes, an intensity of {compiled.intensity:.4g}; you returned {answer:.4g}.",
        )
