"""Checker for the autodiff chapter's exercise on a safe exprel with custom_jvp."""

from __future__ import annotations

from collections.abc import Callable

import jax
import jax.numpy as jnp
import numpy as np
import numpy.typing as npt

from ...checks import (
    call_answer,
    close,
    exercise_checker,
    require,
    require_array,
)
from .._jaxpr import primitive_names, traced_program

_EXPREL_POINTS = np.array([0.0, 1e-6, -1e-6, 1e-3, -2e-2, 0.5, -3.0, 10.0], dtype=np.float32)


def _exprel64(x: np.ndarray) -> np.ndarray:
    """(exp(x) - 1) / x in float64, 1 at 0."""
    x = np.asarray(x, np.float64)
    safe = np.where(x == 0.0, 1.0, x)
    return np.where(x == 0.0, 1.0, np.expm1(safe) / safe)


def _exprel_derivative64(x: npt.ArrayLike) -> np.ndarray:
    """d/dx exprel = (x e^x - e^x + 1) / x^2 in float64, by its series 1/2 + x/3 + x^2/8 near 0."""
    x = np.asarray(x, np.float64)
    safe = np.where(np.abs(x) < 1e-4, 1.0, x)
    direct = (safe * np.exp(safe) - np.expm1(safe)) / safe**2
    return np.where(np.abs(x) < 1e-4, 0.5 + x / 3.0 + x**2 / 8.0, direct)


def _scalar_results(fn: Callable, points: np.ndarray, what: str) -> np.ndarray:
    """fn at each point, as scalars; a structural hint when fn does not return one number."""
    values = []
    for point in points:
        value = call_answer(fn, jnp.float32(point), what=what)
        values.append(require_array(value, (), f"{what} at x = {point:g}", "one number per number"))
    return np.asarray(values, np.float64)


