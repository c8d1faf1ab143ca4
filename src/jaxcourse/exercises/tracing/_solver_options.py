"""Checker of the tracing chapter's exercise on a configuration that `jit` can key on."""

from __future__ import annotations

import inspect

import jax
import jax.numpy as jnp
import numpy as np

from ...checks import close, exercise_checker, require
from ...tracecount import count_traces
from ._common import _NON_HASHABLE_STATIC, _run


def solve(x, options):
    """The exercise's function: `options.method` picks a Python branch and `options.n_iter` a loop
    length, so `options` must be a static argument."""
    for _ in range(options.n_iter):
        x = jnp.cos(x) if options.method == "cos" else jnp.sin(x)
    return x


def _expected_solve(x: np.ndarray, method: str, n_iter: int) -> np.ndarray:
    step = np.cos if method == "cos" else np.sin
    for _ in range(n_iter):
        x = step(x)
    return x


_SETTINGS = (("cos", 3), ("cos", 3), ("sin", 3), ("cos", 4), ("sin", 3))
"""The checker's calls, in order: an equal instance made afresh, then each field changed, then back."""


@exercise_checker(
    hints=(
        "jit looks a static argument up in a dictionary: instances must be hashable, equal when"
        " their fields are equal, and impossible to change once made.",
        "You need not write __eq__ and __hash__ by hand: the standard library's dataclasses can"
        " generate both from the fields and also forbid assignment (look at the decorator's "
        "options; a typing.NamedTuple works too). Keep the fields in the order method, n_iter. "
        "The traps: a plain class (equal only to itself), a dataclass that can still be changed"
        " (eq=True alone makes it unhashable, unsafe_hash=True leaves it changeable), and an "
        "__eq__ that ignores a field.",
    )
)
def check_solver_options(SolverOptions: type) -> None:
    """Checks a class `SolverOptions(method, n_iter)` used as a static argument of
    `jax.jit(solve, static_argnums=1)`: equal instances share one trace, instances that differ in
    any field get their own, results are right, and an instance cannot be changed."""
    require(
        inspect.isclass(SolverOptions),
        "pass the class itself, e.g. check_solver_options(SolverOptions).",
    )
    hints = [
        (
            ValueError,
            _NON_HASHABLE_STATIC,
            "jit could not hash your instance. A @dataclasses.dataclass with eq=True (the default) sets "
            "__hash__ to None; make it frozen=True, which gives a __hash__ from the fields.",
        ),
        (
            jax.errors.TracerBoolConversionError,
            "",
            "a field reached jit as a tracer: the instance must be the static argument itself, not a pytree.",
        ),
    ]
    counted = count_traces(solve)
    jitted = jax.jit(counted, static_argnums=1)
    x = np.linspace(-1.0, 1.0, 5, dtype=np.float32)
    seen: dict[tuple, int] = {}
    for method, n_iter in _SETTINGS:
        options = _run(
            SolverOptions, method, n_iter, hints=hints, what=f"SolverOptions({method!r}, {n_iter})"
        )
        for field, value in (("method", method), ("n_iter", n_iter)):
            require(
                getattr(options, field, None) == value,
                f"SolverOptions({method!r}, {n_iter}).{field} should be {value!r}, got "
                f"{getattr(options, field, None)!r}: keep both fields, in this order (method, n_iter).",
            )
        before = counted.traces
        result = _run(
            jitted, jnp.asarray(x), options, hints=hints, what="jax.jit(solve, static_argnums=1)"
        )
        require(
            close(result, _expected_solve(x, method, n_iter), rtol=1e-5, atol=1e-6),
            f"solve(x, SolverOptions({method!r}, {n_iter})) reused a program compiled for other options: "
            "== must compare every field (and __hash__ use only fields that == compares).",
        )
        if (method, n_iter) in seen:
            require(
                counted.traces == before,
                f"a new SolverOptions({method!r}, {n_iter}), equal to one already used, traced again: your "
                "instances are equal (and hash) by identity, Python's default. Compare and hash by the "
                "fields, e.g. @dataclasses.dataclass(frozen=True).",
            )
        seen[(method, n_iter)] = counted.traces
    require(
        counted.traces == 3,
        f"three distinct settings should give three traces, got {counted.traces}.",
    )
    options = _run(SolverOptions, "cos", 3, hints=hints, what="SolverOptions('cos', 3)")
    try:
        options.n_iter = 5
    except (AttributeError, TypeError):
        return
    require(
        False,
        "an instance can be changed after it is made (options.n_iter = 5 worked). jit keys its cache on "
        "the instance, so a changed one would find the program compiled for its old value, or break the "
        "cache's dictionary: make the class immutable, e.g. @dataclasses.dataclass(frozen=True).",
    )
