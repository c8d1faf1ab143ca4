"""Checker for the PLN levels chapter's exercise on one optimizer per learning rate."""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable, Iterator

import jax
import numpy as np
import optax

from ...checks import (
    call_answer,
    close,
    exercise_checker,
    require,
)
from ...tracecount import count_compilations
from ._common import _as_tuple, _fit_result, _small_data, default_optimizer

OTHER_RATE = 0.02
"""A second learning rate, called between two calls with the first one."""

_UNHASHABLE = (
    TypeError,
    "unhashable",
    "your function hashes its arguments (functools.cache on it, or a dict keyed on them), and the "
    "data hold JAX arrays, which cannot be hashed: cache the optimizer, keyed on the learning rate "
    "alone, never the fit",
)


@functools.cache
def _reference_adam(learning_rate: float) -> optax.GradientTransformation:
    """The checker's own Adam per rate, made once, so that checking again compiles no reference."""
    return optax.adam(learning_rate)


def _adam_fit(data, n_iter: int, learning_rate: float):
    from ...pln import level2

    return level2.fit(data, n_iter, optimizer=_reference_adam(learning_rate))


@contextlib.contextmanager
def _other_levels_watched() -> Iterator[list]:
    """Records which levels other than 2 the block fits with (their module's `fit` is wrapped
    for the block's duration, then put back as it was)."""
    from ...pln import LEVELS

    used: list[int] = []
    originals = {level: module.fit for level, module in LEVELS.items() if level != 2}

    def watched(level: int, fit: Callable) -> Callable:
        @functools.wraps(fit)
        def fit_and_record(*args, **kwargs):
            used.append(level)
            return fit(*args, **kwargs)

        return fit_and_record

    try:
        for level, fit in originals.items():
            setattr(LEVELS[level], "fit", watched(level, fit))  # noqa: B010 (patches a module function)
        yield used
    finally:
        for level, fit in originals.items():
            setattr(LEVELS[level], "fit", fit)  # noqa: B010 (patches a module function)


def _call(fit_with_learning_rate: Callable, data, n_iter: int, learning_rate: float):
    return call_answer(
        fit_with_learning_rate,
        data,
        n_iter,
        learning_rate,
        what="fit_with_learning_rate",
        hints=(_UNHASHABLE,),
    )


def _traces_of(fit_with_learning_rate: Callable, data, n_iter: int, learning_rate: float) -> int:
    with count_compilations() as count:
        jax.block_until_ready(_call(fit_with_learning_rate, data, n_iter, learning_rate))
    return count.traces


@exercise_checker(
    hints=(
        "The optimizer is a static argument of level2.fit: jit's cache key is the optimizer"
        " object itself, so a new optax.adam(...) at every call compiles the whole fit "
        "again.",
        "Make one Adam object per learning rate and hand the same one back every time (a "
        "dict, or functools.cache on a small function that returns "
        "optax.adam(learning_rate)), keeping every rate's, not only the last one; cache the "
        "optimizer, never the fit's result, and use the learning rate you are given.",
    )
)
def check_fit_with_learning_rate(fit_with_learning_rate: Callable) -> None:
    """`fit_with_learning_rate(data, n_iter, learning_rate)` must fit level 2 with Adam at that
    rate, and compile only once per rate: calling it again with the same rate traces nothing,
    also after a call with another rate, and new data or a new rate give their own fits."""
    from ...pln import level2

    require(callable(fit_with_learning_rate), "pass the function itself.")
    data, n_iter, learning_rate = _small_data(), 6, 0.01
    with _other_levels_watched() as used:
        result = _call(fit_with_learning_rate, data, n_iter, learning_rate)
    result = _fit_result(result, n_iter, "fit_with_learning_rate")
    expected = _adam_fit(data, n_iter, learning_rate)
    if not close(result.elbo_trace, expected.elbo_trace, rtol=1e-4, atol=1e-3):
        default = level2.fit(data, n_iter, optimizer=default_optimizer()).elbo_trace
        require(
            not close(result.elbo_trace, default, rtol=1e-4, atol=1e-3),
            f"with learning_rate={learning_rate} you got the default optimizer's trace: the learning "
            "rate is ignored. Build Adam with the rate you are given.",
        )
        require(
            False,
            f"with learning_rate={learning_rate} your ELBO trace "
            f"{np.round(np.asarray(result.elbo_trace, dtype=float), 2).tolist()} differs from level "
            f"2's with optax.adam({learning_rate}), "
            f"{np.round(np.asarray(expected.elbo_trace, dtype=float), 2).tolist()}: your fit took "
            "other steps than Adam's at this learning rate (another optimizer, or another rate).",
        )
    require(
        not used,
        f"your function fits with pln.level{used[0] if used else ''}.fit, not with level 2: the "
        "exercise is about level 2's one compiled program, pln.level2.fit, with Adam at that rate.",
    )
    require(
        close(_as_tuple(result.variational), tuple(expected.variational), rtol=1e-6, atol=5e-6),
        "your ELBO trace is close to Adam's, but your final variational parameters are not: your "
        "optimizer is close to Adam but not Adam (optax.adamw, say, also decays the parameters). "
        "Use optax.adam(learning_rate).",
    )
    traces = sum(_traces_of(fit_with_learning_rate, data, n_iter, learning_rate) for _ in range(2))
    require(
        traces == 0,
        f"two more calls with the same learning rate traced {traces} time(s): each call builds a "
        "new optax.adam object, and the optimizer is a static argument, so every new object is a new "
        "cache key. Build one optimizer per learning rate and reuse it (for example, functools.cache "
        "on a function that makes it).",
    )
    other = _fit_result(
        _call(fit_with_learning_rate, _small_data(seed=9), n_iter, learning_rate),
        n_iter,
        "fit_with_learning_rate",
    )
    require(
        not close(other.elbo_trace, expected.elbo_trace),
        "new data with the same learning rate gave the old result: cache the optimizer, not the fit.",
    )
    other = _fit_result(
        _call(fit_with_learning_rate, data, n_iter, OTHER_RATE), n_iter, "fit_with_learning_rate"
    )
    require(
        not close(other.elbo_trace, expected.elbo_trace, rtol=1e-4, atol=1e-3),
        f"with learning_rate={OTHER_RATE} you got the trace of learning_rate={learning_rate}, the "
        "rate of an earlier call: the optimizer you keep does not follow the rate. Key it on the "
        "learning rate.",
    )
    traces = _traces_of(fit_with_learning_rate, data, n_iter, learning_rate)
    require(
        traces == 0,
        f"after a call with learning_rate={OTHER_RATE}, a call with the earlier learning rate "
        f"{learning_rate} traced {traces} time(s): the optimizer made for {learning_rate} was not "
        "kept. Keep one per learning rate (a dict keyed by the rate, or functools.cache), not only "
        "the last one.",
    )
