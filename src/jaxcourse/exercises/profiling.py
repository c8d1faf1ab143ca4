"""Checkers for the exercises of the chapter 'Where the time goes: profiles, rooflines and memory'."""

from __future__ import annotations

import functools
import math
import operator
from collections.abc import Callable

import jax
import jax.numpy as jnp
import numpy as np

from ..checks import (
    CheckFailed,
    call_answer,
    close,
    describe,
    exercise_checker,
    require,
    require_accepts,
    require_array,
)
from ..memory import memory_figures
from ..profiling import TraceEvent, capture, of_kind, read_trace
from ..roofline import Cost, cost, cost_of
from ._jaxpr import primitive_names, traced_program

# Exercise 1 ------------------------------------------------------------------------------------


def _elementwise_chain(x):
    return jnp.sum(jnp.sin(x) * 2.0 + jnp.cos(x) ** 2)


def _scale(x):
    return x * 2.0 + 1.0


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


# Exercise 2 ------------------------------------------------------------------------------------


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


# Exercise 3 ------------------------------------------------------------------------------------


def wide_body(x, w):
    """One step of the exercise's scan: an (n, m) intermediate from an n-vector and an m-vector."""
    hidden = jnp.tanh(x[:, None] * w[None, :])
    return x + 0.1 * hidden.mean(axis=1), None


def scan_loss(x0, ws):
    """The exercise's loss: `len(ws)` steps of `wide_body`, then a sum of squares."""
    x, _ = jax.lax.scan(wide_body, x0, ws)
    return jnp.sum(x**2)


_MEMORY_SIZE = (256, 128, 100)
"""(n, m, steps) of the scan whose compiled memory the checker measures."""

_EAGER_SIZE = (32, 16, 12)
"""A small scan, on which the checker also calls the answer eagerly."""

_CHECKPOINT_PRIMITIVES = {"remat2", "checkpoint", "remat"}


def _scan_inputs(n: int, m: int, steps: int):
    return jnp.linspace(-1.0, 1.0, n), jnp.linspace(0.0, 1.0, steps * m).reshape(steps, m)


@functools.cache
def _plain_gradient(n: int, m: int, steps: int):
    """Plain `jax.grad` of `scan_loss` at one size: its compiled program and its value (compiled
    once per session; every answer is compared with it)."""
    compiled = jax.jit(jax.grad(scan_loss, argnums=1)).lower(*_scan_inputs(n, m, steps)).compile()
    return compiled, compiled(*_scan_inputs(n, m, steps))


def _require_scan_gradient(result, expected, case: str) -> None:
    result = require_array(
        result,
        expected.shape,
        what=f"low_memory_grad on {case}",
        expected="d scan_loss / d ws, one entry per entry of ws",
    )
    require(
        close(result, expected, rtol=1e-4, atol=1e-6),
        f"on {case}, your gradient differs from jax.grad(scan_loss, argnums=1) by up to "
        f"{float(np.max(np.abs(result - np.asarray(expected)))):.3g}: the gradient must not change "
        "(jax.checkpoint recomputes, it does not approximate).",
    )


@exercise_checker("Exercise 3 (a scan's gradient in less memory)")
def check_low_memory_grad(low_memory_grad: Callable) -> None:
    """Checks `low_memory_grad(x0, ws)`: the gradient of `scan_loss` in `ws`, whose compiled program
    needs at most a quarter of the temporary memory of plain `jax.grad`, via `jax.checkpoint`."""
    require_accepts(low_memory_grad, *_scan_inputs(*_EAGER_SIZE), what="low_memory_grad")
    x0, ws = _scan_inputs(*_EAGER_SIZE)
    eager = call_answer(low_memory_grad, x0, ws, what="low_memory_grad")
    _require_scan_gradient(
        eager,
        _plain_gradient(*_EAGER_SIZE)[1],
        f"a small scan ({_EAGER_SIZE[2]} steps), called eagerly",
    )

    n, m, steps = _MEMORY_SIZE
    case = f"x0 of {n} numbers and ws of shape ({steps}, {m}), under jax.jit"
    x0, ws = _scan_inputs(n, m, steps)
    plain, expected = _plain_gradient(n, m, steps)
    yours = call_answer(
        lambda *a: jax.jit(low_memory_grad).lower(*a).compile(),
        x0,
        ws,
        what="low_memory_grad under jax.jit",
    )
    _require_scan_gradient(
        call_answer(yours, x0, ws, what="low_memory_grad under jax.jit"), expected, case
    )
    plain_temp = memory_figures(plain).temp_bytes
    your_temp = memory_figures(yours).temp_bytes
    primitives = set(
        primitive_names(traced_program(low_memory_grad, x0, ws, what="low_memory_grad"))
    )
    uses_checkpoint = bool(primitives & _CHECKPOINT_PRIMITIVES)
    if your_temp > plain_temp / 4:
        require(
            uses_checkpoint,
            f"on {case} your program's temporaries take {your_temp:,} bytes, plain jax.grad's {plain_temp:,}: "
            "the gradient keeps every step's (n, m) intermediate. Wrap the scan's body in jax.checkpoint, "
            "so that the backward pass recomputes it.",
        )
        raise CheckFailed(
            f"on {case} your program's temporaries take {your_temp:,} bytes, more than a quarter of plain "
            f"jax.grad's {plain_temp:,}. Is jax.checkpoint around the whole loss (the recomputed scan then "
            "stores its intermediates as before), or is its policy saving them (everything_saveable)? "
            "Checkpoint the scan's body, with jax.checkpoint_policies.nothing_saveable."
        )
    require(
        uses_checkpoint,
        "your program needs little memory, but it does not use jax.checkpoint, the method this exercise asks for.",
    )


