"""Reading a profiler trace: capture one with `jax.profiler`, parse its Perfetto JSON into plain
event records, and sort the events by what the time went to (dispatch, compilation, the
executable's run, XLA:CPU's thunks) and where nothing ran (idle gaps)."""

from __future__ import annotations

import collections
import gzip
import json
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import NamedTuple

import jax

TRACE_FILE = "perfetto_trace.json.gz"
"""The Chrome-trace JSON that `jax.profiler.trace(..., create_perfetto_trace=True)` writes, in a
timestamped folder under `<directory>/plugins/profile/`."""

KINDS = {
    "dispatch": "Python calls a jitted function",
    "compile": "lowering and compiling",
    "run": "the executable runs",
    "thunk": "XLA:CPU thunks",
    "python": "Python functions",
    "other": "other",
}
"""The kinds `classify` sorts events into, with the words a figure or table shows."""

_COMPILE_EVENTS = ("lower_sharding_computation", "backend_compile_and_load")
_RUN_EVENTS = ("CommonPjRtLoadedExecutable::ExecuteHelperOnSingleDevice", "ThunkExecutor::Execute")


class TraceEvent(NamedTuple):
    """One complete event ('X' phase) of a trace, in microseconds.

    Attributes:
        name: the event's name: `PjitFunction(f)`, `backend_compile_and_load`, an HLO
            operation such as `ynn_fusion.2` or `dot_general.13`, ...
        kind: one of `KINDS` (see `classify`).
        thread: the name of the thread it ran on (`python`, `tf_XLAEigen/...`, ...).
        start_us: its start, from the first event of the trace.
        duration_us: how long it lasted.
        hlo_module: the compiled program (`jit_f`) an XLA thunk belongs to; '' otherwise.
    """

    name: str
    kind: str
    thread: str
    start_us: float
    duration_us: float
    hlo_module: str

    @property
    def end_us(self) -> float:
        return self.start_us + self.duration_us


def classify(name: str, args: dict | None = None) -> str:
    """The kind of an event, from its name and arguments (one of `KINDS`).

    An event with an `hlo_op` argument is an XLA:CPU thunk, one step of a compiled program
    (a fusion, a matrix product, a loop); `PjitFunction(...)` is a call of a jitted function
    from Python; lowering and `backend_compile_and_load` are compilation; the PjRt and
    thunk-executor events are the executable's run; names starting with `$` are Python
    functions (recorded only when the Python tracer is on).
    """
    if args and "hlo_op" in args:
        return "thunk"
    if name.startswith("PjitFunction("):
        return "dispatch"
    if name in _COMPILE_EVENTS:
        return "compile"
    if name.startswith(_RUN_EVENTS):
        return "run"
    if name.startswith("$"):
        return "python"
    return "other"


def find_trace(directory) -> Path:
    """The newest `perfetto_trace.json.gz` under `directory` (searched recursively).

    Raises:
        ValueError: `directory` is not a folder, or holds no such file (a trace captured
            without `create_perfetto_trace=True` has only `.xplane.pb` files).
    """
    directory = Path(directory)
    if not directory.is_dir():
        raise ValueError(
            f"{str(directory)!r} is not a folder; pass the folder given to jax.profiler.trace."
        )
    found = sorted(directory.rglob(TRACE_FILE), key=lambda path: path.stat().st_mtime)
    if not found:
        raise ValueError(
            f"no {TRACE_FILE} under {str(directory)!r}: capture the trace with "
            "jax.profiler.trace(directory, create_perfetto_trace=True)."
        )
    return found[-1]


def _load_json(path: Path) -> dict:
    try:
        with gzip.open(path, "rt") as file:
            return json.load(file)
    except (OSError, EOFError, UnicodeDecodeError, json.JSONDecodeError) as error:
        raise ValueError(
            f"{str(path)!r} is not a profiler trace (a gzipped Chrome-trace JSON): {type(error).__name__}: {error}"
        ) from None


