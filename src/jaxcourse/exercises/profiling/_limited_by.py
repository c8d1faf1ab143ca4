"""Checker for the profiling chapter's exercise on whether a program is memory- or compute-bound."""

from __future__ import annotations

import itertools
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
from ...roofline import Cost, cost, cost_of
from ._common import _call_compiling, _not_run, _scale


def _square_matmul(a):
    return a @ a


def _add_one(x):
    return x + 1.0


def _outer_sum_of_squares(v):
    return (jnp.outer(v, v) ** 2).sum()


_SQUARE_MATMUL = _not_run(_square_matmul)
_ADD_ONE = _not_run(_add_one)
_OUTER_SUM_OF_SQUARES = _not_run(_outer_sum_of_squares)

_MACHINES = {
    "a laptop CPU (100 GFLOP/s, 20 GB/s)": (100e9, 20e9),
    "a GPU (100 TFLOP/s, 2 TB/s)": (100e12, 2e12),
    "a machine with slow memory (1 TFLOP/s, 1 GB/s)": (1e12, 1e9),
}
"""Ridges of 5, 50 and 1,000 FLOPs per byte: the compiled programs below lie at 0.125 (x + 1, on a
vector and on a matrix), about 190 (a vector's outer product, squared and summed, fused), 16, 64
and 4 FLOPs per byte, so that each machine splits them differently, and neither x's rank nor its
shape tells the bound without fn; the lowered matmuls (before
compilation) at 10.7, 42.7 and 2.7, on the other side of the GPU's ridge for the largest one; and
x + 1 below the laptop's inverse ridge, bandwidth / peak_flops = 0.2, so that an inverted ridge
gives answers of both kinds."""

_ARRAY_MACHINE = "a laptop CPU (100 GFLOP/s, 20 GB/s)"
"""The machine on which the checker asks again with arrays for x."""

_BOUND_CASES = [
    # (description, function, shape of the float32 argument)
    ("x + 1 on 1,000,000 numbers", _ADD_ONE, (1_000_000,)),
    # The 64 x 64 matmul first: an answer that keeps its intensity for the other sizes gets some
    # of them wrong on every machine.
    ("a 64 x 64 matmul", _SQUARE_MATMUL, (64, 64)),
    ("a 256 x 256 matmul", _SQUARE_MATMUL, (256, 256)),
    ("a 16 x 16 matmul", _SQUARE_MATMUL, (16, 16)),
    # x's shape alone does not tell the bound: an elementwise kernel on a matrix of the shape of a
    # matmul above, and a kernel of a vector that does many FLOPs per byte.
    ("x + 1 on a 256 x 256 matrix", _ADD_ONE, (256, 256)),
    ("the sum of squares of a 512-vector's outer product", _OUTER_SUM_OF_SQUARES, (512,)),
]


def _bound(intensity: float, ridge: float) -> str:
    return "memory" if intensity < ridge else "compute"


def _ask(limited_by: Callable, fn, x, peak: float, bandwidth: float) -> str:
    answer = _call_compiling(limited_by, fn, x, peak, bandwidth, what="limited_by")
    require(
        isinstance(answer, str) and answer in ("memory", "compute"),
        f"limited_by should return the string 'memory' or 'compute', got {describe(answer)}"
        + (f" ({answer!r})" if isinstance(answer, (str, bool)) else "")
        + ".",
    )
    return answer


def _predictions(intensities: dict) -> dict:
    """The answers of a limited_by that compares `intensities[case]` with each machine's ridge."""
    return {
        (machine, case): _bound(intensities[case], peak / bandwidth)
        for machine, (peak, bandwidth) in _MACHINES.items()
        for case, _, _ in _BOUND_CASES
    }


@exercise_checker(
    hints=(
        "Compare the program's intensity (FLOPs per byte, as in the arithmetic-intensity "
        "exercise) with the machine's ridge.",
        "The ridge is peak_flops / bandwidth, in FLOPs per byte; below it the program is "
        "'memory'-bound, at or above it 'compute'-bound. Compute the intensity of the "
        "compiled program for this x; the answer depends on the machine, so never a fixed "
        "string.",
    )
)
def check_limited_by(limited_by: Callable) -> None:
    """Checks `limited_by(fn, x, peak_flops, bandwidth)`: 'memory' or 'compute', for x a
    `jax.ShapeDtypeStruct` on every machine and an array on one."""
    require_accepts(limited_by, _scale, jnp.ones(3), 1.0, 1.0, what="limited_by")
    answers = {
        (machine, case): _ask(
            limited_by, fn, jax.ShapeDtypeStruct(shape, jnp.float32), peak, bandwidth
        )
        for machine, (peak, bandwidth) in _MACHINES.items()
        for case, fn, shape in _BOUND_CASES
    }
    costs = {
        case: cost_of(fn, jax.ShapeDtypeStruct(shape, jnp.float32))
        for case, fn, shape in _BOUND_CASES
    }
    expected = _predictions({case: program.intensity for case, program in costs.items()})
    if answers != expected:
        _diagnose(answers, expected, costs)

    peak, bandwidth = _MACHINES[_ARRAY_MACHINE]
    for case, fn, shape in _BOUND_CASES:
        x = jnp.linspace(-1.0, 1.0, math.prod(shape), dtype=jnp.float32).reshape(shape)
        answer = _ask(limited_by, fn, x, peak, bandwidth)
        require(
            answer == expected[_ARRAY_MACHINE, case],
            f"on {_ARRAY_MACHINE}, {case}: with x an array (not a jax.ShapeDtypeStruct) you answered "
            f"{answer!r}, but with a ShapeDtypeStruct of the same shape you answered "
            f"{expected[_ARRAY_MACHINE, case]!r}, which is right. The compiled program, and so the "
            "bound, depends only on x's shape and dtype: compile jax.jit(fn) for x either way.",
        )