@exercise_checker(
    hints=(
        "Start with the value: jnp.expm1(x) / x, with 1 at x = 0 through a double where (a safe "
        "divisor in the branch you do not select). Then decorate it with @jax.custom_jvp and write "
        "its rule with @exprel.defjvp.",
        "The rule returns (exprel(x), derivative * x_dot), the derivative times the tangent. The "
        "derivative is (exp(x) - exprel(x)) / x away from 0; near 0 (say |x| < 1e-3) that "
        "formula subtracts two equal float32 numbers, so use the series 1/2 + x/3 there, with "
        "jnp.where (not Python if), so that it works under jit and vmap.",
    )
)
def check_exprel(exprel: Callable) -> None:
    """Checks `exprel(x) = (exp(x) - 1) / x` (1 at 0): values, derivatives at 0 and near it, under
    jit and vmap, and that a `custom_jvp` rule supplies the derivative."""
    points = _EXPREL_POINTS
    values = _scalar_results(exprel, points, "exprel")
    require(
        np.isnan(values[0]) or values[0] == 1.0,
        f"exprel(0) should be 1, the limit of (e^x - 1) / x at 0; your exprel(0) is {values[0]:.6g}.",
    )
    require(
        not np.isnan(values[0]),
        "exprel(0) is NaN: expm1(0) / 0 is 0 / 0. Its limit is 1: select 1 at x = 0 (with a safe "
        "divisor in the other branch).",
    )
    right = np.isclose(values, _exprel64(points), rtol=1e-5, atol=0)
    near_zero = np.abs(points) < 1e-2
    require(
        not (np.all(right[~near_zero]) and not np.all(right[near_zero])),
        f"your values are right away from 0 but wrong near it: at x = {points[near_zero].tolist()} "
        f"expected {np.round(_exprel64(points[near_zero]), 7).tolist()}, got "
        f"{np.round(values[near_zero], 7).tolist()}. exp(x) - 1 loses every digit of a small x in "
        "float32; jnp.expm1(x) computes it accurately.",
    )
    require(
        np.all(right),
        f"wrong values at x = {points.tolist()}: expected {np.round(_exprel64(points), 6).tolist()}, got "
        f"{np.round(values, 6).tolist()}.",
    )
    _, tangent = call_answer(
        lambda x: jax.jvp(exprel, (x,), (jnp.float32(3.0),)),
        jnp.float32(0.5),
        what="jax.jvp(exprel)",
    )
    require(
        close(tangent, 3.0 * _exprel_derivative64(0.5), rtol=1e-3, atol=0),
        "jax.jvp(exprel, (0.5,), (3.0,)) should be 3 times the derivative: the tangent output of a "
        "custom_jvp rule is the derivative times the tangent (x_dot), not the derivative alone.",
    )
    derivatives = _scalar_results(jax.grad(exprel), points, "jax.grad(exprel)")
    expected = _exprel_derivative64(points)
    require(
        not np.isnan(derivatives[0]),
        "jax.grad(exprel)(0.0) is NaN: the where trap. The branch you did not select, expm1(x) / x, "
        "has the derivative 0 / 0 at x = 0, and 0 * NaN is NaN. Give exprel its own derivative with "
        "@jax.custom_jvp, so autodiff never differentiates the division.",
    )
    require(
        derivatives[0] != 0.0,
        "jax.grad(exprel)(0.0) is 0, but the derivative at 0 is 1/2: with a double where, autodiff "
        "differentiates the branch you selected at 0, the constant 1. Define the derivative yourself "
        "with @jax.custom_jvp: (exp(x) - exprel(x)) / x, and 1/2 at x = 0.",
    )
    require(
        close(derivatives[0], 0.5, rtol=1e-3, atol=0),
        f"at x = 0 your derivative is {derivatives[0]:.4g}, but the limit of (exp(x) - exprel(x)) / x "
        "at 0 is 1/2 (the series of exprel is 1 + x/2 + x^2/6 + ..., so its derivative is "
        "1/2 + x/3 + ...): check the constant your rule uses at and near 0.",
    )
    tiny = np.abs(points) < 1e-4
    if not close(derivatives[tiny], expected[tiny], rtol=1e-3, atol=0):
        require(
            close(derivatives[~tiny], expected[~tiny], rtol=1e-3, atol=0),
            f"wrong derivatives: expected {np.round(expected, 5).tolist()} at x = {points.tolist()}, got "
            f"{np.round(derivatives, 5).tolist()}.",
        )
        require(
            False,
            f"the derivative is right at 0 and away from it, but near 0 (x = ±1e-6) it is "
            f"{np.round(derivatives[tiny], 4).tolist()} instead of about 0.5: (exp(x) - exprel(x)) / x "
            "subtracts two numbers that agree in all their float32 digits. Below a small |x| (say 1e-3) use "
            "the series 1/2 + x/3.",
        )
    require(
        close(derivatives, expected, rtol=1e-3, atol=0),
        f"wrong derivatives: expected {np.round(expected, 5).tolist()} at x = {points.tolist()}, got "
        f"{np.round(derivatives, 5).tolist()}.",
    )
    batched = call_answer(
        jax.jit(jax.vmap(jax.grad(exprel))),
        jnp.asarray(points),
        what="jax.jit(jax.vmap(jax.grad(exprel)))",
    )
    batched = require_array(
        batched, points.shape, "jax.jit(jax.vmap(jax.grad(exprel)))(x)", "one derivative per entry"
    )
    require(
        close(batched, expected, rtol=1e-3, atol=0),
        "the derivatives are right one by one, but wrong under jax.jit(jax.vmap(...)): use jnp.where, "
        "not Python if, inside the rule.",
    )
    names = primitive_names(traced_program(exprel, jnp.float32(0.5), what="exprel"))
    require(
        "custom_jvp_call" in names,
        "the numbers are right, but the exercise asks for the method: decorate exprel with "
        "@jax.custom_jvp and define its derivative with @exprel.defjvp.",
    )