def read_trace(path) -> list[TraceEvent]:
    """The complete events of a trace, as `TraceEvent`s sorted by start time.

    Args:
        path: a `perfetto_trace.json.gz` file, or a folder holding one (see `find_trace`).

    Raises:
        ValueError: the file is not a gzipped JSON trace with a `traceEvents` list.
    """
    path = Path(path)
    if path.is_dir():
        path = find_trace(path)
    if not path.is_file():
        raise ValueError(f"{str(path)!r} does not exist; pass a {TRACE_FILE} file or its folder.")
    trace = _load_json(path)
    if not isinstance(trace, dict) or not isinstance(trace.get("traceEvents"), list):
        raise ValueError(
            f"{str(path)!r} is JSON, but not a profiler trace: it has no 'traceEvents' list."
        )
    raw = [event for event in trace["traceEvents"] if isinstance(event, dict)]
    threads = {
        (event.get("pid"), event.get("tid")): event.get("args", {}).get("name", "")
        for event in raw
        if event.get("ph") == "M" and event.get("name") == "thread_name"
    }
    complete = [event for event in raw if event.get("ph") == "X" and "ts" in event]
    origin = min((float(event["ts"]) for event in complete), default=0.0)
    events = []
    for event in complete:
        args = event.get("args") or {}
        events.append(
            TraceEvent(
                name=str(event.get("name", "")),
                kind=classify(str(event.get("name", "")), args),
                thread=threads.get((event.get("pid"), event.get("tid")), str(event.get("tid"))),
                start_us=float(event["ts"]) - origin,
                duration_us=float(event.get("dur", 0.0)),
                hlo_module=str(args.get("hlo_module", "")),
            )
        )
    return sorted(events, key=lambda event: event.start_us)


def capture(fn: Callable, *args, directory=None, python_tracer: bool = False, **kwargs) -> Path:
    """Runs `fn(*args, **kwargs)` under `jax.profiler.trace` and returns the trace file.

    The call is waited for (`jax.block_until_ready`) inside the trace, so the trace holds
    the computation and not only its dispatch.

    Args:
        fn: what to profile; it may call jitted functions, run a loop, fit a model.
        directory: where the profiler writes (a new temporary folder by default).
        python_tracer: also record every Python function call (many events: off by default).

    Returns:
        The path of the `perfetto_trace.json.gz` written, for `read_trace` or Perfetto.
    """
    directory = Path(
        tempfile.mkdtemp(prefix="jaxcourse-trace-") if directory is None else directory
    )
    options = jax.profiler.ProfileOptions()
    options.python_tracer_level = int(python_tracer)
    with jax.profiler.trace(str(directory), create_perfetto_trace=True, profiler_options=options):
        jax.block_until_ready(fn(*args, **kwargs))
    return find_trace(directory)


def of_kind(events: list[TraceEvent], kind: str) -> list[TraceEvent]:
    """The events of one kind (one of `KINDS`)."""
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {sorted(KINDS)}, got {kind!r}.")
    return [event for event in events if event.kind == kind]


def jitted_calls(events: list[TraceEvent]) -> list[TraceEvent]:
    """The calls of jitted functions from Python: the `dispatch` events that no other one holds.
    jax 0.12 records each call as two nested `PjitFunction(...)` events on the Python thread,
    so `of_kind(events, "dispatch")` counts every call twice."""
    dispatched = of_kind(events, "dispatch")
    return [call for call in dispatched if not any(contains(other, call) for other in dispatched)]


def contains(outer: TraceEvent, inner: TraceEvent) -> bool:
    """True when `outer` holds `inner`: another event on the same thread, within its interval
    (a loop, call or conditional thunk holds its body's thunks, whatever its name; two threads
    run at the same time, so an event never holds one on another thread)."""
    return (
        outer is not inner
        and outer.thread == inner.thread
        and outer.start_us <= inner.start_us
        and inner.end_us <= outer.end_us
    )


def time_by_name(events: list[TraceEvent]) -> list[tuple[str, float, int]]:
    """`(name, total microseconds, count)` for each event name, the largest total first."""
    totals: dict[str, float] = collections.defaultdict(float)
    counts: collections.Counter[str] = collections.Counter()
    for event in events:
        totals[event.name] += event.duration_us
        counts[event.name] += 1
    rows = [(name, total, counts[name]) for name, total in totals.items()]
    return sorted(rows, key=lambda row: row[1], reverse=True)


def busy_intervals(events: list[TraceEvent]) -> list[tuple[float, float]]:
    """The union of the events' time intervals, as sorted, disjoint `(start_us, end_us)` pairs
    (nested or overlapping events, such as a loop thunk and the thunks inside it, merge)."""
    merged: list[list[float]] = []
    for event in sorted(events, key=lambda event: event.start_us):
        if merged and event.start_us <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], event.end_us)
        else:
            merged.append([event.start_us, event.end_us])
    return [(start, end) for start, end in merged]


def idle_gaps(events: list[TraceEvent], *, min_gap_us: float = 0.0) -> list[tuple[float, float]]:
    """The gaps between the XLA thunks of a trace, as `(start_us, duration_us)`: the stretches,
    between the first thunk and the last, in which no compiled code ran (the host was
    dispatching, compiling, or running Python). Gaps shorter than `min_gap_us` are left out."""
    busy = busy_intervals(of_kind(events, "thunk"))
    gaps = [(end, next_start - end) for (_, end), (next_start, _) in zip(busy, busy[1:])]
    return [gap for gap in gaps if gap[1] >= min_gap_us]