# Exercise 4 ------------------------------------------------------------------------------------


def _event(name, start, duration, *, kind="thunk", thread="tf_XLAEigen/1"):
    return TraceEvent(
        name, kind, thread, float(start), float(duration), "jit_f" if kind == "thunk" else ""
    )


_OPERATION_CASES = [
    # (description, events, expected name)
    (
        "a loop thunk 'while.1' holding the others",
        [
            _event("while.1", 0, 100),
            _event("dot.3", 10, 30),
            _event("fusion.2", 45, 10),
            _event("dot.3", 60, 30),
        ],
        "dot.3",
    ),
    (
        "one long 'dot.1' and four shorter 'exp_fusion' thunks",
        [
            _event("dot.1", 0, 50),
            *[_event("exp_fusion", 60 + 25 * i, 20) for i in range(4)],
        ],
        "exp_fusion",
    ),
    (
        "a trace with a long Python call and a long executable run around the thunks",
        [
            _event("PjitFunction(fit)", 0, 1_000, kind="dispatch", thread="python"),
            _event(
                "CommonPjRtLoadedExecutable::ExecuteHelperOnSingleDevice",
                5,
                990,
                kind="run",
                thread="python",
            ),
            _event("cholesky.2", 20, 40),
            _event("ynn_fusion", 70, 30),
        ],
        "cholesky.2",
    ),
    (
        "two threads: 'ynn_fusion.4' runs on another thread while 'dot.2' runs",
        [
            _event("dot.2", 0, 100, thread="tf_XLAEigen/1"),
            _event("ynn_fusion.4", 10, 20, thread="tf_XLAEigen/2"),
            _event("ynn_fusion.4", 40, 20, thread="tf_XLAEigen/2"),
        ],
        "dot.2",
    ),
]


def _contains(outer: TraceEvent, inner: TraceEvent) -> bool:
    return (
        outer is not inner
        and outer.thread == inner.thread
        and outer.start_us <= inner.start_us
        and inner.end_us <= outer.end_us
    )


def _leaf_time_by_name(events) -> dict[str, float]:
    thunks = of_kind(events, "thunk")
    totals: dict[str, float] = {}
    for event in thunks:
        if not any(_contains(event, other) for other in thunks):
            totals[event.name] = totals.get(event.name, 0.0) + event.duration_us
    return totals


def _real_trace_events() -> list[TraceEvent]:
    """A trace of a small jitted loop of matrix products and exponentials, captured now."""

    @jax.jit
    def loop(a):
        def body(_, x):
            return jnp.exp(-((x @ a) ** 2))

        return jax.lax.fori_loop(0, 5, body, a)

    a = jnp.eye(256) * 0.5
    jax.block_until_ready(loop(a))
    return read_trace(capture(loop, a))


def _ask_operation(most_expensive_op: Callable, events, case: str):
    answer = call_answer(most_expensive_op, list(events), what="most_expensive_op")
    require(
        answer is None or isinstance(answer, str),
        f"on {case}, most_expensive_op should return the operation's name, a string (or None when the "
        f"trace has no thunk), got {describe(answer)}.",
    )
    return answer


