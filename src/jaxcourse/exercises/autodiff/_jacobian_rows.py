"""Checker for the autodiff chapter's exercise on rows of a Jacobian with vmap of vjp."""

from __future__ import annotations

from collections.abc import Callable

import jax
import jax.numpy as jnp
import numpy as np

from ...checks import (
    call_answer,
    close,
    exercise_checker,
    require,
    require_array,
)
from .._jaxpr import equations, traced_program


def _wave(x):
    """R^5 -> R^7 with no (7, 5) array inside: two elementwise maps and a cumulative sum."""
    return jnp.concatenate([jnp.sin(x) * x, jnp.cumsum(jnp.cos(x))[:2]])


def _pairs(x):
    """R^4 -> R^6: products of neighbours and a shifted exponential."""
    return jnp.concatenate([x[:-1] * x[1:], jnp.exp(0.5 * x[:3])])


_JACOBIAN_CASES = (
    ("a map from 5 inputs to 7 outputs", _wave, np.linspace(-1.0, 1.5, 5, dtype=np.float32), 7),
    ("a map from 4 inputs to 6 outputs", _pairs, np.array([0.5, -1.0, 2.0, 0.25], np.float32), 6),
)


def _counted(f):
    """f, and a list that grows by one at each Python call of it."""
    calls = []

    def counted(x):
        calls.append(1)
        return f(x)

    return counted, calls


def _shapes(jaxpr) -> set[tuple]:
    """The shape of every array an equation of `jaxpr` (nested ones included) reads or writes."""
    return {
        tuple(var.aval.shape)
        for eqn in equations(jaxpr)
        for var in [*eqn.invars, *eqn.outvars]
        if hasattr(getattr(var, "aval", None), "shape")
    }


@exercise_checker(
    hints=(
        "jax.vjp(f, x) runs the forward pass once and returns (f(x), backward); backward(u) pulls "
        "one cotangent u of shape (m,) back to u @ J, of shape (n,). You need it for every row of "
        "cotangents.",
        "Call jax.vjp once, outside any loop, then jax.vmap a function of one cotangent over the "
        "rows: jax.vmap(lambda u: backward(u)[0])(cotangents). backward returns a tuple (one entry "
        "per argument of f), hence the [0]. No jax.jacrev or jax.jacfwd (they build the whole "
        "Jacobian) and no Python loop (one backward pass per row in the program).",
    )
)
def check_jacobian_rows(jacobian_rows: Callable) -> None:
    """Checks `jacobian_rows(f, x, cotangents)` -> cotangents @ J(x), `(k, n)`, from one forward
    pass of `f`, without the `(m, n)` Jacobian, and with a program whose size does not grow with k."""
    rng = np.random.default_rng(4)
    for (description, f, x, m), counts in zip(_JACOBIAN_CASES, ((3, 1), (3,))):
        n = x.shape[0]
        for k in counts:
            cotangents = rng.normal(size=(k, m)).astype(np.float32)
            expected = cotangents.astype(np.float64) @ np.asarray(
                jax.jacrev(f)(jnp.asarray(x)), np.float64
            )
            counted, calls = _counted(f)
            result = call_answer(
                jacobian_rows,
                counted,
                jnp.asarray(x),
                jnp.asarray(cotangents),
                what="jacobian_rows",
            )
            require(
                not (isinstance(result, tuple) and len(result) == 1),
                "you returned a tuple of one array: the backward function of jax.vjp returns one "
                "cotangent per argument of f, as a tuple. Take its [0] inside the vmapped function.",
            )
            result = require_array(
                result,
                (k, n),
                f"jacobian_rows on {description} with {k} cotangent(s)",
                "one row per cotangent, one column per input of f: (k, n)",
            )
            require(
                close(result, expected, rtol=1e-4, atol=1e-5),
                f"on {description}, row i should be cotangents[i] @ J(x); expected "
                f"{np.round(expected, 4).tolist()}, got {np.round(np.asarray(result, np.float64), 4).tolist()}.",
            )
            require(
                len(calls) == 1,
                f"the values are right, but f ran {len(calls)} times for {k} cotangent(s): one jax.vjp per row "
                "repeats the forward pass. Call jax.vjp(f, x) once and jax.vmap its backward function over "
                "the cotangents.",
            )
        jitted = jax.jit(lambda x, u, f=f: jacobian_rows(f, x, u))
        compiled = call_answer(
            jitted, jnp.asarray(x), jnp.asarray(cotangents), what="jax.jit(jacobian_rows)"
        )
        require(
            close(compiled, expected, rtol=1e-4, atol=1e-5),
            "jax.jit(jacobian_rows) disagrees with the eager call.",
        )
    description, f, x, m = _JACOBIAN_CASES[0]
    n = x.shape[0]
    sizes = {}
    for k in (2, 6):
        jaxpr = traced_program(
            lambda x, u: jacobian_rows(f, x, u),
            jnp.asarray(x),
            jnp.ones((k, m), jnp.float32),
            what="jacobian_rows",
        )
        shapes = _shapes(jaxpr)
        require(
            (m, n) not in shapes and (n, m) not in shapes and (m, m) not in shapes,
            f"the values are right, but your program builds an ({m}, {n}) or ({m}, {m}) array: the whole "
            "Jacobian (what jax.jacrev or jax.jacfwd build: every row, or every column, of it). Pull back only the cotangents "
            "you were given: jax.vmap over the backward function of one jax.vjp.",
        )
        sizes[k] = sum(1 for _ in equations(jaxpr))
    require(
        sizes[2] == sizes[6],
        f"the values are right, but your program has {sizes[2]} equations for 2 cotangents and {sizes[6]} "
        "for 6: a Python loop over the rows is unrolled, one backward pass per row. jax.vmap the backward "
        "function instead, so one batched backward pass serves all rows.",
    )
