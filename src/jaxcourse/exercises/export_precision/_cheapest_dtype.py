"""Checker of the export and precision chapter's exercise on the cheapest dtype that meets a
tolerance: `cheapest_dtype(a, b, rtol)` returns the first of `CANDIDATES` whose `matmul_in` meets
`rtol`, or None."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from ...checks import call_answer, exercise_checker, require

CANDIDATES = (jnp.bfloat16, jnp.float16, jnp.float32)
"""The dtypes to try, cheapest first (2, 2 and 4 bytes; bfloat16 before float16 by convention)."""


def matmul_in(a, b, dtype):
    """a @ b with both operands rounded to `dtype` and the product computed in it, as float32."""
    return (jnp.asarray(a).astype(dtype) @ jnp.asarray(b).astype(dtype)).astype(jnp.float32)


def _error(a, b, dtype) -> tuple[float, float]:
    """max|matmul_in - exact| and max|exact|, the exact product in float64 NumPy."""
    exact = np.asarray(a, np.float64) @ np.asarray(b, np.float64)
    error = np.max(np.abs(np.asarray(matmul_in(a, b, dtype), np.float64) - exact))
    return float(error), float(np.max(np.abs(exact)))


def meets(a, b, dtype, rtol: float) -> bool:
    """max|matmul_in - exact| <= rtol * max|exact|."""
    error, scale = _error(a, b, dtype)
    return bool(error <= rtol * scale)


def _case(seed: int, shape: tuple[int, int, int], scale: float, rtol: float):
    rng = np.random.default_rng(seed)
    m, k, n = shape
    a = (scale * rng.normal(size=(m, k))).astype(np.float32)
    b = (scale * rng.normal(size=(k, n))).astype(np.float32)
    return jnp.asarray(a), jnp.asarray(b), rtol


CASES = (
    _case(0, (16, 32, 8), 1.0, 2e-2),  # bfloat16 is enough
    _case(1, (24, 64, 12), 1.0, 1e-3),  # float16's resolution is needed
    _case(2, (8, 64, 8), 100.0, 1e-3),  # float16 overflows: float32
    _case(3, (8, 32, 8), 1.0, 1e-9),  # nothing meets it: None
)


def _name(dtype) -> str:
    return "None" if dtype is None else jnp.dtype(dtype).name


@exercise_checker(
    hints=(
        "Compute the exact product once, in float64 NumPy; then try the CANDIDATES in order and "
        "return the first whose matmul_in(a, b, dtype) is within rtol of it.",
        "The error is relative to the largest entry: max|c - exact| <= rtol * max|exact|. An inf "
        "(float16 overflows above 65504) never meets it, and None is the answer when even "
        "float32 does not.",
    )
)
def check_cheapest_dtype(cheapest_dtype) -> None:
    """Four cases whose answers are bfloat16, float16, float32 and None; each checked by the
    property: the answer meets rtol and every cheaper candidate does not."""
    for a, b, rtol in CASES:
        got = call_answer(cheapest_dtype, a, b, rtol, what="cheapest_dtype")
        ok = [dtype for dtype in CANDIDATES if meets(a, b, dtype, rtol)]
        want = ok[0] if ok else None
        where = (
            f"(a of shape {a.shape}, entries about {float(jnp.abs(a).mean()):.2g}, rtol={rtol:g})"
        )
        if got is None:
            require(
                want is None,
                f"you returned None {where}, but {_name(want)} meets the tolerance.",
            )
            continue
        require(
            not isinstance(got, (np.ndarray, jax.Array)),
            f"cheapest_dtype should return a dtype or None, got an array {where}.",
        )
        try:
            got = jnp.dtype(got)
        except TypeError:
            require(False, f"cheapest_dtype should return a dtype or None, got {got!r}.")
        require(
            got in [jnp.dtype(d) for d in CANDIDATES],
            f"you returned {got.name} {where}: choose among CANDIDATES, {[_name(d) for d in CANDIDATES]}.",
        )
        require(
            want is not None,
            f"you returned {got.name} {where}, but no candidate meets rtol there, not even "
            "float32: return None.",
        )
        require(
            meets(a, b, got, rtol),
            f"{got.name} does not meet the tolerance {where}"
            + (
                ": its product overflows (float16 ends at 65504), and inf is never within rtol."
                if not np.all(np.isfinite(np.asarray(matmul_in(a, b, got))))
                else ": compare max|c - exact| with rtol * max|exact|."
            ),
        )
        by_absolute = next((d for d in CANDIDATES if _error(a, b, d)[0] <= rtol), None)
        require(
            got == jnp.dtype(want) or by_absolute is None or got != jnp.dtype(by_absolute),
            f"you returned {got.name} {where}, but {_name(want)} meets the tolerance: it is "
            "relative, max|c - exact| <= rtol * max|exact|, and you compared the absolute error "
            "with rtol.",
        )
        require(
            got == jnp.dtype(want),
            f"{got.name} meets the tolerance {where}, but {_name(want)} comes first in "
            "CANDIDATES and meets it too: return the first that does.",
        )
