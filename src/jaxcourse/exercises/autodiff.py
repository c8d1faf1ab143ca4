"""Checkers for the exercises of the chapter 'Automatic differentiation'."""

from __future__ import annotations

from typing import Callable

import jax
import jax.numpy as jnp
import numpy as np

from ..checks import CheckFailed, call_answer, close, describe, exercise_checker, require, require_array
from ._jaxpr import equations, primitive_names, traced_program

# Exercise 1 ------------------------------------------------------------------------------------


def _linear_predict(params, x):
    return x @ params["w"] + params["b"]


def _regression_cases() -> list[tuple[dict, np.ndarray, np.ndarray, str]]:
    """(params, x, y, description): random data, an exact fit (zero gradient), one sample, d = 1."""
    rng = np.random.default_rng(15)
    cases = []
    for n, d, description in ((6, 3, "6 samples, 3 features"), (1, 2, "a single sample"), (5, 1, "one feature")):
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
            calls.append(1)
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
            require(False, f"{how}, the gradient is wrong: it should be the gradient of the loss you return.")
        require(
            len(calls) == 1,
            f"{how}, predict ran {len(calls)} times for one call of loss_and_grad: compute the predictions "
            "once, inside the loss, and return them as the auxiliary output (has_aux=True) instead of "
            "calling predict again.",
        )
        compiled = call_answer(jitted, *args, what="jax.jit(loss_and_grad)")
        _require_aux_structure(compiled, params, x.shape[0], f"{how}, under jax.jit")
        require(
            close(compiled, ((expected_loss, expected_predictions), expected_grads), rtol=1e-4, atol=1e-5),
            f"{how}, jax.jit(loss_and_grad) disagrees with the eager call.",
        )


# Exercise 2 ------------------------------------------------------------------------------------


def _hvp_functions() -> dict[str, Callable]:
    """Scalar functions of a vector with dense Hessians and no (n, n) constant inside."""
    return {
        "sum(log cosh x) + (sum x)^2": lambda x: jnp.sum(jnp.log(jnp.cosh(x))) + jnp.sum(x) ** 2,
        "log-sum-exp": lambda x: jax.nn.logsumexp(x),
        "a Rosenbrock valley": lambda x: jnp.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2),
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
                require(False, f"{how}, H v should be {np.round(expected, 4).tolist()}, got {np.round(actual, 4).tolist()}.")
            compiled = call_answer(jitted, x, v, what="jax.jit(hvp)")
            require(close(compiled, expected, rtol=1e-3, atol=1e-3), f"{how}, jax.jit(hvp) disagrees with the eager call.")
    big = 64
    f = _hvp_functions()["sum(log cosh x) + (sum x)^2"]
    x, v = jnp.linspace(-1.0, 1.0, big), jnp.ones(big)
    try:
        jaxpr = jax.make_jaxpr(lambda x, v: hvp(f, x, v))(x, v)
    except Exception as error:  # the eager calls above worked: say what tracing changed
        raise CheckFailed(f"hvp ran eagerly but could not be traced ({type(error).__name__}): keep it a pure JAX function.") from error
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
    _, tangent = call_answer(lambda x: jax.jvp(exprel, (x,), (jnp.float32(3.0),)), jnp.float32(0.5), what="jax.jvp(exprel)")
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
    batched = call_answer(jax.jit(jax.vmap(jax.grad(exprel))), jnp.asarray(points), what="jax.jit(jax.vmap(jax.grad(exprel)))")
    batched = require_array(batched, points.shape, "jax.jit(jax.vmap(jax.grad(exprel)))(x)", "one derivative per entry")
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


def _squared_error(params, x, y):
    return (x @ params["w"] + params["b"] - y) ** 2


def _clipping_case():
    """params, xs, ys, max_norm: four examples whose gradient norms are large, zero, exactly
    max_norm (x = 0, residual 1/2: gradient (0, 0, 1)), and small."""
    params = {"w": np.array([1.0, -2.0], np.float32), "b": np.float32(0.5)}
    xs = np.array([[3.0, 1.0], [1.0, 1.0], [0.0, 0.0], [0.1, 0.0]], np.float32)
    predictions = xs @ params["w"] + params["b"]
    ys = np.array([predictions[0] - 4.0, predictions[1], predictions[2] - 0.5, predictions[3] - 0.1], np.float32)
    return params, xs, ys, 1.0


