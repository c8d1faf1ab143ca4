"""The roofline model, measured on this machine: a program's FLOPs and bytes from XLA's cost
analysis, the machine's peak float32 matmul rate and memory bandwidth timed with the course's
harness, and how close a measured time comes to the bound they set."""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

import jax
import jax.numpy as jnp

from .config import by_device
from .memory import require_compiled
from .timing import time_call


class Cost(NamedTuple):
    """XLA's estimate of one run of a compiled program (`compiled.cost_analysis()`).

    Attributes:
        flops: floating-point operations (a multiply-add counts two; an n x n matmul 2 n^3).
        transcendentals: exp, log, tanh, ... evaluations, counted apart from `flops`.
        bytes_accessed: bytes the program's operations read and write in memory. Values
            that stay inside one fused loop are not counted; each input and output of a
            fusion is.

    A loop's compiled body is counted once, whatever the trip count: one iteration for a
    rolled loop, `k` for one unrolled by `k` (`unroll=k`).
    """

    flops: float
    transcendentals: float
    bytes_accessed: float

    @property
    def intensity(self) -> float:
        """Arithmetic intensity: FLOPs per byte moved (0 for a program that moves nothing)."""
        return self.flops / self.bytes_accessed if self.bytes_accessed else 0.0


def cost(program) -> Cost:
    """The `Cost` of a compiled (or lowered) program.

    Raises:
        TypeError: `program` is a function that was never compiled, or not a program at all.
    """
    if not isinstance(program, jax.stages.Lowered):
        program = require_compiled(program, "cost")
    analysis = program.cost_analysis()
    if isinstance(analysis, (list, tuple)):  # older jax: one dict per device program
        analysis = analysis[0]
    return Cost(
        flops=float(analysis.get("flops", 0.0)),
        transcendentals=float(analysis.get("transcendentals", 0.0)),
        bytes_accessed=float(analysis.get("bytes accessed", 0.0)),
    )


def cost_of(fn: Callable, *args, **kwargs) -> Cost:
    """The `Cost` of `jax.jit(fn)` compiled for `args` (arrays or `jax.ShapeDtypeStruct`s)."""
    jitted = fn if hasattr(fn, "lower") else jax.jit(fn)
    return cost(jitted.lower(*args, **kwargs).compile())


class Roofline(NamedTuple):
    """A machine's two roofs: the fastest it computes and the fastest it moves memory.

    Attributes:
        peak_flops: FLOPs per second (float32 matmul).
        bandwidth: bytes per second (a large reduction, read from memory).
    """

    peak_flops: float
    bandwidth: float

    @property
    def ridge(self) -> float:
        """The intensity (FLOPs per byte) at which the two roofs meet: below it a program is
        memory-bound, above it compute-bound."""
        return self.peak_flops / self.bandwidth

    def bound(self, intensity: float) -> float:
        """The highest FLOP rate a program of this intensity can attain: the lower roof."""
        return min(self.peak_flops, self.bandwidth * intensity)

    def limited_by(self, program_cost: Cost) -> str:
        """'memory' or 'compute': which roof bounds a program of this cost."""
        return "memory" if program_cost.intensity < self.ridge else "compute"

    def time_bound(self, program_cost: Cost) -> float:
        """The least time, in seconds, a program of this cost can take: its FLOPs at the peak
        rate or its bytes at the bandwidth, whichever takes longer."""
        return max(
            program_cost.flops / self.peak_flops, program_cost.bytes_accessed / self.bandwidth
        )

    def fraction(self, program_cost: Cost, seconds: float) -> float:
        """Attained rate / roofline bound, for a run of `seconds`; equal to
        `time_bound / seconds`. 1 means on the roof; 0.1, ten times slower than it."""
        if seconds <= 0:
            raise ValueError(f"seconds must be positive, got {seconds}.")
        return self.time_bound(program_cost) / seconds


def attained(program_cost: Cost, seconds: float) -> float:
    """The FLOP rate of one run that took `seconds`."""
    if seconds <= 0:
        raise ValueError(f"seconds must be positive, got {seconds}.")
    return program_cost.flops / seconds


class RoofMeasurement(NamedTuple):
    """One roof as measured: the rate, and the kernel's cost and best time behind it."""

    rate: float
    cost: Cost
    seconds: float


def _best_rate(fn, x, amount, repeat) -> RoofMeasurement:
    program_cost = cost_of(fn, *x)
    timing = time_call(fn, *x, repeat=repeat)
    # A roof is what the machine can do: the best of the repeats, not the typical one.
    return RoofMeasurement(amount(program_cost) / timing.min_s, program_cost, timing.min_s)


