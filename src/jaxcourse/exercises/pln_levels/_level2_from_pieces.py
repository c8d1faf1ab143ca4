"""Checker for the PLN levels chapter's exercise on level 2 from level 1's pieces."""

from __future__ import annotations

import functools
from collections.abc import Callable

import jax
import jax.numpy as jnp
import optax

from ...checks import (
    call_answer,
    close,
    exercise_checker,
    require,
)
from ...tracecount import count_compilations
from .._jaxpr import primitive_names, traced_program
from ._common import _as_tuple, _fit_result, _small_data, default_optimizer

LEVEL2_ITERATIONS = 6
"""Iterations of the checked fits; 1 is tried too."""

SECOND_OPTIMIZER = optax.sgd(1e-3, momentum=0.9)
"""A second value of the static optimizer argument, created once (a fresh one would recompile);
it has a state (the momentum), so a fit that does not carry the optimizer state shows."""

_NOT_STATIC = (
    (
        jax.errors.ConcretizationTypeError,
        "`length` argument to `scan`",
        "n_iter is not static: under jit it is a tracer, and scan's length must be a Python int "
        "known when compiling. Jit with static_argnames=('n_iter', 'optimizer').",
    ),
    (
        TypeError,
        "at path optimizer",
        "the optimizer is not static: jit treats every argument not named in static_argnames as "
        "an array, and an optax optimizer is a pair of Python functions. Jit with "
        "static_argnames=('n_iter', 'optimizer').",
    ),
)


def _pieces_run(data, n_iter: int, optimizer, *, new_params: bool = True, keep_state: bool = True):
    """Level 1's pieces in a Python loop: the ELBO before each step and the (variational, params)
    after each (index 0 is the start). `new_params=False` keeps B and Sigma at their start;
    `keep_state=False` starts the optimizer state afresh at every step."""
    from ...pln import init_variational, level1

    variational = init_variational(data)
    params = level1.closed_form_step(data, variational)
    opt_state = optimizer.init(variational)
    trace, states = [], [(variational, params)]
    for _ in range(n_iter):
        loss, grads = level1.loss_and_grad(variational, params, data)
        if not keep_state:
            opt_state = optimizer.init(variational)
        variational, opt_state = level1.optimizer_step(variational, grads, opt_state, optimizer)
        if new_params:
            params = level1.closed_form_step(data, variational)
        trace.append(-loss)
        states.append((variational, params))
    return jnp.stack(trace), states


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
    """`fit` gives the first `n_iter` entries of `expected`, level 2's fit with `optimizer`, and
    the variational parameters and params after `n_iter` steps."""
    from ...pln import level2

    result = call_answer(
        functools.partial(fit, optimizer=optimizer), data, n_iter, what="fit", hints=_NOT_STATIC
    )
    result = _fit_result(result, n_iter, "fit")
    trace, reference = jnp.asarray(result.elbo_trace), expected.elbo_trace[:n_iter]
    if close(trace, reference, rtol=1e-5, atol=1e-3):
        _require_final_parameters(result, data, n_iter, optimizer)
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
    if n_iter > 1:
        fixed, _ = _pieces_run(data, n_iter, optimizer, new_params=False)
        require(
            not close(trace, fixed, rtol=1e-5, atol=1e-3),
            "your trace is that of a fit whose B and Sigma stay at their starting values: the body "
            "never recomputes them. Call closed_form_step on the new variational parameters in the "
            "body, and carry the result.",
        )
        restarted, _ = _pieces_run(data, n_iter, optimizer, keep_state=False)
        require(
            not close(trace, restarted, rtol=1e-5, atol=1e-3),
            "your trace is that of a fit in which the optimizer state starts afresh at every step "
            "(optimizer.init in the body, or the old opt_state carried on): momentum never "
            "builds up. Carry the opt_state that optimizer_step returns.",
        )
    require(
        False,
        f"with n_iter={n_iter} your ELBO trace differs from level 2's. Each iteration: "
        "loss_and_grad(variational, params, data), then optimizer_step, then closed_form_step on "
        "the new variational parameters.",
    )


def _require_final_parameters(result, data, n_iter: int, optimizer) -> None:
    """The trace is right: the final variational parameters and params are those after
    `n_iter` steps, and a known lag is named."""
    _, states = _pieces_run(data, n_iter, optimizer)
    variational, params = _as_tuple(result.variational), _as_tuple(result.params)
    if not close(variational, tuple(states[n_iter][0]), rtol=1e-4, atol=1e-4):
        after = [
            k
            for k, state in enumerate(states)
            if close(variational, tuple(state[0]), rtol=1e-4, atol=1e-4)
        ]
        require(
            after != [0],
            "the ELBO trace is right but your final variational parameters are the starting ones: "
            "return the variational parameters from scan's final carry, not those the fit started from.",
        )
        require(
            after != [n_iter - 1],
            "the ELBO trace is right but your final variational parameters are those after "
            "n_iter - 1 steps: your scan takes one step fewer than n_iter (a first ELBO recorded "
            "before the scan?). Scan n_iter steps, each recording the ELBO it starts from.",
        )
        require(
            False,
            "the ELBO trace is right but the final variational parameters are not: return the "
            "variational parameters from scan's final carry.",
        )
    if not close(params, tuple(states[n_iter][1]), rtol=1e-4, atol=1e-4):
        lag = (
            "one step behind: they are B and Sigma of the variational parameters before the last "
            "step (closed_form_step at the top of the body)"
            if n_iter > 1
            else "those of the starting variational parameters: B and Sigma computed before the "
            "step (closed_form_step at the top of the body), or never recomputed"
        )
        require(
            not close(params, tuple(states[n_iter - 1][1]), rtol=1e-4, atol=1e-4),
            "the ELBO trace and the final variational parameters are right, but your final params "
            f"are {lag}. Compute them after optimizer_step, and carry those.",
        )
        require(
            False,
            "the ELBO trace and the final variational parameters are right, but your final params "
            "are not: return the params of scan's final carry, closed_form_step of the final "
            "variational parameters.",
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


@exercise_checker(
    hints=(
        "Start from pln.init_variational(data) and level1.closed_form_step for the first "
        "parameters; the loop's carry is (variational, params, opt_state), with opt_state ="
        " optimizer.init(variational).",
        "The scan body calls loss_and_grad, optimizer_step with the optimizer argument, "
        "then closed_form_step, and returns -loss (the ELBO before the step, not after it "
        "and not the loss). Jit the whole fit once with static_argnames=('n_iter', "
        "'optimizer'), and loop with jax.lax.scan(body, carry, length=n_iter), not a Python"
        " for loop.",
    )
)
def check_level2_from_pieces(fit: Callable) -> None:
    """`fit(data, n_iter, *, optimizer)` must give level 2's ELBO trace and final parameters for
    several `n_iter` and two optimizers, as one compiled program that traces the loop body once
    and is not traced again on a second call."""
    require(callable(fit), "pass the function itself: check_level2_from_pieces(fit).")
    from ...pln import level2

    data = _small_data()
    for optimizer, n_iter in ((SECOND_OPTIMIZER, LEVEL2_ITERATIONS), (default_optimizer(), 1)):
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
        "every call traces the loop again (a jax.jit inside fit, of a function made in the call, "
        "jits a new function at every call, with an empty cache). Decorate fit itself with "
        "jax.jit, with n_iter and optimizer static.",
    )