def _clipped_reference(params, xs, ys, max_norm, per_leaf: bool = False):
    """Per-example gradients of the squared error, each scaled to a norm of at most max_norm, in
    float64 (per_leaf: each leaf clipped on its own, a typical mistake)."""
    residuals = xs.astype(np.float64) @ params["w"] + params["b"] - ys
    grads = {"w": 2.0 * residuals[:, None] * xs, "b": 2.0 * residuals}
    if per_leaf:
        norms = {k: np.sqrt(np.sum(g.reshape(len(ys), -1) ** 2, axis=1)) for k, g in grads.items()}
        scales = {k: np.minimum(1.0, max_norm / np.maximum(n, 1e-30)) for k, n in norms.items()}
        return {"w": grads["w"] * scales["w"][:, None], "b": grads["b"] * scales["b"]}
    norms = np.sqrt(np.sum(grads["w"] ** 2, axis=1) + grads["b"] ** 2)
    scale = np.minimum(1.0, max_norm / np.maximum(norms, 1e-30))
    return {"w": grads["w"] * scale[:, None], "b": grads["b"] * scale}, norms


@exercise_checker("Exercise 4 (per-example gradients, clipped)")
def check_clipped_grads(clipped_grads: Callable) -> None:
    """Checks `clipped_grads(loss, params, xs, ys, max_norm)`: per-example gradients of `loss`,
    each scaled down to a global norm of at most `max_norm`."""
    params, xs, ys, max_norm = _clipping_case()
    n, d = xs.shape
    args = (jax.tree.map(jnp.asarray, params), jnp.asarray(xs), jnp.asarray(ys), max_norm)
    expected, norms = _clipped_reference(params, xs, ys, max_norm)
    jitted = jax.jit(lambda *args: clipped_grads(_squared_error, *args))  # the loss is no array: closed over
    for how, run in (
        ("eagerly", lambda: call_answer(clipped_grads, _squared_error, *args, what="clipped_grads")),
        ("under jax.jit (max_norm traced)", lambda: call_answer(jitted, *args, what="jax.jit(clipped_grads)")),
    ):
        result = run()
        require(
            isinstance(result, dict) and set(result) == set(params),
            f"{how}, the result should be a dict like params, with keys {sorted(params)}, holding one "
            f"gradient per example; got {describe(result)}.",
        )
        shapes = {k: np.shape(v) for k, v in result.items()}
        require(
            shapes == {"w": (n, d), "b": (n,)},
            f"{how}, expected one gradient per example, a leading axis of {n}: shapes "
            f"{{'w': {(n, d)}, 'b': {(n,)}}}, got {shapes}. Map jax.grad(loss) over the examples with "
            "jax.vmap(..., in_axes=(None, 0, 0)) before clipping.",
        )
        require(
            not any(np.isnan(np.asarray(v)).any() for v in result.values()),
            f"{how}, the example whose gradient is zero came out NaN: 0 / 0 when you divide by its norm. "
            "Scale by jnp.minimum(1, max_norm / norm), which is 1 for a zero norm (max_norm / 0 = inf).",
        )
        if close(result, expected, rtol=1e-4, atol=1e-5):
            continue
        unclipped, _ = _clipped_reference(params, xs, ys, np.inf)
        require(
            not close(result, unclipped, rtol=1e-4, atol=1e-5),
            f"{how}, the gradients are right but not clipped: the first example's norm is {norms[0]:.2f} > "
            f"max_norm = {max_norm}; scale each example's gradient by min(1, max_norm / its norm).",
        )
        require(
            not close(result, _clipped_reference(params, xs, ys, max_norm, per_leaf=True), rtol=1e-4, atol=1e-5),
            f"{how}, you clipped each leaf (w, b) on its own; clip by the global norm of each example's "
            "gradient, sqrt(|g_w|^2 + g_b^2), the same scale for all its leaves.",
        )
        normalised = {k: v / np.maximum(norms, 1e-30).reshape(-1, *([1] * (v.ndim - 1))) * max_norm for k, v in unclipped.items()}
        require(
            not close(result, normalised, rtol=1e-4, atol=1e-5),
            f"{how}, every gradient was scaled to norm max_norm; only those above it are scaled down "
            f"(the last example, of norm {norms[-1]:.2f}, must stay as it is).",
        )
        require(False, f"{how}, wrong clipped gradients: expected {jax.tree.map(lambda a: np.round(a, 3).tolist(), expected)}.")
