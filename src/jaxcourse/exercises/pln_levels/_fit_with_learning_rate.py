"""Checker for the PLN levels chapter's Exercise 3: one optimizer per learning rate."""

from __future__ import annotations

from collections.abc import Callable

import jax
import optax

from ...checks import (
    call_answer,
    close,
    exercise_checker,
    require,
)
from ...tracecount import count_compilations
from ._common import _fit_result, _small_data, default_optimizer

HINTS = {
    "check_fit_with_learning_rate": (
        "The optimizer is a static argument of level2.fit: jit's cache key is the optimizer"
        " object itself, so a new optax.adam(...) at every call compiles the whole fit "
        "again.",
        "Make one Adam object per learning rate and hand the same one back every time (a "
        "dict, or functools.cache on a small function that returns "
        "optax.adam(learning_rate)); cache the optimizer, never the fit's result, and use "
        "the learning rate you are given.",
    ),
}


def _adam_trace(data, n_iter: int, learning_rate: float):
    from ...pln import level2

    return level2.fit(data, n_iter, optimizer=optax.adam(learning_rate)).elbo_trace


@exercise_checker("one optimizer per learning rate")
def check_fit_with_learning_rate(fit_with_learning_rate: Callable) -> None:
    """`fit_with_learning_rate(data, n_iter, learning_rate)` must fit level 2 with Adam at that
    rate, and compile only once per rate: calling it again with the same rate traces nothing."""
    from ...pln import level2

    require(callable(fit_with_learning_rate), "pass the function itself.")
    data, n_iter, learning_rate = _small_data(), 6, 0.01
    result = _fit_result(
        call_answer(
            fit_with_learning_rate, data, n_iter, learning_rate, what="fit_with_learning_rate"
        ),
        n_iter,
        "fit_with_learning_rate",
    )
    expected = _adam_trace(data, n_iter, learning_rate)
    if not close(result.elbo_trace, expected, rtol=1e-4, atol=1e-3):
        default = level2.fit(data, n_iter, optimizer=default_optimizer()).elbo_trace
        require(
            not close(result.elbo_trace, default, rtol=1e-4, atol=1e-3),
            f"with learning_rate={learning_rate} you got the default optimizer's trace: the learning "
            "rate is ignored. Build Adam with the rate you are given.",
        )
        require(
            False,
            f"with learning_rate={learning_rate} the ELBO trace differs from level 2 with "
            "optax.adam(learning_rate).",
        )
    with count_compilations() as count:
        for _ in range(2):
            jax.block_until_ready(
                call_answer(
                    fit_with_learning_rate,
                    data,
                    n_iter,
                    learning_rate,
                    what="fit_with_learning_rate",
                )
            )
    require(
        count.traces == 0,
        f"two more calls with the same learning rate traced {count.traces} times: each call builds a "
        "new optax.adam object, and the optimizer is a static argument, so every new object is a new "
        "cache key. Build one optimizer per learning rate and reuse it (for example, functools.cache "
        "on a function that makes it).",
    )
    other = call_answer(
        fit_with_learning_rate,
        _small_data(seed=9),
        n_iter,
        learning_rate,
        what="fit_with_learning_rate",
    )
    other = _fit_result(other, n_iter, "fit_with_learning_rate")
    require(
        not close(other.elbo_trace, expected),
        "new data with the same learning rate gave the old result: cache the optimizer, not the fit.",
    )
