"""Checker for the profiling chapter's exercise on the most expensive operation in a trace."""

from __future__ import annotations

import operator
from collections.abc import Callable, Mapping

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
from ...profiling import TraceEvent, capture, contains, of_kind, read_trace


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
    (
        "a loop thunk 'while.2' whose first thunk starts with it and whose last ends with it",
        [
            _event("while.2", 0, 80),
            _event("dot.5", 0, 50),
            _event("fusion.7", 50, 30),
        ],
        "dot.5",
    ),
    (
        "a call thunk 'call.6' holding a 'fusion.8' and a 'dot.6'",
        [
            _event("call.6", 0, 100),
            _event("fusion.8", 5, 30),
            _event("dot.6", 40, 55),
        ],
        "dot.6",
    ),
    (
        "one 'dot.4' of 60 µs and three 'fusion.9' of 15 µs",
        [
            _event("fusion.9", 0, 15),
            _event("dot.4", 20, 60),
            _event("fusion.9", 90, 15),
            _event("fusion.9", 110, 15),
        ],
        "dot.4",
    ),
]


_contains = contains


def _leaf_time_by_name(events) -> dict[str, float]:
    thunks = of_kind(events, "thunk")
    totals: dict[str, float] = {}
    for event in thunks:
        if not any(_contains(event, other) for other in thunks):
            totals[event.name] = totals.get(event.name, 0.0) + event.duration_us
    return totals


def _largest(totals: Mapping[str, float]) -> str | None:
    return max(totals, key=totals.__getitem__) if totals else None


def _leaves(events, contains=_contains):
    return [event for event in events if not any(contains(event, other) for other in events)]


def _totals(events) -> dict[str, float]:
    totals: dict[str, float] = {}
    for event in events:
        totals[event.name] = totals.get(event.name, 0.0) + event.duration_us
    return totals


def _counts(events) -> dict[str, int]:
    counts: dict[str, int] = {}
    for event in events:
        counts[event.name] = counts.get(event.name, 0) + 1
    return counts


def _across_threads(outer: TraceEvent, inner: TraceEvent) -> bool:
    return outer is not inner and outer.start_us <= inner.start_us and inner.end_us <= outer.end_us


def _strictly(outer: TraceEvent, inner: TraceEvent) -> bool:
    return (
        outer is not inner
        and outer.thread == inner.thread
        and outer.start_us < inner.start_us
        and inner.end_us < outer.end_us
    )


def _longest(events):
    return max(events, key=operator.attrgetter("duration_us")).name if events else None


_MISTAKES = [
    # (what the answer does wrong, what it answers for the events of a case), each answering the
    # hand-made cases differently from the others, so that the hint names the mistake made.
    (
        "you returned the longest single thunk: a loop thunk's time is its body's, and a name's "
        "events add up",
        lambda events: _longest(of_kind(events, "thunk")),
    ),
    (
        "you returned the name of the longest single event, not the name whose events take the "
        "most time in all: add up the durations of each name's events",
        lambda events: _longest(_leaves(of_kind(events, "thunk"))),
    ),
    (
        "you kept the thunks that contain other thunks on their thread, whose time is theirs: leave "
        "out each thunk that contains another one on the same thread",
        lambda events: _largest(_totals(of_kind(events, "thunk"))),
    ),
    (
        "you counted a thunk as containing one that runs at the same time on another thread, and "
        "left it out: containment needs the same thread (two threads run at once)",
        lambda events: _largest(_totals(_leaves(of_kind(events, "thunk"), _across_threads))),
    ),
    (
        "you counted events that are not thunks (a Python call, the executable's run): keep only "
        "the events whose kind is 'thunk'",
        lambda events: _largest(_totals(_leaves(events))),
    ),
    (
        "you returned the name with the most events, not the most time: add up the durations of "
        "each name's events",
        lambda events: _largest(_counts(_leaves(of_kind(events, "thunk")))),
    ),
    (
        "you left out the thunks whose names start with 'while', but a thunk holding others may "
        "have any name (a call, a conditional): leave out each thunk that contains another one on "
        "the same thread, whatever its name",
        lambda events: _largest(
            _totals([e for e in of_kind(events, "thunk") if not e.name.startswith("while")])
        ),
    ),
    (
        "you did not count a thunk that starts or ends at the same time as the loop thunk holding "
        "it as contained in it, so the loop thunk stayed in: compare with <= and >=, not < and >",
        lambda events: _largest(_totals(_leaves(of_kind(events, "thunk"), _strictly))),
    ),
]


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


