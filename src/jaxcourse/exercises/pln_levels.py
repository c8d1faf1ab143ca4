"""Checkers for the exercises of the chapter 'Fitting PLN at five levels of JIT'."""

from __future__ import annotations

import functools
import inspect
import warnings
from collections.abc import Callable
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import optax

from ..checks import (
    call_answer,
    close,
    describe,
    exercise_checker,
    require,
)
from ..tracecount import count_compilations
from ._jaxpr import primitive_names, traced_program

# Exercise 1 ------------------------------------------------------------------------------------

_STATE_NAMES = ("variational", "params", "opt_state")


def _step_problem():
    """A small simulated data set and level 1's starting state for Adam."""
    from ..pln import ADAM, init_variational, level1, simulate

    data = simulate(20, 4, key=jax.random.key(11)).data
    variational = init_variational(data)
    return data, (variational, level1.closed_form_step(data, variational), ADAM.init(variational))


def _reference_steps(data, state, n_steps: int) -> tuple[tuple, list[float]]:
    """`n_steps` iterations of level 1's three pieces, and the ELBO before each."""
    from ..pln import ADAM, level1

    variational, params, opt_state = state
    elbos = []
    for _ in range(n_steps):
        loss, grads = level1.loss_and_grad(variational, params, data)
        variational, opt_state = level1.optimizer_step(variational, grads, opt_state, ADAM)
        params = level1.closed_form_step(data, variational)
        elbos.append(-float(loss))
    return (variational, params, opt_state), elbos


def _copy(tree):
    return jax.tree.map(jnp.copy, tree)


def _step_output(result) -> tuple[tuple, jax.Array]:
    require(
        isinstance(result, (tuple, list)) and len(result) == 4,
        "step should return (variational, params, opt_state, elbo), the new state and the ELBO before "
        f"the step; got {describe(result)}.",
    )
    return tuple(result[:3]), result[3]


def _donates_data(step: Callable, state: tuple, data) -> bool:
    """Whether a jitted `step` marks any array of `data` as donated (read from its lowering)."""
    lower = getattr(step, "lower", None)
    if lower is None:
        return False
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "Some donated buffers were not usable"
        lowered = call_answer(lower, *_copy(state), data, what="step.lower")
    args_info = getattr(lowered, "args_info", None)
    if not (isinstance(args_info, tuple) and len(args_info) == 2 and len(args_info[0]) == 4):
        return False
    return any(getattr(leaf, "donated", False) for leaf in jax.tree.leaves(args_info[0][3]))


@exercise_checker("Exercise 1 (donate the state a step replaces)")
def check_donating_step(step: Callable) -> None:
    """`step(variational, params, opt_state, data)` -> `(variational, params, opt_state, elbo)`: one
    level-1 iteration with Adam, jitted once, whose every state input is donated (deleted after
    the call) while `data` stays alive; three chained steps match level 1 and trace once."""
    require(callable(step), "pass the jitted function itself: check_donating_step(step).")
    data, state = _step_problem()
    (expected_state, expected_elbos) = _reference_steps(data, _copy(state), 3)
    inputs = _copy(state)
    new_state, elbo = _step_output(call_answer(step, *inputs, data, what="step"))
    require(
        close(elbo, expected_elbos[0], rtol=1e-4, atol=1e-3),
        f"the ELBO returned by the first step is {float(elbo):.4f}, expected {expected_elbos[0]:.4f}: return "
        "minus the loss that level1.loss_and_grad computes before the update.",
    )
    require(
        not any(leaf.is_deleted() for leaf in jax.tree.leaves(data))
        and not _donates_data(step, state, data),
        "data is donated: every iteration reads it again, and a donated array is deleted whenever XLA "
        "can reuse its buffer (here none of the results has its shape, so JAX only warned). Donate only "
        "the state the step replaces: donate_argnums=(0, 1, 2).",
    )
    alive = [
        name
        for name, part in zip(_STATE_NAMES, inputs)
        if not all(leaf.is_deleted() for leaf in jax.tree.leaves(part))
    ]
    require(
        not alive,
        f"after the call, the input {', '.join(alive)} still hold their memory: nothing lets XLA reuse their "
        "buffers for the new state. Jit the step with donate_argnums=(0, 1, 2): the caller never reads "
        "the old state again.",
    )
    state, elbos = new_state, [float(elbo)]
    with count_compilations() as later:
        for _ in range(2):
            state, elbo = _step_output(call_answer(step, *state, data, what="step"))
            elbos.append(float(elbo))
    require(
        later.compiles == 0,
        f"the second and third steps compiled {later.compiles} program(s): jit the step once, outside the "
        "loop, so that every call finds the same cache.",
    )
    require(
        close(np.asarray(elbos), np.asarray(expected_elbos), rtol=1e-4, atol=1e-3),
        f"three steps give ELBOs {np.round(elbos, 3).tolist()}, level 1 gives "
        f"{np.round(expected_elbos, 3).tolist()}: one step is loss_and_grad, optimizer_step, then closed_form_step.",
    )
    require(
        close(state[0].latent_mean, expected_state[0].latent_mean, rtol=1e-4, atol=1e-4),
        "after three steps the latent means differ from level 1's: return the updated variational parameters.",
    )