@jax.jit
def _matmul(a, b):
    # Full float32 products: a GPU's default precision for float32 matmuls is TF32.
    return jnp.matmul(a, b, precision=jax.lax.Precision.HIGHEST)


@jax.jit
def _total(x):
    return jnp.sum(x)


def measure_peak_flops(n: int | None = None, *, repeat: int = 10) -> RoofMeasurement:
    """The float32 matmul rate of this machine: an `n x n` product (2 n^3 FLOPs, from its cost
    analysis) timed by `time_call`, best of `repeat`. `n` is 1024 on a CPU, 8192 on a GPU."""
    n = by_device(cpu=1024, accelerator=8192) if n is None else n
    a = jax.random.normal(jax.random.key(0), (n, n), jnp.float32)
    return _best_rate(_matmul, (a, a), lambda c: c.flops, repeat)


def bandwidth_size() -> int:
    """The float32 vector length at which `measure_bandwidth` measures memory: 2^25 (128 MB,
    more than a CPU's caches hold) on a CPU, 2^28 (1 GB) on a GPU. Place a memory-bound kernel
    at this size to compare it with that roof: a smaller one may run from the caches."""
    return by_device(cpu=2**25, accelerator=2**28)


def measure_bandwidth(n: int | None = None, *, repeat: int = 10) -> RoofMeasurement:
    """The memory bandwidth of this machine: the sum of `n` float32 numbers (its bytes from the
    cost analysis, 4 n) timed by `time_call`, best of `repeat`. `n` is `bandwidth_size()` by
    default. A reduction reads and writes almost nothing else, and allocates no large output."""
    n = bandwidth_size() if n is None else n
    x = jnp.ones((n,), jnp.float32)
    return _best_rate(_total, (x,), lambda c: c.bytes_accessed, repeat)


def measure_roofline(*, matmul_n: int | None = None, reduction_n: int | None = None) -> Roofline:
    """This machine's `Roofline`, both roofs measured now (`measure_peak_flops`,
    `measure_bandwidth`)."""
    return Roofline(measure_peak_flops(matmul_n).rate, measure_bandwidth(reduction_n).rate)


def _loops(jaxpr, depth: int = 0):
    """(depth, equation) for every `while` and `scan` in `jaxpr`, nested ones included."""
    import jax.extend.core as jex

    for eqn in getattr(jaxpr, "jaxpr", jaxpr).eqns:
        if eqn.primitive.name in ("while", "scan"):
            yield depth, eqn
        for value in eqn.params.values():
            for item in value if isinstance(value, (tuple, list)) else (value,):
                if isinstance(item, (jex.ClosedJaxpr, jex.Jaxpr)):
                    yield from _loops(item, depth + 1)


def loop_body_cost(fn: Callable, *args) -> Cost:
    """The `Cost` of one iteration of the outermost `lax.while_loop` or `lax.scan` that
    `fn(*args)` runs: its body, taken out of the traced program and compiled on its own.

    `compiled.cost_analysis()` of the whole program counts a loop's compiled body once (as
    many iterations as it was unrolled by) and adds the work before and after the loop; this
    is the traced body alone, before any unrolling: the cost of one iteration.

    Raises:
        ValueError: `fn` runs no `while_loop` or `scan`.
    """
    return cost(loop_body_program(fn, *args))


def loop_body_program(fn: Callable, *args) -> jax.stages.Compiled:
    """The body of the outermost `lax.while_loop` or `lax.scan` that `fn(*args)` runs, taken
    out of the traced program and compiled on its own (see `loop_body_cost`): one iteration,
    whose compiled text (`jaxcourse.hlo.passes`) lists the loops over memory it runs.

    Raises:
        ValueError: `fn` runs no `while_loop` or `scan`.
    """
    import jax.extend.core as jex

    found = list(_loops(jax.make_jaxpr(fn)(*args)))
    if not found:
        raise ValueError(
            "loop_body_cost found no lax.while_loop or lax.scan in the traced function."
        )
    outermost = min(depth for depth, _ in found)
    depth_loops = [eqn for depth, eqn in found if depth == outermost]
    eqn = max(depth_loops, key=lambda eqn: len(_body(eqn).jaxpr.eqns))
    body = _body(eqn)
    specs = [jax.ShapeDtypeStruct(var.aval.shape, var.aval.dtype) for var in body.jaxpr.invars]
    return jax.jit(jex.jaxpr_as_fun(body)).lower(*specs).compile()


def _body(eqn):
    return eqn.params["body_jaxpr"] if eqn.primitive.name == "while" else eqn.params["jaxpr"]
