"""Checker of the vmap chapter's exercise on clipped per-example gradients."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from ...checks import (
    call_eager_and_jitted,
    close,
    exercise_checker,
    require,
    require_accepts,
    require_array,
)
from .._jaxpr import primitive_names, traced_program
from ._common import _fresh_sizes, _require_vmap, _shape


def poisson_loss(weights, x, y):
    """Negative Poisson log-likelihood of one count y with log-mean x . w (up to log y!)."""
    z = x @ weights
    return jnp.exp(z) - y * z


def logistic_loss(weights, x, y):
    """Logistic loss of one label y in {-1, 1} with score x . w: log(1 + exp(-y x . w))."""
    return jnp.logaddexp(0.0, -y * (x @ weights))


def _per_example_grads(loss, weights, xs, ys) -> np.ndarray:
    """The checker's own per-example gradients: vmap of grad, in float64 under enable_x64."""
    with jax.enable_x64(True):
        args = (jnp.asarray(np.asarray(a, np.float64)) for a in (weights, xs, ys))
        return np.asarray(jax.vmap(jax.grad(loss), in_axes=(None, 0, 0))(*args))


def _clipped_reference(grads: np.ndarray, max_norm: float) -> np.ndarray:
    norms = np.linalg.norm(grads, axis=1, keepdims=True)
    factors = np.minimum(1.0, max_norm / np.where(norms > 0, norms, 1.0))
    return (grads * factors).mean(axis=0)


def _clipping_cases() -> list[tuple[str, object, tuple, float]]:
    rng = np.random.default_rng(2)
    xs = rng.normal(size=(8, 3)).astype(np.float32)
    no_zero = xs.copy()  # first, no zero gradient: a wrong formula is named before any NaN
    xs[5] = 0.0  # an example whose gradient is exactly zero (both losses): its norm is 0
    counts = rng.poisson(2.0, size=8).astype(np.float32)
    labels = np.where(rng.random(8) < 0.5, -1.0, 1.0).astype(np.float32)
    weights = np.array([0.3, -0.2, 0.5], dtype=np.float32)
    poisson = (jnp.asarray(weights), jnp.asarray(xs), jnp.asarray(counts))
    logistic = (jnp.asarray(weights), jnp.asarray(xs), jnp.asarray(labels))
    poisson_no_zero = (jnp.asarray(weights), jnp.asarray(no_zero), jnp.asarray(counts))
    # 0.3 is below most per-example norms and the mean's norm; 1e3 clips nothing.
    return [
        ("poisson_loss, max_norm=0.3, no zero gradient", poisson_loss, poisson_no_zero, 0.3),
        ("poisson_loss, max_norm=0.3", poisson_loss, poisson, 0.3),
        ("poisson_loss, max_norm=1000 (nothing to clip)", poisson_loss, poisson, 1e3),
        ("logistic_loss, max_norm=0.1", logistic_loss, logistic, 0.1),
    ]


def _wrong_clipping_hint(
    result: np.ndarray,
    grads: np.ndarray,
    expected: np.ndarray,
    max_norm: float,
    poisson_expected: np.ndarray,
) -> str:
    """The hint naming the clipping mistake that explains `result`, else a general one."""
    unclipped = grads.mean(axis=0)
    norms = np.linalg.norm(grads, axis=1, keepdims=True)
    safe = np.where(norms > 0, norms, 1.0)
    coordinate_norms = np.linalg.norm(grads, axis=0, keepdims=True)
    candidates = [
        (
            (grads * np.minimum(1.0, max_norm / coordinate_norms)).mean(axis=0),
            "you took the norms over the examples (axis=0), one per coordinate: clip by the norm of "
            "each example's gradient, taken over its coordinates (axis=1).",
        ),
        (
            (grads * min(1.0, max_norm / np.linalg.norm(grads))).mean(axis=0),
            "you used one norm for the whole batch of gradients (jnp.linalg.norm of the matrix): "
            "each example's gradient has its own norm, norm(g_i), taken with axis=1.",
        ),
        (
            (grads * np.maximum(1.0, max_norm / safe)).mean(axis=0),
            "you scaled by max(1, max_norm / norm) (jnp.maximum), which enlarges the small "
            "gradients and clips nothing: scale by jnp.minimum(1.0, max_norm / norm).",
        ),
        (
            (grads * np.minimum(1.0, max_norm / np.where(norms > 0, norms**2, 1.0))).mean(axis=0),
            "you divided max_norm by the squared norm (jnp.sum(g ** 2)): clip by the L2 norm itself, "
            "jnp.linalg.norm(g_i), the square root of that sum.",
        ),
        (
            poisson_expected,
            "your per-example gradients are Poisson's although the loss passed in is "
            "another: differentiate the `loss` you are given, jax.vmap(jax.grad(loss), "
            "in_axes=(None, 0, 0)), instead of a gradient derived by hand.",
        ),
        (
            unclipped,
            "this is the plain mean gradient: no example was clipped. Scale each per-example "
            "gradient by min(1, max_norm / its norm).",
        ),
        (
            unclipped * min(1.0, max_norm / np.linalg.norm(unclipped)),
            "you clipped the mean gradient. Clip each example's gradient first, then average.",
        ),
        (expected * len(grads), "this is the sum of the clipped gradients; return their mean."),
        (
            np.clip(grads, -max_norm, max_norm).mean(axis=0),
            "you clipped each coordinate to [-max_norm, max_norm]; clip the L2 norm of each whole "
            "per-example gradient: scale it by min(1, max_norm / norm(g_i)).",
        ),
        (
            np.minimum(grads, max_norm).mean(axis=0),
            "you capped each coordinate at max_norm (from above only, as jnp.clip(g, max=max_norm) "
            "does): clip the L2 norm of each whole per-example gradient, scaling it by "
            "min(1, max_norm / norm(g_i)).",
        ),
        (
            (grads * max_norm / np.where(norms > 0, norms, 1.0)).mean(axis=0),
            "you rescaled every gradient to norm max_norm, also the small ones: scale by "
            "min(1, max_norm / norm), which leaves gradients already within max_norm alone.",
        ),
    ]
    for candidate, hint in candidates:
        if close(result, candidate, rtol=1e-3, atol=1e-4):
            return hint
    return (
        "wrong values. Check the per-example gradients (what jax.vmap(jax.grad(loss), "
        "in_axes=(None, 0, 0)) gives), then the clipping: each g_i times min(1, max_norm / "
        "norm(g_i)), then the mean over the examples."
    )


