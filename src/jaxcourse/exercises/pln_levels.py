"""Checkers for the exercises of the chapter 'Fitting PLN at five levels of JIT'."""

from __future__ import annotations

import functools
import inspect
from typing import Callable, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import optax

from ..checks import call_answer, close, describe, exercise_checker, require, require_registered_pytree
from ..tracecount import count_compilations
from ._jaxpr import primitive_names, traced_program
from .pytrees import require_hashable_structure


# Exercise 1 ------------------------------------------------------------------------------------


def _require_container_round_trip(container_cls, name: str) -> None:
    mean = jnp.arange(6.0).reshape(2, 3)
    sqrt_var = jnp.full((2, 3), 0.5)
    state = container_cls(latent_mean=mean, latent_sqrt_var=sqrt_var, name=name)
    leaves, treedef = jax.tree.flatten(state)
    rebuilt = jax.tree.unflatten(treedef, leaves)
    for field in ("latent_mean", "latent_sqrt_var", "name"):
        require(
            hasattr(rebuilt, field),
            f"tree_unflatten lost the field '{field}': rebuild every field from children and aux_data.",
        )
    require(
        rebuilt.name == name,
        f"tree_unflatten gave the name {rebuilt.name!r} to a state named {name!r}: restore it from "
        "aux_data instead of writing one value in.",
    )
    require(
        close(rebuilt.latent_mean, mean) and close(rebuilt.latent_sqrt_var, sqrt_var),
        "the arrays come back in the wrong fields: unflatten them in the order you flattened them.",
    )
    doubled = jax.jit(lambda s: jax.tree.map(lambda x: 2 * x, s))(state)
    require(isinstance(doubled, container_cls), "jit should return an object of your class.")
    require(doubled.name == name, "the name should survive jit as static data.")
    require(close(doubled.latent_mean, 2 * mean), "jit changed the arrays unexpectedly.")


@exercise_checker("a pytree container")
def check_pytree_container(container_cls) -> None:
    """`container_cls(latent_mean=..., latent_sqrt_var=..., name=...)` must be a pytree whose
    leaves are the two arrays, whose `name` is hashable static data restored for every name,
    and which a jitted function takes twice with new arrays without tracing again."""
    require(isinstance(container_cls, type), "pass the class itself: check_pytree_container(VariationalState).")
    build = functools.partial(container_cls, latent_mean=jnp.zeros((2, 3)), latent_sqrt_var=jnp.ones((2, 3)), name="oaks")
    state = call_answer(build, what="VariationalState(latent_mean=..., latent_sqrt_var=..., name=...)")
    leaves = require_registered_pytree(
        state,
        "JAX sees your class as a single opaque leaf: register it, e.g. with "
        "@jax.tree_util.register_pytree_node_class and tree_flatten/tree_unflatten.",
    )
    require(
        len(leaves) == 2 and all(isinstance(leaf, jax.Array) for leaf in leaves),
        f"the leaves should be exactly the two arrays, got {len(leaves)} leaves. "
        "Arrays are children; only small hashable values such as the name go in aux_data.",
    )
    require_hashable_structure(state)
    for name in ("oaks", "barents"):
        _require_container_round_trip(container_cls, name)
    traces = []

    @jax.jit
    def total(s):
        traces.append(None)  # runs once per trace
        return jnp.sum(s.latent_mean * s.latent_sqrt_var)

    for offset in (0.0, 1.0):
        total(container_cls(latent_mean=jnp.zeros((2, 3)) + offset, latent_sqrt_var=jnp.ones((2, 3)), name="oaks"))
    require(
        len(traces) == 1,
        f"two states with the same name and new arrays traced {len(traces)} times: the aux data "
        "depends on the arrays. Keep only the name there.",
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
        f"{type(result).__name__}" + (f" of length {len(result)}" if isinstance(result, tuple) else "") + ".",
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
        result = call_answer(jax.jit(functools.partial(run_steps, step), static_argnums=1), start, n_iter, what="run_steps under jax.jit")
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
        call_answer(fit_with_learning_rate, data, n_iter, learning_rate, what="fit_with_learning_rate"),
        n_iter, "fit_with_learning_rate",
    )
    expected = _adam_trace(data, n_iter, learning_rate)
    if not close(result.elbo_trace, expected, rtol=1e-4, atol=1e-3):
        default = level2.fit(data, n_iter, optimizer=default_optimizer()).elbo_trace
        require(
            not close(result.elbo_trace, default, rtol=1e-4, atol=1e-3),
            f"with learning_rate={learning_rate} you got the default optimizer's trace: the learning "
            "rate is ignored. Build Adam with the rate you are given.",
        )
        require(False, f"with learning_rate={learning_rate} the ELBO trace differs from level 2 with "
                "optax.adam(learning_rate).")
    with count_compilations() as count:
        for _ in range(2):
            jax.block_until_ready(call_answer(fit_with_learning_rate, data, n_iter, learning_rate, what="fit_with_learning_rate"))
    require(
        count.traces == 0,
        f"two more calls with the same learning rate traced {count.traces} times: each call builds a "
        "new optax.adam object, and the optimizer is a static argument, so every new object is a new "
        "cache key. Build one optimizer per learning rate and reuse it (for example, functools.cache "
        "on a function that makes it).",
    )
    other = call_answer(fit_with_learning_rate, _small_data(seed=9), n_iter, learning_rate, what="fit_with_learning_rate")
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


def _counting_optimizer(base: optax.GradientTransformation) -> tuple[optax.GradientTransformation, dict]:
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
    require(not close(trace, -reference, rtol=1e-5, atol=1e-3),
            "your trace holds minus the ELBO: loss_and_grad returns the loss, -ELBO; record -loss.")
    later = expected.elbo_trace[1 : n_iter + 1]
    require(
        not close(trace[: len(later)], later, rtol=1e-5, atol=1e-3),
        "your trace is one iteration late: record the ELBO at the parameters each step starts "
        "from (the loss that loss_and_grad returns), as level 2 does.",
    )
    if optimizer is SECOND_OPTIMIZER:
        default = level2.fit(data, n_iter, optimizer=default_optimizer()).elbo_trace
        require(not close(trace, default, rtol=1e-5, atol=1e-3),
                "with optax.sgd you got Adam's trace: use the optimizer argument, not a fixed one.")
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
        jaxpr = traced_program(lambda d: fit(d, n_iter, optimizer=SECOND_OPTIMIZER), data, what="fit")
        names = primitive_names(jaxpr)
        require(
            "scan" in names or "while" in names,
            "your program has no loop: a Python loop under jit is unrolled, n_iter copies of the "
            "iteration. Write the loop with jax.lax.scan, as level 2 does.",
        )
        sizes[n_iter] = len(names)
    require(sizes[3] == sizes[6], "your program grows with n_iter: part of the loop is unrolled in Python. "
            "Put the whole iteration in scan's body.")


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
    call_answer(lambda: jax.block_until_ready(fit(data, LEVEL2_ITERATIONS, optimizer=counting)), what="fit")
    require(
        calls["update"] == 1,
        f"the optimizer's update ran {calls['update']} times in a fit of {LEVEL2_ITERATIONS} "
        "iterations: the loop runs in Python. Loop with jax.lax.scan, so that the body is traced once.",
    )
    with count_compilations() as count:
        call_answer(lambda: jax.block_until_ready(fit(data, LEVEL2_ITERATIONS, optimizer=counting)), what="fit")
    require(
        count.traces == 0,
        f"a second call with the same arguments traced {count.traces} time(s): fit is not jitted, so "
        "every call traces the loop again. Decorate it with jax.jit, with n_iter and optimizer static.",
    )
