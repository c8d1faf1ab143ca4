"""Checker for the autodiff chapter's exercise on curvatures along k directions, v^T H v, from
Hessian-vector products, without the Hessian and with one program for every k."""

from __future__ import annotations

from collections.abc import Callable

import jax
import jax.numpy as jnp
import numpy as np

from ...checks import CheckFailed, call_answer, close, exercise_checker, require, require_array
from .._jaxpr import equations

RTOL, ATOL = 2e-5, 1e-5
"""Autodiff's v^T H v in float32 is within a few float32 roundings of the float64 value; a finite
difference of the gradient, the numerical stand-in, is not (about 1e-4 at its best step)."""


_STEEP = "1e4 * sum(x) + sum(x^2) / 2, a steep slope (about 1e4) and a curvature of |v|^2"


def _functions() -> dict[str, tuple[Callable, Callable]]:
    """name -> (f, its Hessian in float64 NumPy): dense Hessians, no (n, n) constant inside f."""

    def log_cosh_hessian(x):
        return np.diag(1.0 - np.tanh(x) ** 2) + 2.0

    def logsumexp_hessian(x):
        p = np.exp(x - x.max())
        p /= p.sum()
        return np.diag(p) - np.outer(p, p)

    return {
        "sum(log cosh x) + (sum x)^2": (
            lambda x: jnp.sum(jnp.log(jnp.cosh(x))) + jnp.sum(x) ** 2,
            log_cosh_hessian,
        ),
        "log-sum-exp": (jax.nn.logsumexp, logsumexp_hessian),
        "sum(exp(2 x))": (
            lambda x: jnp.sum(jnp.exp(2.0 * x)),
            lambda x: np.diag(4.0 * np.exp(2.0 * x)),
        ),
        _STEEP: (
            lambda x: 1e4 * jnp.sum(x) + 0.5 * jnp.sum(x**2),
            lambda x: np.eye(x.shape[0]),
        ),
    }


def _cases(rng, n: int, first: bool):
    """(x, directions, description): random x, x = 0, a zero direction; one single direction."""
    directions = rng.normal(size=(3, n))
    directions[1] = 0.0
    cases = [
        (rng.normal(size=n), directions, "random x, 3 directions, the second of them zero"),
        (np.zeros(n), directions, "x = 0"),
    ]
    if first:
        cases.append((rng.normal(size=n), rng.normal(size=(1, n)), "a single direction, (1, n)"))
    return cases


def _hessian_shaped(jaxpr, n: int) -> bool:
    """True when an equation of `jaxpr` (nested ones included) reads or writes an array whose last
    two axes are (n, n): the Hessian, or a batch of them."""
    for eqn in equations(jaxpr):
        for var in [*eqn.invars, *eqn.outvars]:
            shape = tuple(getattr(getattr(var, "aval", None), "shape", ()))
            if shape[-2:] == (n, n):
                return True
    return False


def _diagnose(actual, expected, f, x, directions, how: str, name: str) -> None:
    """Fails with the hint that names what a wrong array of curvatures is."""
    x64, d64 = np.asarray(x, np.float64), np.asarray(directions, np.float64)
    slope = d64 @ np.asarray(jax.grad(f)(x), np.float64)
    norms = np.sum(d64**2, axis=1)
    candidates = [
        (
            slope,
            "these are the slopes v · grad f(x), first derivatives: the curvature is the "
            "derivative of grad f in the direction v, dotted with v",
        ),
        (slope**2, "these are the squared slopes (v · grad f(x))^2, not v^T H v"),
        (0.5 * expected, "these are half the curvatures: v^T H v has no factor 1/2"),
        (-expected, "these are the curvatures with the wrong sign"),
        (
            np.where(norms > 0, expected / np.where(norms > 0, norms, 1.0), 0.0),
            "these are the curvatures divided by |v|^2: the exercise asks for v^T H v itself, "
            "which scales with the length of v",
        ),
        (
            np.full_like(expected, expected.sum()),
            "every entry is the sum over all directions: keep one curvature per direction",
        ),
    ]
    for candidate, message in candidates:
        require(
            not close(actual, candidate, rtol=1e-3, atol=1e-3),
            f"{how}, {message}. Expected {np.round(expected, 4).tolist()}, got "
            f"{np.round(actual, 4).tolist()}.",
        )
    if np.any(np.isnan(actual)):
        require(
            False,
            f"{how}, your result holds NaN ({np.round(actual, 4).tolist()}): did you divide by "
            "something that is 0 for a zero direction, or at x = 0? v^T H v needs no division.",
        )
    del x64
    worst = float(np.max(np.abs(actual - expected)) / max(float(np.max(np.abs(expected))), 1e-30))
    require(
        not close(actual, expected, rtol=1e-2, atol=1e-3),
        f"{how}, your values are close but not to float32 precision: off by {worst:.1e} of the "
        f"largest, where autodiff is off by about 1e-7 (expected {np.round(expected, 7).tolist()}, "
        f"got {np.round(actual, 7).tolist()}). That is the error of a numerical stand-in, such as "
        "finite differences of the gradient; differentiate the gradient with autodiff instead (a "
        "Hessian-vector product).",
    )
    require(
        name != _STEEP,
        f"{how}, entry i should be |v_i|^2, {np.round(expected, 4).tolist()}; got "
        f"{np.round(actual, 4).tolist()}. Here the gradient is about 1e4 everywhere and its changes "
        "are tiny: a difference of gradients at nearby points, a numerical stand-in such as finite "
        "differences, loses them in float32 rounding. Differentiate the gradient with autodiff "
        "instead (a Hessian-vector product), which is exact here.",
    )
    require(
        False,
        f"{how}, entry i should be directions[i] @ H(x) @ directions[i], "
        f"{np.round(expected, 4).tolist()}; got {np.round(actual, 4).tolist()}.",
    )


