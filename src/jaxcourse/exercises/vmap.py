"""Checkers for the exercises of the chapter 'Automatic vectorisation with jax.vmap'."""

from __future__ import annotations

import contextlib
import itertools

import jax
import jax.numpy as jnp
import numpy as np

from ..checks import (
    call_answer,
    call_eager_and_jitted,
    close,
    exercise_checker,
    require,
    require_accepts,
    require_array,
)
from ._jaxpr import primitive_names, traced_program

_fresh_sizes = itertools.count(11)
"""Batch sizes used by no earlier check, so that no cached trace hides how an answer batches."""


def _shape(value) -> tuple | None:
    """The shape of an array answer; None for a tuple, list, dict or anything without one."""
    return tuple(value.shape) if hasattr(value, "shape") and hasattr(value, "dtype") else None


@contextlib.contextmanager
def _batching_depths():
    """Records, for every primitive JAX batches while the block runs, how many `vmap`s it sits
    under (a list of depths, empty when nothing was batched).

    It watches JAX's batching interpreter (internal API, pinned jax version); where that
    interpreter is missing, yields None and the method goes unchecked.
    """
    try:
        from jax._src.interpreters import batching

        batch_trace = batching.BatchTrace
        original = batch_trace.process_primitive
    except (ImportError, AttributeError):
        yield None
        return
    depths: list[int] = []

    def depth(trace) -> int:
        levels = 0
        while trace is not None:
            levels += isinstance(trace, batch_trace)
            trace = getattr(trace, "parent_trace", None)
        return levels

    def recording(self, *args, **kwargs):
        depths.append(depth(self))
        return original(self, *args, **kwargs)

    batch_trace.process_primitive = recording
    try:
        yield depths
    finally:
        batch_trace.process_primitive = original


def _vmap_depth(answer, *args, what: str) -> int | None:
    """How many nested `vmap`s the answer's program uses (0: none), traced afresh."""
    with _batching_depths() as depths:
        traced_program(answer, *args, what=what)
    if depths is None:
        return None
    return max(depths, default=0)


def _require_vmap(answer, args: tuple, levels: int, hint: str, what: str) -> None:
    depth = _vmap_depth(answer, *args, what=what)
    require(depth is None or depth >= levels, hint)


def _require_values(
    result, expected: np.ndarray, what: str, expected_words: str, wrong_values_hint: str
) -> None:
    """One array of the expected shape first (a hint naming what came instead), then its values."""
    result = require_array(result, expected.shape, what=what, expected=expected_words)
    require(close(result, expected, rtol=1e-4, atol=1e-5), wrong_values_hint)


# Exercise 1 ------------------------------------------------------------------------------------


@exercise_checker("Exercise 1 (a shared argument: in_axes=None)")
def check_predict_all(predict_all) -> None:
    """`predict_all(weights, bias, xs)` returns `xs @ weights.T + bias`, one row per example,
    computed with `jax.vmap` (eagerly and under `jax.jit`).

    The first test batch has as many examples as `weights` has rows, so that mapping over
    `weights` by mistake runs without an error and must be caught by the checks.
    """
    rng = np.random.default_rng(0)
    weights = jnp.asarray(rng.normal(size=(4, 3)), dtype=jnp.float32)
    bias = jnp.asarray(rng.normal(size=(4,)), dtype=jnp.float32)
    for n_examples in (4, 7, 1):
        xs = rng.normal(size=(n_examples, 3)).astype(np.float32)
        if n_examples == 7:
            xs[2] = 0.0  # an all-zero example: its prediction is the bias
        expected = xs.astype(np.float64) @ np.asarray(weights, np.float64).T + np.asarray(bias)
        for how, result in call_eager_and_jitted(predict_all, weights, bias, jnp.asarray(xs)):
            require(
                _shape(result) != (n_examples,),
                f"one number per example, shape {(n_examples,)}: vmap paired example i with row i of the "
                "weights and entry i of the bias. Share them with in_axes=(None, None, 0).",
            )
            require(
                _shape(result) != (4, n_examples)
                or not close(np.asarray(result).T, expected, rtol=1e-4, atol=1e-5),
                "the values are right but transposed: the batch axis of the result should come first "
                "(out_axes=0, the default).",
            )
            _require_values(
                result,
                expected,
                f"predict_all{how}",
                f"{n_examples} examples x 4 outputs",
                f"the shape is right but the values are not (batch of {n_examples} examples{how}): each "
                "example should meet the whole weight matrix and the whole bias, in_axes=(None, None, 0).",
            )
    n_fresh = next(_fresh_sizes)
    _require_vmap(
        predict_all,
        (weights, bias, jnp.ones((n_fresh, 3), jnp.float32)),
        1,
        "the values are right, but no vmap batched them: this exercise practises jax.vmap, so map "
        "affine over the rows with jax.vmap(affine, in_axes=(None, None, 0)) instead of writing "
        "xs @ weights.T + bias by hand.",
        what="predict_all",
    )