# Exercise 2 ------------------------------------------------------------------------------------


def _reference_loop(step, state, n_iter):
    values = []
    for _ in range(n_iter):
        state, value = step(state)
        values.append(value)
    return state, jnp.stack(values)


def _counting_step() -> tuple[Callable, dict]:
    traces = {"count": 0}

    def step(state):
        traces["count"] += 1  # counts traces under jit, calls when eager
        mean, velocity = state
        velocity = 0.9 * velocity - 0.1 * (mean - 1.0)
        return (mean + velocity, velocity), jnp.sum((mean - 1.0) ** 2)

    return step, traces


def _loop_output(result, n_iter: int):
    require(
        isinstance(result, tuple) and len(result) == 2,
        "run_steps must return a pair (final_state, stacked_values), as scan does; got "
        f"{type(result).__name__}"
        + (f" of length {len(result)}" if isinstance(result, tuple) else "")
        + ".",
    )
    state, values = result
    if jnp.ndim(values) == 1:
        require(
            jnp.shape(values) == (n_iter,),
            f"for n_iter={n_iter} you returned {jnp.shape(values)[0]} values: scan's length must be "
            "n_iter, not a fixed number.",
        )
    require(
        jnp.shape(values) == (n_iter,),
        f"the stacked values should have shape ({n_iter},), got {jnp.shape(values)}: "
        "return the per-step value as scan's second output.",
    )
    return state, values


@exercise_checker("a Python loop moved into scan")
def check_scan_loop(run_steps: Callable) -> None:
    """`run_steps(step, state, n_iter)` must return `(final_state, stacked_values)` like the
    Python loop, for several `n_iter` (1 included), tracing `step` once under jit."""
    require(callable(run_steps), "pass the function itself: check_scan_loop(run_steps).")
    start = (jnp.zeros(3), jnp.ones(3))
    for n_iter in (25, 1, 7):
        step, traces = _counting_step()
        expected_state, expected_values = _reference_loop(step, start, n_iter)
        traces["count"] = 0
        result = call_answer(
            jax.jit(functools.partial(run_steps, step), static_argnums=1),
            start,
            n_iter,
            what="run_steps under jax.jit",
        )
        require(
            traces["count"] == 1,
            f"under jit your loop traced step {traces['count']} times for n_iter={n_iter}: a Python "
            "loop is unrolled at trace time. Use jax.lax.scan(body, state, length=n_iter).",
        )
        state, values = _loop_output(result, n_iter)
        require(
            close(values, expected_values, rtol=1e-5),
            f"for n_iter={n_iter} the values differ from the Python loop's: record the value each "
            "step returns, n_iter of them (scan's length is n_iter, not a fixed number).",
        )
        require(
            close(tuple(state), expected_state, rtol=1e-5),
            f"for n_iter={n_iter} the final state differs from the Python loop's: return scan's final carry.",
        )


# Exercise 3 ------------------------------------------------------------------------------------


def default_optimizer() -> optax.GradientTransformation:
    """The optimizer level 2 uses when none is given (the one object its compiled code is cached for)."""
    from ..pln import level2

    return inspect.signature(level2.fit).parameters["optimizer"].default


def _small_data(seed: int = 4):
    """A small count table (30 samples, 5 species, an intercept and one covariate), made with
    NumPy so that building it compiles nothing."""
    from ..pln import make_data

    rng = np.random.default_rng(seed)
    covariates = np.column_stack([np.ones(30), rng.normal(size=30)])
    counts = rng.poisson(np.exp(1.0 + 0.5 * covariates[:, 1:] + rng.normal(size=(30, 5))))
    return make_data(counts, covariates=covariates)


class _Fit(NamedTuple):
    """The first three fields of a FitResult, whichever way the learner built it."""

    elbo_trace: jax.Array
    variational: tuple
    params: tuple


def _fit_result(result, n_iter: int, what: str) -> _Fit:
    """The trace and parameters `what` returned, after a structural check."""
    require(
        isinstance(result, tuple) and len(result) >= 3,
        f"{what} must return a pln.FitResult, as every level's fit does (FitResult.of_all_steps("
        f"trace, variational, params) builds one); got {describe(result)}.",
    )
    result = _Fit(*result[:3])
    require(
        jnp.shape(result.elbo_trace) == (n_iter,),
        f"{what}: the ELBO trace should have shape ({n_iter},), one ELBO per iteration; got "
        f"{describe(result.elbo_trace)}.",
    )
    return result


def _adam_trace(data, n_iter: int, learning_rate: float):
    from ..pln import level2

    return level2.fit(data, n_iter, optimizer=optax.adam(learning_rate)).elbo_trace


@exercise_checker("one optimizer per learning rate")
def check_fit_with_learning_rate(fit_with_learning_rate: Callable) -> None:
    """`fit_with_learning_rate(data, n_iter, learning_rate)` must fit level 2 with Adam at that
    rate, and compile only once per rate: calling it again with the same rate traces nothing."""
    from ..pln import level2

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


