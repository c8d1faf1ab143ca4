"""Count how often JAX traces and compiles: the Python body of a jitted function runs once per trace."""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import sys
from collections.abc import Callable, Iterator
from typing import Any, Protocol, cast

import jax

# jax.monitoring reports the duration of every trace and every XLA compilation under these names;
# every compile-time stage (tracing, lowering, compiling) is reported under the common prefix.
_COMPILE_STAGE_PREFIX = "/jax/core/compile/"
_TRACE_EVENT = "/jax/core/compile/jaxpr_trace_duration"
# The compile event times getting the program from XLA, compiled or, with the persistent
# compilation cache on (`compilation_cache`), read back from it: each counts once.
_COMPILE_EVENT = "/jax/core/compile/backend_compile_duration"


class Counted(Protocol):
    """A function wrapped by `count_traces`: callable, with the number of its traces."""

    traces: int

    def __call__(self, *args: Any, **kwargs: Any) -> Any: ...


def count_traces(fn: Callable) -> Counted:
    """Wraps `fn` so that each Python call of it adds one to the wrapper's `traces` attribute.

    Jit the wrapper, not `fn`: `jax.jit` runs the Python body only when it traces (a cache
    miss), so `wrapper.traces` counts traces, while calls served from the cache leave it
    unchanged. `functools.wraps` keeps the signature visible, so `static_argnames` still works.
    """

    @functools.wraps(fn)
    def counted(*args, **kwargs):
        counted.traces += 1
        return fn(*args, **kwargs)

    wrapper = cast(Counted, counted)
    wrapper.traces = 0
    return wrapper


@dataclasses.dataclass
class CompileCount:
    """Traces and XLA compilations seen inside a `count_compilations` block, and the seconds
    spent in all compile-time stages (tracing, lowering, XLA compilation).

    A program read back from the persistent compilation cache counts as compiled, and its read
    as its compile time: either way the call built a program new to this process, so a count
    is the same with the cache on (`compilation_cache.enable`) or off."""

    traces: int = 0
    compiles: int = 0
    seconds: float = 0.0


@contextlib.contextmanager
def count_compilations() -> Iterator[CompileCount]:
    """Counts every trace and XLA compilation inside the block, for code we cannot wrap.

    Eager operations count too: the first use of each primitive at a new shape compiles it.
    """
    count = CompileCount()

    def listener(event: str, duration_secs: float, **kwargs) -> None:
        if event.startswith(_COMPILE_STAGE_PREFIX):
            count.seconds += duration_secs
        if event == _TRACE_EVENT:
            count.traces += 1
        elif event == _COMPILE_EVENT:
            count.compiles += 1

    jax.monitoring.register_event_duration_secs_listener(listener)
    try:
        yield count
    finally:
        jax.monitoring.unregister_event_duration_listener(listener)


def clear_compiled(package: str = "jaxcourse") -> int:
    """Empties the compilation caches of the jitted functions that the loaded modules of
    `package` define at module level, and returns how many it emptied.

    Their next calls compile anew, so that a timed first call measures its compilation even in
    a process that ran the function before. Everything else the process compiled stays
    compiled: a page's own functions and the operations it ran op by op, which
    `jax.clear_caches()` would empty too, to be compiled again at their next use.
    """
    jitted = {
        id(value): value
        for name, module in list(sys.modules.items())
        if module is not None and (name == package or name.startswith(f"{package}."))
        for value in list(vars(module).values())
        if hasattr(value, "_cache_size") and callable(getattr(value, "clear_cache", None))
    }
    for function in jitted.values():
        function.clear_cache()
    return len(jitted)