# Exercise 2 ------------------------------------------------------------------------------------

_POSITIVE_MEAN_ROWS = np.array(
    [
        [1.0, -2.0, 3.0, -4.0, 5.0],
        [-1.0, -2.0, -3.0, -4.0, -5.0],  # no positive entry: the answer is 0
        [0.5, 0.0, 0.0, 2.5, -1.0],  # zeros are not positive
        [2.0, 2.0, 2.0, 2.0, 2.0],  # ties
        [0.0, 0.0, 0.0, 0.0, 0.0],  # only zeros: no positive entry either
    ],
    dtype=np.float32,
)
_POSITIVE_MEAN_EXPECTED = np.array([3.0, 0.0, 1.5, 2.0, 0.0])

_BOOLEAN_MASK_HINT = (
    "vmap cannot index with a boolean mask (the result's size would depend on the values). Keep "
    "every entry and zero out the others with jnp.where."
)


@exercise_checker("Exercise 2 (a vmap-friendly positive mean)")
def check_positive_mean(positive_mean) -> None:
    """`positive_mean(x)` on one vector works eagerly, under `vmap` and under `jit(vmap(...))`."""
    rows = jnp.asarray(_POSITIVE_MEAN_ROWS)
    hints = (
        (IndexError, "", _BOOLEAN_MASK_HINT),
        (jax.errors.NonConcreteBooleanIndexError, "", _BOOLEAN_MASK_HINT),
    )
    single = call_answer(positive_mean, rows[0], what="positive_mean")
    require_array(single, (), what="positive_mean of one vector", expected="a scalar")
    results = {
        "jax.vmap(positive_mean)": call_answer(
            jax.vmap(positive_mean), rows, what="jax.vmap(positive_mean)", hints=hints
        ),
        "jax.jit(jax.vmap(positive_mean))": call_answer(
            jax.jit(jax.vmap(positive_mean)),
            rows,
            what="jax.jit(jax.vmap(positive_mean))",
            hints=hints,
        ),
    }
    for how, result in results.items():
        result = require_array(result, (len(rows),), what=how, expected="one number per row")
        require(
            bool(np.all(np.isfinite(result))),
            f"{how}: a row with no positive entry gave a NaN or inf, from dividing by a count of 0. "
            "Return 0.0 for such a row (jnp.maximum(count, 1) or jnp.where helps).",
        )
        require(
            not close(result, _POSITIVE_MEAN_ROWS.clip(min=0).mean(axis=1), rtol=1e-4, atol=1e-5),
            "you divided by the length of the row; divide by the number of positive entries.",
        )
        nonnegative_count = np.maximum((_POSITIVE_MEAN_ROWS >= 0).sum(axis=1), 1)
        require(
            not close(
                result,
                _POSITIVE_MEAN_ROWS.clip(min=0).sum(axis=1) / nonnegative_count,
                rtol=1e-4,
                atol=1e-5,
            ),
            "zeros are not positive: count the entries with x > 0, not x >= 0.",
        )
        require(
            close(result, _POSITIVE_MEAN_EXPECTED, rtol=1e-4, atol=1e-5),
            f"{how}: expected {_POSITIVE_MEAN_EXPECTED.tolist()} for the test rows, got "
            f"{result.round(4).tolist()}.",
        )


