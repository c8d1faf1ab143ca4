"""Checker of the jit chapter's exercise on serving a fixed set of shapes, compiled ahead of time."""

from __future__ import annotations

import itertools
from collections.abc import Callable

import jax
import jax.numpy as jnp
import numpy as np

from ...checks import call_answer, close, exercise_checker, require, require_callable, shorten
from ...tracecount import count_compilations

SERVED_SHAPES = ((4,), (8,), (2, 3))
"""The shapes the checker asks `precompile` to serve."""

_fresh_sizes = itertools.count(2011)


def _served_function(traces: list, runs: list) -> Callable:
    """The checker's `fn`: records its traces (Python) and its runs (a callback in the program)."""

    def fn(x):
        traces.append(tuple(x.shape))
        jax.debug.callback(lambda: runs.append(None))  # runs whenever the compiled program runs
        return jnp.cumsum(jnp.cos(x) * 2.0, axis=-1)

    return fn


def _require_value_error(serve: Callable, x: jax.Array, name: str, fix: str) -> None:
    """Calling `serve` on an array it was not compiled for must raise a ValueError naming `name`."""
    jax.block_until_ready(x)
    try:
        with count_compilations() as count:
            returned = serve(x)
    except ValueError as error:
        require(
            name in str(error),
            f"serve({jax.typeof(x)}) raised ValueError({str(error)!r}): say what was asked for, {name}, "
            "so that the caller knows which input is not served.",
        )
        return
    except Exception as error:  # the learner's code, or JAX refusing the wrong executable
        require(
            False,
            f"serve({jax.typeof(x)}) raised {type(error).__name__}: {shorten(str(error), 100)}. {fix}",
        )
    require(
        returned is not None,
        f"serve({jax.typeof(x)}) returned None: an input that was not compiled for must raise a "
        f"ValueError, so that the caller cannot mistake it for an answer. {fix}",
    )
    require(
        False,
        f"serve({jax.typeof(x)}) ran, compiling {count.compiles} program(s) at call time: a served "
        f"function must only run what was compiled ahead. {fix}",
    )


@exercise_checker(
    hints=(
        "Ahead-of-time compilation needs only a shape and a dtype: jax.ShapeDtypeStruct(shape, "
        "dtype) stands for an array without data, and jax.jit(fn).lower(...).compile() turns it"
        " into an executable.",
        "Build a dict inside precompile, {(tuple(shape), jnp.dtype(dtype)): executable}, and "
        "let serve look up (x.shape, x.dtype), raising ValueError with the shape and dtype in "
        "the message when the key is missing. The traps: warming up on zeros (runs fn), a fixed"
        " float32, calling jax.jit(fn) in serve, and one dict shared by every call of "
        "precompile.",
    )
)
def check_precompile(precompile: Callable) -> None:
    """Checks `precompile(fn, shapes, dtype)` -> `serve`: every shape traced and compiled once,
    before any data exists and without running `fn`; `serve(x)` runs the matching executable
    without compiling, and raises ValueError for a shape or dtype it was not compiled for."""
    require_callable(precompile, "precompile")
    traces: list[tuple] = []
    runs: list[None] = []
    fn = _served_function(traces, runs)
    serve = call_answer(precompile, fn, SERVED_SHAPES, jnp.float32, what="precompile")
    require(
        callable(serve),
        f"precompile should return a function serve(x), got {type(serve).__name__}.",
    )
    require(
        sorted(traces) == sorted(SERVED_SHAPES),
        f"precompile should trace fn once for each of {list(SERVED_SHAPES)} before it returns; it traced it "
        f"for {traces}. Lower each shape ahead of time: jax.jit(fn).lower(jax.ShapeDtypeStruct(shape, "
        "dtype)).compile().",
    )
    require(
        not runs,
        f"precompile ran fn {len(runs)} time(s) on data: warming up a jitted function compiles by running "
        "it. Compiling ahead of time needs no data: lower from jax.ShapeDtypeStruct and .compile().",
    )
    rng = np.random.default_rng(5)
    for shape in SERVED_SHAPES:
        x = rng.normal(size=shape).astype(np.float32)
        x_device = jnp.asarray(
            x
        )  # outside the count: putting data on the device is not serve's doing
        with count_compilations() as count:
            values = call_answer(serve, x_device, what=f"serve (shape {shape})")
        require(
            count.traces == 0 and count.compiles == 0,
            f"serve traced or compiled at call time for shape {shape}: call the executable compiled "
            "ahead for it, not jax.jit(fn).",
        )
        require(
            close(values, np.cumsum(np.cos(x) * 2.0, axis=-1), rtol=1e-5, atol=1e-5),
            f"serve gives wrong values for shape {shape}: run the executable compiled for that shape.",
        )
    _require_value_error(
        serve,
        jnp.ones(5, jnp.float32),
        "(5,)",
        "Look the executable up by the input's shape and dtype, and raise ValueError naming the shape "
        "when there is none.",
    )
    _require_value_error(
        serve,
        jnp.ones(4, jnp.int32),
        "int32",
        "An executable is compiled for one shape AND one dtype: key your executables on both, "
        "(x.shape, x.dtype), and raise ValueError naming the dtype too.",
    )
    _require_dtype_and_fresh_state(precompile)


def _require_dtype_and_fresh_state(precompile: Callable) -> None:
    """`precompile` compiles for the dtype it is given, and for the `fn` of this call: nothing
    kept from an earlier call (a cache shared between calls) changes what `serve` runs."""
    # A size no earlier check used, so that creating an array of it would compile a program.
    size = next(_fresh_sizes)
    x = jnp.asarray(np.linspace(-1.0, 1.0, size), jnp.float16)
    with count_compilations() as ahead:
        serve_16 = call_answer(
            precompile, _served_function([], []), ((size,),), jnp.float16, what="precompile"
        )
    require(
        ahead.compiles <= 1,
        f"precompile compiled {ahead.compiles} programs for one shape: fn's, and small ones that "
        "creating arrays runs (jnp.zeros, jnp.ones, ...). Compile from jax.ShapeDtypeStruct(shape, "
        "dtype), which holds no data, without creating an array.",
    )
    try:
        with count_compilations() as count:
            values = serve_16(x)
    except ValueError:
        require(
            False,
            f"precompile(fn, [({size},)], jnp.float16) returned a serve that refuses float16[{size}]: compile "
            "for the dtype argument, jax.ShapeDtypeStruct(shape, dtype), not a fixed float32.",
        )
    except Exception as error:  # the learner's code: reported with its class, never a crash
        require(
            False,
            f"serve(float16[{size}]) raised {type(error).__name__}: {shorten(str(error), 150)}",
        )
    require(
        count.compiles == 0
        and close(values, np.cumsum(np.cos(np.asarray(x, np.float32)) * 2.0), rtol=1e-2, atol=1e-2),
        f"precompile(fn, [({size},)], jnp.float16) did not serve float16[{size}] from an executable compiled "
        "ahead: compile for the dtype argument, jax.ShapeDtypeStruct(shape, dtype).",
    )

    def tripled(v):
        return 3.0 * v

    serve_other = call_answer(precompile, tripled, ((4,),), jnp.float32, what="precompile")
    y = jnp.asarray(np.linspace(-1.0, 1.0, 4), jnp.float32)
    values = call_answer(serve_other, y, what="serve (another fn)")
    require(
        close(values, 3.0 * np.asarray(y), rtol=1e-5, atol=1e-5),
        "a second precompile, of another fn (3 * x) for shape (4,), served the first fn's results: "
        "your executables are kept from one call of precompile to the next. Build a new lookup "
        "inside each precompile call.",
    )
