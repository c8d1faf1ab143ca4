"""Checker for the autodiff chapter's Exercise 2: a Hessian-vector product without the Hessian."""

from __future__ import annotations

from collections.abc import Callable

import jax
import jax.numpy as jnp
import numpy as np

from ...checks import CheckFailed, call_answer, close, exercise_checker, require, require_array
from .._jaxpr import equations


def _hvp_functions() -> dict[str, Callable]:
    """Scalar functions of a vector with dense Hessians and no (n, n) constant inside."""
    return {
        "sum(log cosh x) + (sum x)^2": lambda x: jnp.sum(jnp.log(jnp.cosh(x))) + jnp.sum(x) ** 2,
        "log-sum-exp": lambda x: jax.nn.logsumexp(x),
        "a Rosenbrock valley": lambda x: jnp.sum(
            100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2
        ),
    }


def _square_shaped(jaxpr, n: int) -> bool:
    """True when an equation of `jaxpr` (nested ones included) reads or writes an (n, n) array."""
    for eqn in equations(jaxpr):
        for var in [*eqn.invars, *eqn.outvars]:
            if tuple(getattr(getattr(var, "aval", None), "shape", ())) == (n, n):
                return True
    return False


@exercise_checker("Exercise 2 (Hessian-vector product without the Hessian)")
def check_hvp(hvp: Callable) -> None:
    """Checks `hvp(f, x, v)` -> H(x) v for the Hessian H of a scalar `f`, without an (n, n) array."""
    rng = np.random.default_rng(2)
    n = 5
    for name, f in _hvp_functions().items():
        jitted = jax.jit(lambda x, v, f=f: hvp(f, x, v))
        through_hessian = jax.jit(lambda x, v, f=f: jax.hessian(f)(x) @ v)
        for x, v, case in (
            (rng.normal(size=n), rng.normal(size=n), "random x and v"),
            (np.zeros(n), rng.normal(size=n), "x = 0"),
            (rng.normal(size=n), np.zeros(n), "v = 0"),
        ):
            x, v = jnp.asarray(x, jnp.float32), jnp.asarray(v, jnp.float32)
            how = f"for f = {name}, {case}"
            result = call_answer(hvp, f, x, v, what="hvp")
            require(
                not (isinstance(result, tuple) and len(result) == 2),
                f"{how}, hvp returned a pair: jax.jvp returns (value, tangent); the product is the tangent, [1].",
            )
            actual = require_array(result, (n,), "hvp's result", "H v, one entry per entry of x")
            expected = through_hessian(x, v)
            if not close(actual, expected, rtol=1e-3, atol=1e-3):
                gradient_times_v = np.asarray(jax.grad(f)(x)) * np.asarray(v)
                require(
                    not close(actual, gradient_times_v, rtol=1e-3, atol=1e-3),
                    f"{how}, you returned grad(f)(x) * v, first derivatives: H v is the derivative of "
                    "grad(f) in the direction v, jax.jvp(jax.grad(f), (x,), (v,))[1].",
                )
                require(
                    False,
                    f"{how}, H v should be {np.round(expected, 4).tolist()}, got {np.round(actual, 4).tolist()}.",
                )
            compiled = call_answer(jitted, x, v, what="jax.jit(hvp)")
            require(
                close(compiled, expected, rtol=1e-3, atol=1e-3),
                f"{how}, jax.jit(hvp) disagrees with the eager call.",
            )
    big = 64
    f = _hvp_functions()["sum(log cosh x) + (sum x)^2"]
    x, v = jnp.linspace(-1.0, 1.0, big), jnp.ones(big)
    try:
        jaxpr = jax.make_jaxpr(lambda x, v: hvp(f, x, v))(x, v)
    except Exception as error:  # the eager calls above worked: say what tracing changed
        raise CheckFailed(
            f"hvp ran eagerly but could not be traced ({type(error).__name__}): keep it a pure JAX function."
        ) from error
    require(
        not _square_shaped(jaxpr, big),
        f"the values are right, but for n = {big} your program builds a ({big}, {big}) array, the "
        "Hessian: that is n times the work and memory of H v. Differentiate the gradient in the direction "
        "v instead: jax.jvp(jax.grad(f), (x,), (v,))[1] (forward over reverse).",
    )