# Exercise 3 ------------------------------------------------------------------------------------


_ZIPPED_HINTS = (
    (
        ValueError,
        "inconsistent sizes",
        "a single vmap pairs xs[i] with ys[i], which needs len(xs) == len(ys); nest two vmaps to get "
        "every pair: the inner over ys with in_axes=(None, 0), the outer over xs with in_axes=(0, None)",
    ),
)


@exercise_checker("Exercise 3 (pairwise distances with nested vmap)")
def check_pairwise_sq_dists(pairwise_sq_dists) -> None:
    """`pairwise_sq_dists(xs, ys)[i, j] == sum((xs[i] - ys[j]) ** 2)`, shape (n, m), with two
    nested `vmap`s (eagerly and under `jax.jit`)."""
    rng = np.random.default_rng(1)
    for n, m in ((5, 4), (3, 3), (1, 6)):
        xs = rng.normal(size=(n, 3)).astype(np.float32)
        ys = rng.normal(size=(m, 3)).astype(np.float32)
        ys[0] = xs[0]  # a distance of exactly 0
        expected = ((xs[:, None, :].astype(np.float64) - ys[None, :, :]) ** 2).sum(axis=-1)
        results = call_eager_and_jitted(
            pairwise_sq_dists, jnp.asarray(xs), jnp.asarray(ys), hints=_ZIPPED_HINTS
        )
        for how, result in results:
            require(
                n == m
                or _shape(result) != (m, n)
                or not close(np.asarray(result).T, expected, rtol=1e-4, atol=1e-5),
                "the values are right but transposed: the outer vmap should run over xs, so that "
                "rows are indexed by xs (or set out_axes=1 on the outer vmap).",
            )
            require(
                n == m or _shape(result) != (n,),
                f"a single vmap pairs xs[i] with ys[i]; nest two vmaps to get every pair (shape {(n, m)}).",
            )
            _require_values(
                result,
                expected,
                f"pairwise_sq_dists{how}",
                f"{n} points of xs x {m} of ys",
                f"the shape is right but the values are not ({n} x {m} points{how}): is sq_dist applied "
                "to one point of xs and one point of ys?",
            )
    fresh = next(_fresh_sizes)
    _require_vmap(
        pairwise_sq_dists,
        (jnp.ones((fresh, 3)), jnp.ones((fresh + 1, 3))),
        2,
        "the values are right, but your program is not two nested vmaps (it broadcasts by hand, or "
        "vmaps once): map sq_dist over ys with jax.vmap(sq_dist, in_axes=(None, 0)), then map that "
        "over xs with in_axes=(0, None).",
        what="pairwise_sq_dists",
    )


# Exercise 4 ------------------------------------------------------------------------------------


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
    xs[5] = 0.0  # an example whose Poisson gradient is exactly zero: its norm is 0
    counts = rng.poisson(2.0, size=8).astype(np.float32)
    labels = np.where(rng.random(8) < 0.5, -1.0, 1.0).astype(np.float32)
    weights = np.array([0.3, -0.2, 0.5], dtype=np.float32)
    poisson = (jnp.asarray(weights), jnp.asarray(xs), jnp.asarray(counts))
    logistic = (jnp.asarray(weights), jnp.asarray(xs), jnp.asarray(labels))
    # 0.3 is below most per-example norms and the mean's norm; 1e3 clips nothing.
    return [
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
    candidates = [
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


@exercise_checker("Exercise 4 (clipped per-example gradients)")
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
