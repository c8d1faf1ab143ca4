"""Checkers for the exercises of the chapter 'Automatic differentiation'."""

from __future__ import annotations

from collections.abc import Callable

import jax
import jax.numpy as jnp
import numpy as np

from ..checks import (
    CheckFailed,
    call_answer,
    close,
    describe,
    exercise_checker,
    require,
    require_array,
)
from ._jaxpr import equations, primitive_names, traced_program

# Exercise 1 ------------------------------------------------------------------------------------


def _linear_predict(params, x):
    return x @ params["w"] + params["b"]


def _regression_cases() -> list[tuple[dict, np.ndarray, np.ndarray, str]]:
    """(params, x, y, description): random data, an exact fit (zero gradient), one sample, d = 1."""
    rng = np.random.default_rng(15)
    cases = []
    for n, d, description in (
        (6, 3, "6 samples, 3 features"),
        (1, 2, "a single sample"),
        (5, 1, "one feature"),
    ):
        x = rng.normal(size=(n, d)).astype(np.float32)
        params = {"w": rng.normal(size=d).astype(np.float32), "b": np.float32(rng.normal())}
        cases.append((params, x, rng.normal(size=n).astype(np.float32), description))
    params, x, _, _ = cases[0]
    exact = (x @ params["w"] + params["b"]).astype(np.float32)
    cases.append((params, x, exact, "an exact fit, whose gradient is zero"))
    return cases


def _regression_reference(params, x, y):
    """((loss, predictions), grads) of the mean squared error, by hand in float64."""
    x64 = x.astype(np.float64)
    predictions = x64 @ params["w"].astype(np.float64) + np.float64(params["b"])
    residuals = predictions - y
    n = x.shape[0]
    grads = {"w": 2.0 / n * x64.T @ residuals, "b": 2.0 / n * residuals.sum()}
    return (np.mean(residuals**2), predictions), grads


def _require_aux_structure(result, params, n: int, how: str) -> None:
    """The structural check: ((loss, predictions), grads) with grads shaped like params."""
    expected = "((loss, predictions), grads), what jax.value_and_grad(..., has_aux=True) returns"
    require(
        isinstance(result, tuple) and len(result) == 2,
        f"{how}, your function should return {expected}; got {describe(result)}.",
    )
    value, grads = result
    require(
        isinstance(value, tuple) and len(value) == 2,
        f"{how}, the first item should be the pair (loss, predictions), got {describe(value)}. With "
        "has_aux=True, jax.value_and_grad returns ((value, aux), grad); jax.grad alone returns (grad, aux).",
    )
    loss, predictions = value
    require(np.shape(loss) == (), f"{how}, the loss should be a scalar, got {describe(loss)}.")
    require(
        np.shape(predictions) == (n,),
        f"{how}, the predictions (the aux output) should have shape ({n},), one per sample, got {describe(predictions)}.",
    )
    require(
        isinstance(grads, dict) and set(grads) == set(params),
        f"{how}, the gradient should be a dict with the keys of params {sorted(params)}, got "
        f"{describe(grads)}: differentiate with respect to params, not x (argnums names the position "
        "of the argument to differentiate).",
    )
    for name in params:
        require(
            np.shape(grads[name]) == np.shape(params[name]),
            f"{how}, grads[{name!r}] should have the shape of params[{name!r}], {np.shape(params[name])}, got "
            f"{np.shape(grads[name])}: differentiate with respect to params, not x.",
        )


