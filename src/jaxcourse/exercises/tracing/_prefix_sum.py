"""Checker of the tracing chapter's exercise on a prefix sum with a traced length."""

from __future__ import annotations

from collections.abc import Callable

import jax
import jax.extend.core
import jax.numpy as jnp
import numpy as np

from ...checks import close, exercise_checker, require, require_array, require_callable
from ...tracecount import count_traces
from .._jaxpr import (
    condition_influenced,
    equations,
    influenced_by,
    primitive_names,
    traced_program,
)
from ._common import _NON_HASHABLE_STATIC, _run


@exercise_checker(
    hints=(
        "While jax.jit traces, n is a tracer but x.shape is a concrete tuple: build something "
        "of x's fixed length that says, for each position, whether it is among the first n.",
        "Compare positions, not values: jnp.arange(x.shape[0]) has x's length whatever n is, "
        "and comparing it with n gives a boolean mask of the first n positions; fill the other "
        "positions with the value that does not change a sum. The traps: x < n (a mask by "
        "value), <= n (one too many), a fixed length instead of x.shape[0], and x[:n] or "
        "range(n).",
    )
)
def check_prefix_sum(prefix_sum: Callable) -> None:
    """Checks `prefix_sum(x, n)`: the sum of the first `n` entries, with `n` traced, one trace in all."""
    require_callable(prefix_sum, "prefix_sum")
    counted = count_traces(prefix_sum)
    jitted = jax.jit(counted)  # n is an ordinary (traced) argument here, on purpose
    hints = [
        (
            ValueError,
            _NON_HASHABLE_STATIC,
            "n must stay a traced argument: marking it static recompiles for every n, which is "
            "what this exercise avoids.",
        ),
        (
            jax.errors.TracerIntegerConversionError,
            "",
            "range(n) needs a concrete Python int, but n is traced. Compare positions instead: "
            "jnp.arange(x.shape[0]) < n (x.shape is concrete while tracing).",
        ),
        (
            IndexError,
            "static",
            "x[:n] needs a concrete n, because the slice's shape would depend on it. Keep the shape "
            "fixed and mask: jnp.where(jnp.arange(x.shape[0]) < n, x, 0).",
        ),
        (
            TypeError,
            "Shapes must be 1D sequences of concrete values",
            "an array whose shape depends on n cannot be built under jit. Keep the shape "
            "x.shape and mask the entries at positions >= n.",
        ),
        (
            jax.errors.ConcretizationTypeError,
            "",
            "your function needs the value of n while tracing; it only has n's shape and dtype. "
            "Build a mask with jnp.arange(x.shape[0]) < n.",
        ),
    ]
    rng = np.random.default_rng(2)
    x = rng.normal(size=7).astype(np.float32)
    for n in range(x.size + 1):
        expected = x[:n].sum(dtype=np.float64)
        eager = _run(prefix_sum, jnp.asarray(x), n, hints=hints, what="prefix_sum")
        require_array(eager, (), what="prefix_sum", expected="the sum, a scalar")
        actual = _run(jitted, jnp.asarray(x), n, hints=hints, what="prefix_sum under jax.jit")
        actual = require_array(
            actual, (), what="prefix_sum under jax.jit", expected="the sum, a scalar"
        )
        if close(actual, expected, rtol=1e-5, atol=1e-5) and close(
            eager, expected, rtol=1e-5, atol=1e-5
        ):
            continue
        if close(actual, x[: n + 1].sum(dtype=np.float64), atol=1e-5):
            require(
                False,
                "off by one: the first n entries are positions 0 ... n-1, so use < n, not <= n.",
            )
        require(
            not np.issubdtype(np.asarray(actual).dtype, np.integer),
            f"your sum is an integer ({np.asarray(actual).dtype}): prefix_sum(x, {n}) should be "
            f"{expected:.5f}. Keep x's float dtype; only the positions are integers.",
        )
        by_value = x[x < n].sum(dtype=np.float64)
        require(
            not (close(actual, by_value, atol=1e-5) and not close(by_value, expected, atol=1e-5)),
            f"prefix_sum(x, {n}) gave {float(actual):.5f}, the sum of the entries whose *value* is "
            "below n: your mask compares x with n. Compare positions instead, "
            "jnp.arange(x.shape[0]) < n.",
        )
        last_n = x[x.size - n :].sum(dtype=np.float64) if n else 0.0
        require(
            not (close(actual, last_n, atol=1e-5) and not close(last_n, expected, atol=1e-5)),
            f"prefix_sum(x, {n}) gave {float(actual):.5f}, the sum of the *last* {n} entries: the "
            "first n entries are positions 0 ... n-1, jnp.arange(x.shape[0]) < n.",
        )
        require(False, f"prefix_sum(x, {n}) should be {expected:.5f}, got {float(actual):.5f}.")
    require(
        counted.traces == 1,
        f"your function was traced {counted.traces} times for {x.size + 1} values of n; one trace "
        "should serve every n of the same type.",
    )
    y = rng.normal(size=11).astype(np.float32)
    actual = _run(jitted, jnp.asarray(y), 9, hints=hints, what="prefix_sum under jax.jit")
    require(
        close(actual, y[:9].sum(dtype=np.float64), atol=1e-5),
        "wrong for a longer x (11 entries, n = 9): use x.shape[0], not a fixed length, to build the mask.",
    )
    _require_one_masked_pass(prefix_sum, jnp.asarray(x), jnp.int32(3), hints)