_PYTHON_MIN_HINTS = (
    (
        jax.errors.ConcretizationTypeError,
        "",
        "a Python `if`, `float()` or `min()` met a traced value (under vmap or jit). Clip inside the "
        "computation with jnp.minimum or jnp.where",
    ),
)


def _equation_count(answer, args: tuple, what: str) -> int:
    """How many equations, nested ones included, the answer's program has for these arguments."""
    return len(primitive_names(traced_program(answer, *args, what=what, hints=_PYTHON_MIN_HINTS)))


@exercise_checker(
    hints=(
        "First get one gradient per example from the loss you are given: jax.grad differentiates one example's loss, and jax.vmap maps it over the examples with w shared.",
        "grads = jax.vmap(jax.grad(loss), in_axes=(None, 0, 0))(w, xs, ys) has shape (n, len(w)). Take each row's L2 norm (axis=1, keepdims=True), scale each row by jnp.minimum(1.0, max_norm / norm), then average over the examples (axis=0). An all-zero gradient gives max_norm / 0 = inf, which jnp.minimum turns into 1; no Python min() or if, since max_norm is traced under jit.",
    )
)
def check_clipped_mean_grad(clipped_mean_grad) -> None:
    """`clipped_mean_grad(loss, weights, xs, ys, max_norm)`: the mean of the per-example gradients
    of any per-example `loss(weights, x, y)`, each clipped to L2 norm at most `max_norm`; eagerly
    and under `jax.jit` with `max_norm` traced, for the Poisson and the logistic loss. The
    gradients must come from autodiff of `loss` (a gradient derived by hand for one loss fails on
    the other), batched by vmap: the program does not grow with the number of examples."""
    cases = _clipping_cases()
    require_accepts(
        clipped_mean_grad, poisson_loss, *cases[0][2], cases[0][3], what="clipped_mean_grad"
    )
    for case, loss, args, max_norm in cases:
        grads = _per_example_grads(loss, *args)
        expected = _clipped_reference(grads, max_norm)
        poisson_expected = _clipped_reference(_per_example_grads(poisson_loss, *args), max_norm)
        results = call_eager_and_jitted(
            lambda *a, loss=loss: clipped_mean_grad(loss, *a),
            *args,
            max_norm,
            what="clipped_mean_grad",
            hints=_PYTHON_MIN_HINTS,
        )
        for how, result in results:
            require(
                _shape(result) != grads.shape,
                f"you returned one gradient per example, shape {grads.shape}; clip each of them, then "
                "return their mean over the examples.",
            )
            result = require_array(
                result, expected.shape, what=f"clipped_mean_grad{how}", expected="the shape of w"
            )
            require(
                bool(np.all(np.isfinite(result))),
                f"with {case} the result has a NaN or inf: one example's gradient is exactly zero, so "
                "max_norm / norm divides by 0. jnp.minimum(1.0, max_norm / norm) gives 1 there (inf is "
                "fine inside the minimum); dividing the gradient by its norm gives NaN.",
            )
            if not close(result, expected, rtol=1e-3, atol=1e-4):
                require(
                    False,
                    f"with {case}{how}: "
                    + _wrong_clipping_hint(result, grads, expected, max_norm, poisson_expected),
                )
    weights = _clipping_cases()[0][2][0]
    small, large = next(_fresh_sizes), next(_fresh_sizes) + 8
    sizes = [
        _equation_count(
            lambda w, xs, ys, m: clipped_mean_grad(poisson_loss, w, xs, ys, m),
            (weights, jnp.ones((n, 3)), jnp.ones((n,)), 0.3),
            what="clipped_mean_grad",
        )
        for n in (small, large)
    ]
    require(
        sizes[0] == sizes[1],
        f"the values are right, but your program has {sizes[0]} operations for {small} examples and "
        f"{sizes[1]} for {large}: a Python loop over the examples unrolls into the program. Batch "
        "them with jax.vmap(jax.grad(loss), in_axes=(None, 0, 0)).",
    )
    _require_vmap(
        lambda w, xs, ys, m: clipped_mean_grad(poisson_loss, w, xs, ys, m),
        (weights, jnp.ones((small, 3)), jnp.ones((small,)), 0.3),
        1,
        "the values are right, but no vmap batched the examples: compute the per-example gradients "
        "with jax.vmap(jax.grad(loss), in_axes=(None, 0, 0)).",
        what="clipped_mean_grad",
    )
