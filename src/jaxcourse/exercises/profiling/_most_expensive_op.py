"""Checker for the profiling chapter's Exercise 4: the most expensive operation in a trace."""

from __future__ import annotations

import operator
from collections.abc import Callable

import jax
import jax.numpy as jnp

from ...checks import (
    call_answer,
    describe,
    exercise_checker,
    require,
    require_accepts,
)
from ...profiling import TraceEvent, capture, of_kind, read_trace

HINTS = {
    "check_most_expensive_op": (
        "Keep the events whose kind is 'thunk', drop each one that contains another thunk, "
        "then add up duration_us by name and return the name with the largest total.",
        "Containment needs the same thread as well as start_us <= inner.start_us and "
        "inner.end_us <= end_us (two threads run at once); sum each name's durations rather"
        " than taking the longest single event; return None when there is no thunk.",
    ),
}


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