_CUMULATIVE = {"cumsum", "cumprod", "cummax", "cummin", "cumlogsumexp"}


_POSITION_OPERANDS = {
    "dynamic_slice": slice(1, None),
    "gather": slice(1, 2),
    "dynamic_update_slice": slice(2, None),
    "scatter": slice(1, 2),
    "scatter-add": slice(1, 2),
    "scatter_add": slice(1, 2),
}
"""For each primitive that reads or writes at a computed position, its operands that give it."""


def _require_one_masked_pass(prefix_sum: Callable, x, n, hints) -> None:
    """The method: one pass over all of x, the same for every n, selected by comparing positions
    with n. The jaxpr must hold no cumulative primitive, no read at a position computed from n
    and no loop whose number of steps depends on n; a loop over all of x that masks each entry
    by its index (i < n) is one such pass."""
    jaxpr = traced_program(prefix_sum, x, n, what="prefix_sum", hints=tuple(hints))
    primitives = set(primitive_names(jaxpr))
    require(
        not primitives & _CUMULATIVE,
        "the values are right, but a cumulative sum followed by a read at position n skips the lesson: "
        "it computes every prefix to keep one. Compare positions with n instead, "
        "jnp.arange(x.shape[0]) < n, and sum the entries the mask keeps.",
    )
    from_n = influenced_by(jaxpr, [jaxpr.jaxpr.invars[1]])
    loops = [eqn for eqn in equations(jaxpr) if eqn.primitive.name == "while"]
    require(
        not any(condition_influenced(eqn, from_n) for eqn in loops),
        "the values are right, but a loop whose trip count is n (lax.fori_loop(0, n, ...)) is the "
        "other fix; this exercise practises the mask: jnp.where(jnp.arange(x.shape[0]) < n, x, "
        "0.0), then one sum (or a loop over all of x that masks each entry by its index).",
    )
    reads_from_n = [
        eqn.primitive.name
        for eqn in equations(jaxpr)
        if eqn.primitive.name in _POSITION_OPERANDS
        and any(
            isinstance(v, jax.extend.core.Var) and v in from_n
            for v in eqn.invars[_POSITION_OPERANDS[eqn.primitive.name]]
        )
    ]
    require(
        not reads_from_n,
        "the values are right, but your program reads x (or an array made from it) at a position "
        "computed from n (an index x[n] or a dynamic_slice). Keep every read fixed and select with a "
        "mask: jnp.arange(x.shape[0]) < n.",
    )
    looped = bool(loops) or "scan" in primitives
    require(
        "iota" in primitives or looped,
        "the values are right, but no mask of positions was built: compare jnp.arange(x.shape[0]) with n.",
    )