def _ask_operation(most_expensive_op: Callable, events, case: str, earlier_names: set):
    answer = call_answer(most_expensive_op, list(events), what="most_expensive_op")
    require(
        not isinstance(answer, TraceEvent),
        f"on {case}, most_expensive_op returned a whole TraceEvent (the event "
        f"{getattr(answer, 'name', '')!r}); return its name, a string (or None when the trace has "
        "no thunk).",
    )
    require(
        not isinstance(answer, (int, float)) or isinstance(answer, bool),
        f"on {case}, most_expensive_op returned the number {answer!r}, a time perhaps; return the "
        "operation's name, a string (or None when the trace has no thunk).",
    )
    require(
        answer is None or isinstance(answer, str),
        f"on {case}, most_expensive_op should return the operation's name, a string (or None when the "
        f"trace has no thunk), got {describe(answer)}.",
    )
    names = {event.name for event in events}
    require(
        answer is None or answer in names or answer not in earlier_names,
        f"on {case}, you returned {answer!r}, a name from a trace of an earlier call that this one "
        "does not have: is something (a dict of totals, a default argument) kept from one call to "
        "the next? Start from nothing at each call.",
    )
    return answer


@exercise_checker(
    hints=(
        "Keep the events whose kind is 'thunk', drop each one that contains another thunk, "
        "then add up duration_us by name and return the name with the largest total.",
        "Containment needs the same thread as well as start_us <= inner.start_us and "
        "inner.end_us <= end_us (two threads run at once); sum each name's durations rather"
        " than taking the longest single event; return None when there is no thunk.",
    )
)
def check_most_expensive_op(most_expensive_op: Callable) -> None:
    """Checks `most_expensive_op(events)`: the name of the XLA thunk with the largest total time,
    over the thunks that contain no other thunk on their thread."""
    require_accepts(most_expensive_op, [], what="most_expensive_op")
    seen: set[str] = set()
    answers = []
    for case, events, _ in _OPERATION_CASES:
        answers.append(_ask_operation(most_expensive_op, events, case, seen))
        seen |= {event.name for event in events}
    wrong = [
        (case, events, expected, answer)
        for (case, events, expected), answer in zip(_OPERATION_CASES, answers)
        if answer != expected
    ]
    if wrong:
        case, events, expected, answer = wrong[0]
        for mistake, variant in _MISTAKES:
            require(
                answers != [variant(events) for _, events, _ in _OPERATION_CASES],
                f"on {case}, you said {answer!r}, not {expected!r}: {mistake}.",
            )
        _explain(case, events, expected, answer)
    for case, events in [
        (
            "a trace without thunks",
            [_event("PjitFunction(f)", 0, 10, kind="dispatch", thread="python")],
        ),
        ("an empty trace", []),
    ]:
        answer = _ask_operation(most_expensive_op, events, case, seen)
        require(
            answer is None,
            f"for {case} (nothing compiled ran) you returned {answer!r}"
            + (
                ", the name of an event that is not a thunk"
                if answer in {event.name for event in events}
                else ""
            )
            + "; return None when the trace has no thunk.",
        )
    real = _real_trace_events()
    totals = _leaf_time_by_name(real)
    expected = max(totals, key=totals.__getitem__)
    answer = _ask_operation(most_expensive_op, real, "a real trace of a jitted fori_loop", seen)
    require(
        answer == expected,
        f"on a real trace of a jitted fori_loop, the most expensive operation is {expected!r} "
        f"({totals[expected]:.0f} µs in all); you said {answer!r}.",
    )


def _explain(case: str, events, expected: str, answer) -> None:
    """Fails with what the wrong `answer` on one case did, when no known mistake explains all."""
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
    totals = _leaf_time_by_name(events)
    raise CheckFailed(
        f"on {case}, you said {answer!r}, but over the thunks that contain no other one on their "
        "thread, the names add up to "
        + ", ".join(f"{name!r} {total:g} µs" for name, total in totals.items())
        + f": the largest total is {expected!r}."
    )