def _diagnose(answers: dict, expected: dict, costs: dict[str, Cost]) -> None:
    """Fails with the hint that names what the wrong `answers` did."""
    ridges = {machine: peak / bandwidth for machine, (peak, bandwidth) in _MACHINES.items()}
    wrong = next(key for key in answers if answers[key] != expected[key])

    def example(key) -> str:
        machine, case = key
        return (
            f"on {machine}, {case} does {costs[case].intensity:.3g} FLOPs per byte and the ridge "
            f"is {ridges[machine]:g}, so it is {expected[key]}-bound"
        )

    inverted = {
        (machine, case): _bound(costs[case].intensity, bandwidth / peak)
        for machine, (peak, bandwidth) in _MACHINES.items()
        for case in costs
    }
    require(
        answers != inverted,
        "your answers follow a ridge of bandwidth / peak_flops; the ridge is peak_flops / bandwidth, "
        "in FLOPs per byte like the intensity.",
    )
    if len(set(answers.values())) == 1:
        constant = next(iter(answers.values()))
        raise CheckFailed(
            f"you answered {constant!r} for every program on every machine, yet {example(wrong)}: "
            "compare the compiled program's intensity (FLOPs per byte) with the machine's ridge, "
            "peak_flops / bandwidth."
        )
    require(
        any(answers[key] == expected[key] for key in answers),
        f"every answer is the opposite of the right one: you return 'compute' below the ridge and "
        f"'memory' at or above it ({example(wrong)}). Below the ridge the program moves too many "
        "bytes for its FLOPs: memory-bound.",
    )
    machines = list(_MACHINES)
    _require_answers_depend_on_fn(answers, expected, costs)
    if all(len({answers[machine, case] for machine in machines}) == 1 for case in costs):
        changes = next(
            case for case in costs if len({expected[machine, case] for machine in machines}) > 1
        )
        raise CheckFailed(
            f"your answer for each program is the same on every machine, yet the bound of {changes} "
            "changes with the machine: "
            + "; ".join(
                f"{machine}: ridge {ridges[machine]:g}, {expected[machine, changes]}"
                for machine in machines
            )
            + ". Use the machine's ridge, peak_flops / bandwidth."
        )
    lowered = {
        case: cost(jax.jit(fn).lower(jax.ShapeDtypeStruct(shape, jnp.float32))).intensity
        for case, fn, shape in _BOUND_CASES
    }
    require(
        answers != _predictions(lowered),
        f"your answers follow the intensity of the lowered program, before XLA compiles and fuses "
        f"it ({example(wrong)}; lowered, it counts {lowered[wrong[1]]:.3g}). Compile it, "
        ".lower(x).compile(), and read the compiled program's cost_analysis().",
    )
    first_seen: dict = {}
    for case, fn, _ in _BOUND_CASES:  # the first call with each function, in the checker's order
        first_seen.setdefault(fn, case)
    require(
        answers
        != _predictions({case: costs[first_seen[fn]].intensity for case, fn, _ in _BOUND_CASES}),
        f"your answers for every matmul are those of the first one you were asked about, "
        f"{first_seen[_SQUARE_MATMUL]} ({example(wrong)}): is an intensity kept from one call to the "
        "next, keyed by fn alone? Compile jax.jit(fn) for each call's x.",
    )
    shape_of = {case: shape for case, _, shape in _BOUND_CASES}
    bytes_of_x = {case: costs[case].flops / (4 * math.prod(shape_of[case])) for case in costs}
    require(
        answers != _predictions(bytes_of_x),
        f"your answers follow the FLOPs divided by the bytes of x alone ({example(wrong)}; FLOPs per "
        f"byte of x, {bytes_of_x[wrong[1]]:.3g}): the program also writes its result and may read x "
        "more than once. Read 'bytes accessed' from the compiled program's cost_analysis().",
    )
    machine, case = wrong
    program = costs[case]
    raise CheckFailed(
        f"on {machine}, {case} does {program.flops:g} FLOPs on {program.bytes_accessed:g} bytes "
        f"(intensity {program.intensity:.3g}); the ridge is {ridges[machine]:g} FLOPs per byte, "
        f"so the program is {expected[wrong]}-bound, not {answers[wrong]}-bound."
    )


def _require_answers_depend_on_fn(answers: dict, expected: dict, costs: dict[str, Cost]) -> None:
    """Fails when two programs of one argument shape get the same answers on every machine
    although their bounds differ: the answer read x's shape and never looked at fn."""
    shape_of = {case: shape for case, _, shape in _BOUND_CASES}
    for first, second in itertools.combinations(costs, 2):
        if shape_of[first] != shape_of[second]:
            continue
        same = all(answers[m, first] == answers[m, second] for m in _MACHINES)
        differ = next((m for m in _MACHINES if expected[m, first] != expected[m, second]), None)
        require(
            not (same and differ),
            f"you gave the same answers for {first} and for {second} on every machine, yet on "
            f"{differ} the first is {expected[differ, first]}-bound ({costs[first].intensity:.3g} "
            f"FLOPs per byte) and the second {expected[differ, second]}-bound "
            f"({costs[second].intensity:.3g}): the bound depends on what fn computes, not on x's "
            "shape alone. Compile jax.jit(fn) for x and read its cost_analysis().",
        )
