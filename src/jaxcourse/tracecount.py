"""Count how often JAX traces a function: the Python body of a jitted function runs once per trace."""

from __future__ import annotations

import functools
from typing import Callable


def count_traces(fn: Callable) -> Callable:
    """Wraps `fn` so that each Python call of it adds one to the wrapper's `traces` attribute.

    Jit the wrapper, not `fn`: `jax.jit` runs the Python body only when it traces (a cache
    miss), so `wrapper.traces` counts traces, while calls served from the cache leave it
    unchanged. `functools.wraps` keeps the signature visible, so `static_argnames` still works.
    """

    @functools.wraps(fn)
    def counted(*args, **kwargs):
        counted.traces += 1
        return fn(*args, **kwargs)

    counted.traces = 0
    return counted