@exercise_checker("Exercise 4 (the most expensive operation in a trace)")
def check_most_expensive_op(most_expensive_op: Callable) -> None:
    """Checks `most_expensive_op(events)`: the name of the XLA thunk with the largest total time,
    over the thunks that contain no other thunk on their thread."""
    require_accepts(most_expensive_op, [], what="most_expensive_op")
    for case, events, expected in _OPERATION_CASES:
        answer = _ask_operation(most_expensive_op, events, case)
        if answer == expected:
            continue
        thunks = of_kind(events, "thunk")
        require(
            answer in {event.name for event in thunks},
            f"on {case}, {answer!r} is not an XLA thunk of the trace: keep the events whose kind is "
            "'thunk' (a Python call or the executable's run spans all the work).",
        )
        containers = {
            outer.name for outer in thunks if any(_contains(outer, inner) for inner in thunks)
        }
        require(
            answer not in containers,
            f"on {case}, {answer!r} contains other thunks on its thread: its time is theirs. Leave out "
            "the thunks that contain another one on the same thread.",
        )
        require(
            answer != max(thunks, key=operator.attrgetter("duration_us")).name,
            f"on {case}, {answer!r} is the longest single event, but {expected!r} takes more time in "
            "total: add up the durations of each name's events.",
        )
        require(
            False,
            f"on {case}, the answer is {expected!r} (you said {answer!r}): is a thunk on one thread "
            "counted as containing a thunk that runs at the same time on another thread?",
        )
    require(
        _ask_operation(
            most_expensive_op,
            [_event("PjitFunction(f)", 0, 10, kind="dispatch", thread="python")],
            "a trace without thunks",
        )
        is None,
        "for a trace without thunks (nothing compiled ran), return None.",
    )
    real = _real_trace_events()
    totals = _leaf_time_by_name(real)
    expected = max(totals, key=totals.get)
    answer = _ask_operation(most_expensive_op, real, "a real trace of a jitted fori_loop")
    require(
        answer == expected,
        f"on a real trace of a jitted fori_loop, the most expensive operation is {expected!r} "
        f"({totals[expected]:.0f} µs in all); you said {answer!r}.",
    )


# Exercise 5 ------------------------------------------------------------------------------------


def sgd_step(params, batch):
    """One gradient step of a linear least-squares model: `params` {"w": (d,), "b": ()}, `batch` (x, y)."""
    x, y = batch

    def loss(params):
        return jnp.mean((x @ params["w"] + params["b"] - y) ** 2)

    grads = jax.grad(loss)(params)
    return jax.tree.map(lambda p, g: p - 0.1 * g, params, grads)


def ema_step(average, sample):
    """An exponential moving average and the sample's deviation from it: the state, the sample and
    both outputs have the same shape, so either argument's buffer could hold either output."""
    return 0.9 * average + 0.1 * sample, sample - average


def _sgd_arguments():
    params = {"w": jnp.linspace(-1.0, 1.0, 1_000), "b": jnp.zeros(())}
    x = jnp.linspace(0.0, 1.0, 64 * 1_000).reshape(64, 1_000)
    return params, (x, jnp.ones(64))


def _ema_arguments():
    return jnp.zeros(500), jnp.linspace(0.0, 1.0, 500)


_DONATION_CASES = [
    ("sgd_step(params, (x, y))", sgd_step, _sgd_arguments),
    (
        "ema_step(average, sample), where the arguments and the outputs all have shape (500,)",
        ema_step,
        _ema_arguments,
    ),
]


@exercise_checker("Exercise 5 (donate the state)")
def check_donated_state(make_donating_step: Callable) -> None:
    """Checks `make_donating_step(step)`: `step(state, batch)` jitted with the state donated, so
    that the compiled program writes its results into the old state's buffers (an alias the
    size of the state) and the batch stays usable."""
    require_accepts(make_donating_step, sgd_step, what="make_donating_step")
    for case, step, arguments in _DONATION_CASES:
        jitted = call_answer(make_donating_step, step, what="make_donating_step")
        require(
            callable(jitted) and hasattr(jitted, "lower"),
            f"make_donating_step should return a jitted function (jax.jit(step, donate_argnums=...)), "
            f"got {describe(jitted)}: only a jitted function has a compiled program to donate to.",
        )
        state, batch = arguments()
        expected = step(state, batch)
        state_bytes = sum(leaf.nbytes for leaf in jax.tree.leaves(state))
        compiled = call_answer(
            lambda s, b, jitted=jitted: jitted.lower(s, b).compile(),
            state,
            batch,
            what=f"the jitted {case}",
        )
        alias = memory_figures(compiled).alias_bytes
        result = call_answer(jitted, state, batch, what=f"the jitted {case}")
        require(
            not any(leaf.is_deleted() for leaf in jax.tree.leaves(batch)),
            f"on {case}, the batch was deleted by the call: you donated it too, and the caller can no "
            "longer use its data. Donate the state only (argument 0).",
        )
        require(
            alias == state_bytes,
            f"on {case}, the compiled program aliases {alias:,} bytes; the state has {state_bytes:,}. "
            + (
                "Nothing is donated: pass donate_argnums=0, the state, to jax.jit."
                if alias == 0
                else "Donate the whole state, argument 0."
            ),
        )
        require(
            all(leaf.is_deleted() for leaf in jax.tree.leaves(state)),
            f"on {case}, the state was not deleted by the call, so it was not donated at run time.",
        )
        require(
            close(result, expected),
            f"on {case}, the jitted step does not return step(state, batch): donate, but do not change "
            "what the step computes.",
        )
