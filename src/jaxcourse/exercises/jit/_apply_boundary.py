"""Checker of the jit chapter's exercise on going from in-place updates to `.at[]`."""

from __future__ import annotations

from collections.abc import Callable

import jax
import jax.numpy as jnp
import numpy as np

from ...checks import call_answer, close, exercise_checker, require, require_array, require_callable


def _apply_boundary_reference(u: np.ndarray, left: float, right: float) -> np.ndarray:
    u = u.copy()
    u[0] = left
    u[-1] = right
    u[1:-1] *= 0.5
    return u


_IMMUTABLE_HINTS = (
    (
        jax.errors.TracerArrayConversionError,
        "",
        "your code turns u into a NumPy array (np.array, np.asarray or a NumPy function), which "
        "works eagerly but not under jax.jit, where u is a tracer with no values: stay in "
        "jax.numpy and update with u.at[i].set(v) and u.at[a:b].multiply(c).",
    ),
    (
        TypeError,
        "immutable",
        "JAX arrays are immutable: replace `u[i] = v` by `u = u.at[i].set(v)` and "
        "`u[a:b] *= c` by `u = u.at[a:b].multiply(c)`",
    ),
)


def _apply_boundary_cases() -> list[tuple[np.ndarray, float, float]]:
    rng = np.random.default_rng(0)
    return [
        (np.arange(1.0, 7.0, dtype=np.float32), -1.0, 2.0),
        (rng.normal(size=9).astype(np.float32), 0.5, 0.25),
        (rng.normal(size=3).astype(np.float32), 3.0, -3.0),
        (np.zeros(4, np.float32), 0.0, 0.0),  # zeros: nothing changes
        (np.array([5.0, 7.0], np.float32), 1.0, 1.0),  # no interior; equal ends
    ]


@exercise_checker(
    hints=(
        "Start from the NumPy version line by line: each in-place assignment becomes an "
        "`.at[...]` update that returns a new array (`u.at[i].set(v)`, "
        "`u.at[a:b].multiply(c)`), and only jax.numpy functions work under jax.jit, where u is "
        "a tracer.",
        "Three updates, chained, each on the array the previous one returned: the two ends with"
        " .set, the interior slice u[1:-1] with .multiply. The traps: calling .at[...] without "
        "keeping what it returns, halving the whole array instead of the interior, swapping "
        "left and right, an integer result, and converting u to NumPy (fine eagerly, impossible"
        " under jit).",
    )
)
def check_apply_boundary(apply_boundary: Callable) -> None:
    """Checks `apply_boundary(u, left, right)`, eagerly and under jit, against the NumPy version."""
    require_callable(apply_boundary, "apply_boundary")
    for u, left, right in _apply_boundary_cases():
        expected = _apply_boundary_reference(u, left, right)
        for how, fn in (("", apply_boundary), (" under jax.jit", jax.jit(apply_boundary))):
            actual = call_answer(
                fn, jnp.asarray(u), left, right, what=f"apply_boundary{how}", hints=_IMMUTABLE_HINTS
            )
            require(
                actual is not None,
                "apply_boundary must return the new array (.at[] returns a copy; it does not modify u).",
            )
            actual = require_array(
                actual, u.shape, what=f"apply_boundary{how}", expected="the updated copy of u"
            )
            require(
                np.issubdtype(np.asarray(actual).dtype, np.floating),
                f"apply_boundary{how} returned an array of dtype {np.asarray(actual).dtype}: halving "
                "needs fractions, so keep u's floating dtype (no .astype to an integer type).",
            )
            ends = actual[[0, -1]]
            if not close(ends, expected[[0, -1]]) and left != right:
                require(
                    not close(ends, np.array([right, left], np.float32)),
                    f"the end values are swapped: u[0] should be left={left} and u[-1] right={right}, "
                    f"got {actual[0]:.3f} and {actual[-1]:.3f}.",
                )
            if not close(ends, expected[[0, -1]]) and (left, right) != (0.0, 0.0):
                require(
                    not close(ends, np.array([0.5 * left, 0.5 * right], np.float32)),
                    f"the end values are half of left={left} and right={right} (got {actual[0]:.3f} and "
                    f"{actual[-1]:.3f}): only the interior u[1:-1] is halved, not the whole array.",
                )
            require(
                close(ends, expected[[0, -1]]),
                f"the end values should be left={left} and right={right}, got {actual[0]:.3f} and {actual[-1]:.3f}.",
            )
            if close(actual[1:-1], expected[1:-1]):
                continue
            require(
                not close(actual[1:-1], u[1:-1]),
                "the interior u[1:-1] is unchanged: it should be halved, with u = u.at[1:-1].multiply(0.5). "
                "Remember that .at[] returns a new array, which you must keep.",
            )
            require(
                False,
                f"the interior values are wrong for u = {np.round(u, 3).tolist()}: expected "
                f"{np.round(expected[1:-1], 3).tolist()}, got {np.round(actual[1:-1], 3).tolist()}.",
            )
