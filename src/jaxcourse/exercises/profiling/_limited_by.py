"""Checker for the profiling chapter's Exercise 2: memory- or compute-bound?"""

from __future__ import annotations

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
from ...roofline import Cost, cost_of
from ._common import _scale

HINTS = {
    "check_limited_by": (
        "Compare the program's intensity (FLOPs per byte, as in Exercise 1) with the "
        "machine's ridge.",
        "The ridge is peak_flops / bandwidth, in FLOPs per byte; below it the program is "
        "'memory'-bound, at or above it 'compute'-bound. Compute the intensity of the "
        "compiled program for this x; the answer depends on the machine, so never a fixed "
        "string.",
    ),
}


def _square_matmul(a):
    return a @ a


_MACHINES = {
    "a laptop CPU (100 GFLOP/s, 20 GB/s)": (100e9, 20e9),
    "a GPU (50 TFLOP/s, 2 TB/s)": (50e12, 2e12),
    "a machine with slow memory (1 TFLOP/s, 1 GB/s)": (1e12, 1e9),
}

_BOUND_CASES = [
    # (description, function, argument)
    ("x * 2 + 1 on 1,000,000 numbers", _scale, jax.ShapeDtypeStruct((1_000_000,), jnp.float32)),
    ("a 16 x 16 matmul", _square_matmul, jax.ShapeDtypeStruct((16, 16), jnp.float32)),
    ("a 64 x 64 matmul", _square_matmul, jax.ShapeDtypeStruct((64, 64), jnp.float32)),
    ("a 256 x 256 matmul", _square_matmul, jax.ShapeDtypeStruct((256, 256), jnp.float32)),
]


def _expected_bound(program: Cost, peak_flops: float, bandwidth: float) -> str:
    return "memory" if program.intensity < peak_flops / bandwidth else "compute"


@exercise_checker("Exercise 2 (memory- or compute-bound?)")
def check_limited_by(limited_by: Callable) -> None:
    """Checks `limited_by(fn, x, peak_flops, bandwidth)`: 'memory' or 'compute'."""
    require_accepts(limited_by, _scale, jnp.ones(3), 1.0, 1.0, what="limited_by")
    answers = {}
    for machine, (peak, bandwidth) in _MACHINES.items():
        for case, fn, x in _BOUND_CASES:
            answer = call_answer(limited_by, fn, x, peak, bandwidth, what="limited_by")
            require(
                answer in ("memory", "compute"),
                f"limited_by should return the string 'memory' or 'compute', got {describe(answer)}"
                + (f" ({answer!r})" if isinstance(answer, (str, bool)) else "")
                + ".",
            )
            answers[machine, case] = answer
    costs = {case: cost_of(fn, x) for case, fn, x in _BOUND_CASES}
    expected = {
        (machine, case): _expected_bound(costs[case], peak, bandwidth)
        for machine, (peak, bandwidth) in _MACHINES.items()
        for case in costs
    }
    inverted = {
        (machine, case): "memory" if costs[case].intensity < bandwidth / peak else "compute"
        for machine, (peak, bandwidth) in _MACHINES.items()
        for case in costs
    }
    require(
        answers == expected or answers != inverted,
        "your answers follow a ridge of bandwidth / peak_flops; the ridge is peak_flops / bandwidth, "
        "in FLOPs per byte like the intensity.",
    )
    if len(set(answers.values())) == 1:
        raise CheckFailed(
            f"you answered {next(iter(answers.values()))!r} for every program on every machine; compare "
            "the program's intensity (FLOPs per byte) with the machine's ridge, peak_flops / bandwidth."
        )
    for (machine, case), answer in answers.items():
        program = costs[case]
        peak, bandwidth = _MACHINES[machine]
        require(
            answer == expected[machine, case],
            f"on {machine}, {case} does {program.flops:g} FLOPs on {program.bytes_accessed:g} bytes "
            f"(intensity {program.intensity:.3g}); the ridge is {peak / bandwidth:g} FLOPs per byte, "
            f"so the program is {expected[machine, case]}-bound, not {answer}-bound.",
        )