@exercise_checker(
    hints=(
        "The curvature along v is v · (H v), and the section on Hessian-vector products computes "
        "H v without the Hessian. Write it for one direction first, then map it over the rows of "
        "`directions`.",
        "For one direction: jnp.vdot(v, H v), a number. For all of them: jax.vmap over the rows, "
        "not a Python loop (the loop puts one copy of the work per row into the program) and not "
        "jax.hessian (an n x n array). Keep the whole v^T H v: no factor 1/2, no division by |v|^2.",
    )
)
def check_curvatures(curvatures: Callable) -> None:
    """Checks `curvatures(f, x, directions)` -> `(k,)`, entry i `directions[i] @ H(x) @
    directions[i]`: values against `jax.hessian`, under jit, no (n, n) array in the program, and
    a program whose size does not grow with k."""
    rng = np.random.default_rng(2)
    n = 5
    under_jit = []  # checked after every eager value, so that a wrong value is named first
    for index, (name, (f, hessian)) in enumerate(_functions().items()):
        jitted = jax.jit(lambda x, d, f=f: curvatures(f, x, d))
        for x, directions, case in _cases(rng, n, first=index == 0):
            x, directions = jnp.asarray(x, jnp.float32), jnp.asarray(directions, jnp.float32)
            k = directions.shape[0]
            how = f"for f = {name}, {case}"
            result = call_answer(curvatures, f, x, directions, what="curvatures")
            require(
                not (isinstance(result, tuple) and len(result) == 2),
                f"{how}, curvatures returned a pair: jax.jvp returns (value, tangent); H v is the "
                "tangent, [1].",
            )
            shape = np.shape(result) if hasattr(result, "shape") else None
            require(
                shape != (k, n),
                f"{how}, you returned a ({k}, {n}) array: H v for each direction. The curvature "
                "is one number per direction, v · (H v).",
            )
            require(
                shape != (n, n),
                f"{how}, you returned an ({n}, {n}) array, the Hessian: return one number per "
                "direction, v^T H v.",
            )
            actual = require_array(
                result, (k,), "curvatures' result", "one curvature per row of directions"
            )
            d64 = np.asarray(directions, np.float64)
            expected = np.einsum("kn,nm,km->k", d64, hessian(np.asarray(x, np.float64)), d64)
            if not close(actual, expected, rtol=RTOL, atol=ATOL):
                _diagnose(actual, expected, f, x, directions, how, name)
            under_jit.append((jitted, x, directions, expected, actual, how))
    for jitted, x, directions, expected, actual, how in under_jit:
        compiled = call_answer(jitted, x, directions, what="jax.jit(curvatures)")
        require(
            close(compiled, expected, rtol=RTOL, atol=ATOL),
            f"{how}, jax.jit(curvatures) gives {np.round(np.asarray(compiled, np.float64), 6).tolist()} "
            f"where the eager call gave the right {np.round(actual, 6).tolist()}: keep the function "
            "pure JAX (no NumPy conversion, no Python branch on values).",
        )
    big = 64
    f = _functions()["sum(log cosh x) + (sum x)^2"][0]
    x = jnp.linspace(-1.0, 1.0, big)
    sizes = {}
    for k in (2, 6):
        directions = jnp.ones((k, big)) / jnp.arange(1.0, k + 1.0)[:, None]
        try:
            jaxpr = jax.make_jaxpr(lambda x, d: curvatures(f, x, d))(x, directions)
        except Exception as error:  # the eager calls above worked: say what tracing changed
            raise CheckFailed(
                f"curvatures ran eagerly but could not be traced ({type(error).__name__}): keep "
                "it a pure JAX function."
            ) from error
        require(
            not _hessian_shaped(jaxpr, big),
            f"the values are right, but for n = {big} your program builds a ({big}, {big}) array, "
            "the Hessian: n times the work and memory of H v. Use Hessian-vector products "
            "(jax.jvp of jax.grad(f)) and dot each with its direction.",
        )
        sizes[k] = sum(1 for _ in equations(jaxpr))
    require(
        sizes[2] == sizes[6],
        f"the values are right, but your program has {sizes[2]} equations for 2 directions and "
        f"{sizes[6]} for 6: a Python loop over the directions is unrolled, one Hessian-vector "
        "product per row. jax.vmap the one-direction function over the rows instead.",
    )
