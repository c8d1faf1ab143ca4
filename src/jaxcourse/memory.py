"""What a compiled program holds in memory, as XLA plans it: its arguments, outputs, scratch
(temporaries) and the outputs that reuse a donated argument's buffer (aliases)."""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

import jax


class MemoryFigures(NamedTuple):
    """The sizes, in bytes, from `compiled.memory_analysis()`.

    Attributes:
        argument_bytes: the input buffers.
        output_bytes: the output buffers.
        temp_bytes: scratch memory the program allocates while it runs: intermediate arrays
            that fusion could not avoid, the residuals a gradient keeps, a loop's stacked
            outputs.
        alias_bytes: output bytes written into a donated argument's buffer (no new memory).

    XLA plans these sizes when it compiles, so they do not change from run to run. The
    analysis also reports `peak_memory_in_bytes`, which on XLA:CPU is not meaningful (it can
    come out below the temporaries); it is left out here.
    """

    argument_bytes: int
    output_bytes: int
    temp_bytes: int
    alias_bytes: int

    @property
    def footprint_bytes(self) -> int:
        """What the program holds in all: arguments + outputs - aliases + temporaries. An
        aliased output lives in its argument's buffer, so it is counted once, not twice."""
        return self.argument_bytes + self.output_bytes - self.alias_bytes + self.temp_bytes


def require_compiled(program, what: str = "this function") -> jax.stages.Compiled:
    """Returns `program` if it is a compiled program (`jax.stages.Compiled`); raises otherwise.

    Raises:
        TypeError: `program` is a jitted or plain function, or a lowered program, which has
            not been compiled for any arguments yet.
    """
    if isinstance(program, jax.stages.Compiled):
        return program
    if isinstance(program, jax.stages.Lowered):
        raise TypeError(
            f"{what} needs a compiled program; this one is only lowered: call .compile() on it."
        )
    if callable(program):
        raise TypeError(
            f"{what} needs a compiled program, and {getattr(program, '__name__', 'this function')!r} "
            "was never compiled for any arguments: use jax.jit(f).lower(*args).compile(), "
            "or pass the function with its arguments."
        )
    raise TypeError(
        f"{what} needs a compiled program (jax.stages.Compiled), got a {type(program).__name__}."
    )


def memory_figures(compiled) -> MemoryFigures:
    """The memory figures of a compiled program (`jax.jit(f).lower(*args).compile()`)."""
    stats = require_compiled(compiled, "memory_figures").memory_analysis()
    if stats is None:
        raise ValueError("this backend reports no memory figures for its compiled programs.")
    return MemoryFigures(
        argument_bytes=int(stats.argument_size_in_bytes),
        output_bytes=int(stats.output_size_in_bytes),
        temp_bytes=int(stats.temp_size_in_bytes),
        alias_bytes=int(stats.alias_size_in_bytes),
    )


def memory_of(fn: Callable, *args, donate_argnums=(), **kwargs) -> MemoryFigures:
    """The memory figures of `jax.jit(fn, donate_argnums=...)` compiled for `args` (arrays or
    `jax.ShapeDtypeStruct`s; nothing is run and nothing is donated)."""
    return memory_figures(
        jax.jit(fn, donate_argnums=donate_argnums).lower(*args, **kwargs).compile()
    )