# Exercise 4 ------------------------------------------------------------------------------------

LEVEL2_ITERATIONS = 6
"""Iterations of the checked fits; 1 is tried too."""

SECOND_OPTIMIZER = optax.sgd(1e-3)
"""A second value of the static optimizer argument, created once (a fresh one would recompile)."""


def _counting_optimizer(
    base: optax.GradientTransformation,
) -> tuple[optax.GradientTransformation, dict]:
    """`base`, whose `update` counts its Python calls: in a compiled loop, once per trace."""
    calls = {"update": 0}

    def update(grads, state, params=None):
        calls["update"] += 1
        return base.update(grads, state, params)

    return optax.GradientTransformation(base.init, update), calls


def _require_trace_of_level2(fit: Callable, data, n_iter: int, optimizer, expected) -> None:
    """`fit` gives the first `n_iter` entries of `expected`, level 2's fit with `optimizer`."""
    from ..pln import level2

    result = call_answer(functools.partial(fit, optimizer=optimizer), data, n_iter, what="fit")
    result = _fit_result(result, n_iter, "fit")
    trace, reference = jnp.asarray(result.elbo_trace), expected.elbo_trace[:n_iter]
    if close(trace, reference, rtol=1e-5, atol=1e-3):
        require(
            n_iter != len(expected.elbo_trace)
            or close(tuple(result.variational), tuple(expected.variational), rtol=1e-4, atol=1e-4),
            "the ELBO trace is right but the final variational parameters are not: return the "
            "variational parameters from scan's final carry.",
        )
        return
    require(
        not close(trace, -reference, rtol=1e-5, atol=1e-3),
        "your trace holds minus the ELBO: loss_and_grad returns the loss, -ELBO; record -loss.",
    )
    later = expected.elbo_trace[1 : n_iter + 1]
    require(
        not close(trace[: len(later)], later, rtol=1e-5, atol=1e-3),
        "your trace is one iteration late: record the ELBO at the parameters each step starts "
        "from (the loss that loss_and_grad returns), as level 2 does.",
    )
    if optimizer is SECOND_OPTIMIZER:
        default = level2.fit(data, n_iter, optimizer=default_optimizer()).elbo_trace
        require(
            not close(trace, default, rtol=1e-5, atol=1e-3),
            "with optax.sgd you got Adam's trace: use the optimizer argument, not a fixed one.",
        )
    require(
        False,
        f"with n_iter={n_iter} your ELBO trace differs from level 2's. Each iteration: "
        "loss_and_grad(variational, params, data), then optimizer_step, then closed_form_step on "
        "the new variational parameters.",
    )


def _require_one_program(fit: Callable, data) -> None:
    """The fit is one compiled loop: a scan whose size does not grow with n_iter."""
    sizes = {}
    for n_iter in (3, 6):
        jaxpr = traced_program(
            lambda d, n_iter=n_iter: fit(d, n_iter, optimizer=SECOND_OPTIMIZER),
            data,
            what="fit",
        )
        names = primitive_names(jaxpr)
        require(
            "scan" in names or "while" in names,
            "your program has no loop: a Python loop under jit is unrolled, n_iter copies of the "
            "iteration. Write the loop with jax.lax.scan, as level 2 does.",
        )
        sizes[n_iter] = len(names)
    require(
        sizes[3] == sizes[6],
        "your program grows with n_iter: part of the loop is unrolled in Python. "
        "Put the whole iteration in scan's body.",
    )


@exercise_checker("level 2 from level 1's pieces")
def check_level2_from_pieces(fit: Callable) -> None:
    """`fit(data, n_iter, *, optimizer)` must give level 2's ELBO trace and final parameters for
    several `n_iter` and two optimizers, as one compiled program that traces the loop body once
    and is not traced again on a second call."""
    require(callable(fit), "pass the function itself: check_level2_from_pieces(fit).")
    from ..pln import level2

    data = _small_data()
    for optimizer, n_iter in ((default_optimizer(), 1), (SECOND_OPTIMIZER, LEVEL2_ITERATIONS)):
        expected = level2.fit(data, LEVEL2_ITERATIONS, optimizer=optimizer)
        _require_trace_of_level2(fit, data, n_iter, optimizer, expected)
    _require_one_program(fit, data)
    counting, calls = _counting_optimizer(default_optimizer())
    call_answer(
        lambda: jax.block_until_ready(fit(data, LEVEL2_ITERATIONS, optimizer=counting)), what="fit"
    )
    require(
        calls["update"] == 1,
        f"the optimizer's update ran {calls['update']} times in a fit of {LEVEL2_ITERATIONS} "
        "iterations: the loop runs in Python. Loop with jax.lax.scan, so that the body is traced once.",
    )
    with count_compilations() as count:
        call_answer(
            lambda: jax.block_until_ready(fit(data, LEVEL2_ITERATIONS, optimizer=counting)),
            what="fit",
        )
    require(
        count.traces == 0,
        f"a second call with the same arguments traced {count.traces} time(s): fit is not jitted, so "
        "every call traces the loop again. Decorate it with jax.jit, with n_iter and optimizer static.",
    )