@exercise_checker("Exercise 1 (loss, predictions and gradient in one pass)")
def check_loss_and_grad(loss_and_grad: Callable) -> None:
    """Checks `loss_and_grad(predict, params, x, y)` -> ((mse, predictions), grads), one forward pass."""
    jitted = jax.jit(lambda params, x, y: loss_and_grad(_linear_predict, params, x, y))
    for params, x, y, description in _regression_cases():
        calls = []

        def predict(params, x):
            calls.append(1)  # noqa: B023
            return _linear_predict(params, x)

        args = (jax.tree.map(jnp.asarray, params), jnp.asarray(x), jnp.asarray(y))
        eager = call_answer(loss_and_grad, predict, *args, what="loss_and_grad")
        how = f"on {description}"
        _require_aux_structure(eager, params, x.shape[0], how)
        (expected_loss, expected_predictions), expected_grads = _regression_reference(params, x, y)
        (loss, predictions), grads = eager
        require(
            close(predictions, expected_predictions, rtol=1e-4, atol=1e-5),
            f"{how}, the predictions are wrong: return predict(params, x) as the aux output.",
        )
        if not close(loss, expected_loss, rtol=1e-4, atol=1e-6):
            require(
                not close(loss, expected_loss * x.shape[0], rtol=1e-4, atol=1e-6),
                f"{how}, the loss is the sum of squared residuals; the exercise asks for their mean.",
            )
            require(False, f"{how}, the loss should be {expected_loss:.5f}, got {float(loss):.5f}.")
        if not close(grads, expected_grads, rtol=1e-4, atol=1e-5):
            require(
                False,
                f"{how}, the gradient is wrong: it should be the gradient of the loss you return.",
            )
        require(
            len(calls) == 1,
            f"{how}, predict ran {len(calls)} times for one call of loss_and_grad: compute the predictions "
            "once, inside the loss, and return them as the auxiliary output (has_aux=True) instead of "
            "calling predict again.",
        )
        compiled = call_answer(jitted, *args, what="jax.jit(loss_and_grad)")
        _require_aux_structure(compiled, params, x.shape[0], f"{how}, under jax.jit")
        require(
            close(
                compiled,
                ((expected_loss, expected_predictions), expected_grads),
                rtol=1e-4,
                atol=1e-5,
            ),
            f"{how}, jax.jit(loss_and_grad) disagrees with the eager call.",
        )


# Exercise 2 ------------------------------------------------------------------------------------


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


# Exercise 3 ------------------------------------------------------------------------------------

_EXPREL_POINTS = np.array([0.0, 1e-6, -1e-6, 1e-3, -2e-2, 0.5, -3.0, 10.0], dtype=np.float32)


def _exprel64(x: np.ndarray) -> np.ndarray:
    """(exp(x) - 1) / x in float64, 1 at 0."""
    x = np.asarray(x, np.float64)
    safe = np.where(x == 0.0, 1.0, x)
    return np.where(x == 0.0, 1.0, np.expm1(safe) / safe)


def _exprel_derivative64(x: np.ndarray) -> np.ndarray:
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


@exercise_checker("Exercise 3 (a safe exprel with custom_jvp)")
def check_exprel(exprel: Callable) -> None:
    """Checks `exprel(x) = (exp(x) - 1) / x` (1 at 0): values, derivatives at 0 and near it, under
    jit and vmap, and that a `custom_jvp` rule supplies the derivative."""
    points = _EXPREL_POINTS
    values = _scalar_results(exprel, points, "exprel")
    require(
        not np.isnan(values[0]),
        "exprel(0) is NaN: expm1(0) / 0 is 0 / 0. Its limit is 1: select 1 at x = 0 (with a safe "
        "divisor in the other branch).",
    )
    require(
        close(values, _exprel64(points), rtol=1e-5, atol=0),
        f"wrong values at x = {points.tolist()}: expected {np.round(_exprel64(points), 6).tolist()}, got "
        f"{np.round(values, 6).tolist()}. Use jnp.expm1(x) / x, accurate near 0, not (jnp.exp(x) - 1) / x.",
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


# Exercise 4 ------------------------------------------------------------------------------------


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


@exercise_checker("Exercise 4 (rows of a Jacobian with vmap of vjp)")
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
            "Jacobian (jax.jacrev pulls back every row of the identity). Pull back only the cotangents "
            "you were given: jax.vmap over the backward function of one jax.vjp.",
        )
        sizes[k] = sum(1 for _ in equations(jaxpr))
    require(
        sizes[2] == sizes[6],
        f"the values are right, but your program has {sizes[2]} equations for 2 cotangents and {sizes[6]} "
        "for 6: a Python loop over the rows is unrolled, one backward pass per row. jax.vmap the backward "
        "function instead, so one batched backward pass serves all rows.",
    )
