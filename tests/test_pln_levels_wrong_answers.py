"""Wrong answers to the PLN levels chapter's exercises, written from the exercise texts alone as a
hurried learner would (issue 27, point 4): each must fail, with a hint that names what the answer
did."""

import functools

import jax
import jax.numpy as jnp
import optax
import pytest

from jaxcourse import pln
from jaxcourse.exercises import pln_levels as exercises
from jaxcourse.pln import FitResult, init_variational, level1

# Exercise 1: step(variational, params, opt_state, data), jitted with the state donated ------------


def _iteration(variational, params, opt_state, data, optimizer=pln.ADAM):
    loss, grads = level1.loss_and_grad(variational, params, data)
    variational, opt_state = level1.optimizer_step(variational, grads, opt_state, optimizer)
    return variational, level1.closed_form_step(data, variational), opt_state, -loss


def _elbo_after(variational, params, opt_state, data):
    """The ELBO of the new state, not the one the step started from."""
    _, grads = level1.loss_and_grad(variational, params, data)
    variational, opt_state = level1.optimizer_step(variational, grads, opt_state, pln.ADAM)
    params = level1.closed_form_step(data, variational)
    loss, _ = level1.loss_and_grad(variational, params, data)
    return variational, params, opt_state, -loss


def _loss_not_elbo(variational, params, opt_state, data):
    variational, params, opt_state, elbo = _iteration(variational, params, opt_state, data)
    return variational, params, opt_state, -elbo


def _params_kept(variational, params, opt_state, data):
    """B and Sigma are not recomputed: the old ones are handed back."""
    variational, _, opt_state, elbo = _iteration(variational, params, opt_state, data)
    return variational, params, opt_state, elbo


def _closed_form_first(variational, params, opt_state, data):
    """B and Sigma from the variational parameters the step started from."""
    params = level1.closed_form_step(data, variational)
    loss, grads = level1.loss_and_grad(variational, params, data)
    variational, opt_state = level1.optimizer_step(variational, grads, opt_state, pln.ADAM)
    return variational, params, opt_state, -loss


def _small_step_size(variational, params, opt_state, data):
    return _iteration(variational, params, opt_state, data, optimizer=optax.adam(1e-3))


def _opt_state_kept(variational, params, opt_state, data):
    """The optimizer state is handed back as it came in: Adam's moments never accumulate."""
    variational, params, _, elbo = _iteration(variational, params, opt_state, data)
    return variational, params, opt_state, elbo


def jit_at_every_call(variational, params, opt_state, data):
    """A new jitted lambda at every call: a new function, an empty cache every time."""
    jitted = jax.jit(lambda *state_and_data: _iteration(*state_and_data), donate_argnums=(0, 1, 2))
    return jitted(variational, params, opt_state, data)


_compiled_step = jax.jit(_iteration, donate_argnums=(0, 1, 2))


def float_elbo(variational, params, opt_state, data):
    """The jitted step behind a wrapper that turns the ELBO into a Python float."""
    variational, params, opt_state, elbo = _compiled_step(variational, params, opt_state, data)
    return variational, params, opt_state, float(elbo)


@pytest.mark.slow
@pytest.mark.parametrize(
    ("wrong", "hint"),
    [
        (jax.jit(_iteration, donate_argnums=(0, 2)), "params still hold"),
        (jax.jit(_iteration, donate_argnums=(1, 2, 3)), "data is donated"),
        (jax.jit(_elbo_after, donate_argnums=(0, 1, 2)), "that is the ELBO after the update"),
        (jax.jit(_loss_not_elbo, donate_argnums=(0, 1, 2)), "returned the loss"),
        (jax.jit(_params_kept, donate_argnums=(0, 1, 2)), "those of the state it started from"),
        (
            jax.jit(_closed_form_first, donate_argnums=(0, 1, 2)),
            "those of the state it started from",
        ),
        (jax.jit(_small_step_size, donate_argnums=(0, 1, 2)), "differently from pln.ADAM"),
        (jax.jit(_opt_state_kept, donate_argnums=(0, 1, 2)), "opt_state you were given"),
        (jit_at_every_call, "not a jitted function"),
        (float_elbo, "not a jitted function"),
    ],
    ids=[
        "params-not-donated",
        "one-based-argnums",
        "elbo-after",
        "loss",
        "params-kept",
        "closed-form-first",
        "other-adam",
        "opt-state-kept",
        "jit-at-every-call",
        "float-wrapper",
    ],
)
def test_donating_step_wrong_answers_fail(wrong, hint):
    verdict = exercises.check_donating_step(wrong)
    assert not verdict, "passed"
    assert hint in verdict.message, verdict.message


# Exercise 2: run_steps(step, state, n_iter) in lax.scan -------------------------------------------


def swapped(step, state, n_iter):
    """The values first, as the loop's `values` list came first."""
    state, values = jax.lax.scan(lambda carry, _: step(carry), state, length=n_iter)
    return values, state


def step_called_twice(step, state, n_iter):
    def body(carry, _):
        return step(carry)[0], step(carry)[1]

    return jax.lax.scan(body, state, length=n_iter)


def step_as_body(step, state, n_iter):
    return jax.lax.scan(step, state, length=n_iter)


def reversed_scan(step, state, n_iter):
    return jax.lax.scan(lambda carry, _: step(carry), state, length=n_iter, reverse=True)


def states_stacked(step, state, n_iter):
    def body(carry, _):
        new_state, _ = step(carry)
        return new_state, carry

    return jax.lax.scan(body, state, length=n_iter)


def first_step_outside(step, state, n_iter):
    """One step to learn the value's shape, then the remaining n_iter - 1 in scan."""
    state, first = step(state)
    state, rest = jax.lax.scan(lambda carry, _: step(carry), state, length=n_iter - 1)
    return state, jnp.concatenate([first[None], rest])


def preallocated_floats(step, state, n_iter):
    """fori_loop into a float vector of length n_iter: assumes one float per step."""

    def body(i, carry):
        state, values = carry
        state, value = step(state)
        return state, values.at[i].set(value)

    return jax.lax.fori_loop(0, n_iter, body, (state, jnp.zeros(n_iter)))


@pytest.mark.parametrize(
    ("wrong", "hint"),
    [
        (swapped, "the pair is swapped"),
        (step_called_twice, "more than once in it"),
        (step_as_body, "(carry, x)"),
        (reversed_scan, "in reverse order"),
        (states_stacked, "stacked the states"),
        (first_step_outside, "outside scan's body"),
        (preallocated_floats, "one float per step"),
    ],
)
def test_scan_loop_wrong_answers_fail(wrong, hint):
    verdict = exercises.check_scan_loop(wrong)
    assert not verdict, "passed"
    assert hint in verdict.message, verdict.message


# Exercise 3: fit_with_learning_rate(data, n_iter, learning_rate) compiles once per rate ------------

_last = {"rate": None, "optimizer": None}


def last_rate_only(data, n_iter, learning_rate):
    """Keeps one optimizer, the last rate's: going back to an earlier rate compiles again."""
    if _last["rate"] != learning_rate:
        _last["rate"], _last["optimizer"] = learning_rate, optax.adam(learning_rate)
    return pln.level2.fit(data, n_iter, optimizer=_last["optimizer"])


_first = {}


def first_rate_forever(data, n_iter, learning_rate):
    """Makes the optimizer on the first call and keeps it, whatever the rate of later calls."""
    if "optimizer" not in _first:
        _first["optimizer"] = optax.adam(learning_rate)
    return pln.level2.fit(data, n_iter, optimizer=_first["optimizer"])


@functools.cache
def _adam(learning_rate):
    return optax.adam(learning_rate)


def twenty_steps(data, n_iter, learning_rate):
    """The 20 of the exercise text, not n_iter."""
    return pln.level2.fit(data, 20, optimizer=_adam(learning_rate))


@functools.cache
def _adamw(learning_rate):
    return optax.adamw(learning_rate)


def adamw(data, n_iter, learning_rate):
    return pln.level2.fit(data, n_iter, optimizer=_adamw(learning_rate))


@functools.cache
def _sgd(learning_rate):
    return optax.sgd(learning_rate)


def sgd(data, n_iter, learning_rate):
    return pln.level2.fit(data, n_iter, optimizer=_sgd(learning_rate))


def level1_loop(data, n_iter, learning_rate):
    """Level 1's Python loop, not level 2's compiled program."""
    return pln.level1.fit(data, n_iter, optimizer=_adam(learning_rate))


@functools.cache
def whole_fit_cached(data, n_iter, learning_rate):
    return pln.level2.fit(data, n_iter, optimizer=optax.adam(learning_rate))


@pytest.mark.slow
@pytest.mark.parametrize(
    ("wrong", "hint"),
    [
        (last_rate_only, "earlier learning rate"),
        (first_rate_forever, "the rate of an earlier call"),
        (twenty_steps, "has 20 entries for n_iter=6"),
        (adamw, "close to Adam but not Adam"),
        (sgd, "other steps than Adam's"),
        (level1_loop, "pln.level1.fit, not with level 2"),
        (whole_fit_cached, "cannot be hashed"),
    ],
)
def test_fit_with_learning_rate_wrong_answers_fail(wrong, hint):
    verdict = exercises.check_fit_with_learning_rate(wrong)
    assert not verdict, "passed"
    assert hint in verdict.message, verdict.message


# Exercise 4: fit(data, n_iter, *, optimizer) from level 1's pieces in one jitted scan -------------


def _start(data, optimizer):
    variational = init_variational(data)
    return variational, level1.closed_form_step(data, variational), optimizer.init(variational)


def _body(data, optimizer):
    def body(carry, _):
        variational, params, opt_state = carry
        loss, grads = level1.loss_and_grad(variational, params, data)
        variational, opt_state = level1.optimizer_step(variational, grads, opt_state, optimizer)
        return (variational, level1.closed_form_step(data, variational), opt_state), -loss

    return body


def _scan_fit(data, n_iter, optimizer):
    (variational, params, _), trace = jax.lax.scan(
        _body(data, optimizer), _start(data, optimizer), length=n_iter
    )
    return FitResult.of_all_steps(trace, variational, params)


@jax.jit
def nothing_static(data, n_iter, *, optimizer=pln.ADAM):
    return _scan_fit(data, n_iter, optimizer)


@functools.partial(jax.jit, static_argnames="optimizer")
def n_iter_traced(data, n_iter, *, optimizer=pln.ADAM):
    return _scan_fit(data, n_iter, optimizer)


@functools.partial(jax.jit, static_argnames="n_iter")
def optimizer_traced(data, n_iter, *, optimizer=pln.ADAM):
    return _scan_fit(data, n_iter, optimizer)


@functools.partial(jax.jit, static_argnames=("n_iter", "optimizer"))
def adam_restarted(data, n_iter, *, optimizer=pln.ADAM):
    """optimizer.init inside the body: Adam's moments start from zero at every step."""

    def body(carry, _):
        variational, params = carry
        loss, grads = level1.loss_and_grad(variational, params, data)
        variational, _ = level1.optimizer_step(
            variational, grads, optimizer.init(variational), optimizer
        )
        return (variational, level1.closed_form_step(data, variational)), -loss

    variational, params, _ = _start(data, optimizer)
    (variational, params), trace = jax.lax.scan(body, (variational, params), length=n_iter)
    return FitResult.of_all_steps(trace, variational, params)


@functools.partial(jax.jit, static_argnames=("n_iter", "optimizer"))
def params_never_updated(data, n_iter, *, optimizer=pln.ADAM):
    """B and Sigma from the start, closed over: only (M, S) and the optimizer state are carried."""
    variational, params, opt_state = _start(data, optimizer)

    def body(carry, _):
        variational, opt_state = carry
        loss, grads = level1.loss_and_grad(variational, params, data)
        variational, opt_state = level1.optimizer_step(variational, grads, opt_state, optimizer)
        return (variational, opt_state), -loss

    (variational, _), trace = jax.lax.scan(body, (variational, opt_state), length=n_iter)
    return FitResult.of_all_steps(trace, variational, params)


@functools.partial(jax.jit, static_argnames=("n_iter", "optimizer"))
def starting_point_returned(data, n_iter, *, optimizer=pln.ADAM):
    """The scan's final carry is dropped; the starting parameters are returned."""
    variational, params, opt_state = _start(data, optimizer)
    _, trace = jax.lax.scan(_body(data, optimizer), (variational, params, opt_state), length=n_iter)
    return FitResult.of_all_steps(trace, variational, params)


@functools.partial(jax.jit, static_argnames=("n_iter", "optimizer"))
def stale_params(data, n_iter, *, optimizer=pln.ADAM):
    """B and Sigma computed at the top of the body: the returned ones lag one step behind."""

    def body(carry, _):
        variational, _, opt_state = carry
        params = level1.closed_form_step(data, variational)
        loss, grads = level1.loss_and_grad(variational, params, data)
        variational, opt_state = level1.optimizer_step(variational, grads, opt_state, optimizer)
        return (variational, params, opt_state), -loss

    (variational, params, _), trace = jax.lax.scan(body, _start(data, optimizer), length=n_iter)
    return FitResult.of_all_steps(trace, variational, params)


@functools.partial(jax.jit, static_argnames=("n_iter", "optimizer"))
def one_step_short(data, n_iter, *, optimizer=pln.ADAM):
    """The starting ELBO, then n_iter - 1 steps recording the ELBO after each."""
    variational, params, opt_state = _start(data, optimizer)
    first = -level1.loss_and_grad(variational, params, data)[0]

    def body(carry, _):
        (variational, params, opt_state), _ = _body(data, optimizer)(carry, None)
        return (variational, params, opt_state), -level1.loss_and_grad(variational, params, data)[0]

    (variational, params, _), rest = jax.lax.scan(
        body, (variational, params, opt_state), length=n_iter - 1
    )
    return FitResult.of_all_steps(jnp.concatenate([first[None], rest]), variational, params)


def jit_fit_at_every_call(data, n_iter, *, optimizer=pln.ADAM):
    """A new jitted lambda at every call: a new function, traced again at every call."""
    return jax.jit(lambda data: _scan_fit(data, n_iter, optimizer))(data)


@pytest.mark.slow
@pytest.mark.parametrize(
    ("wrong", "hint"),
    [
        (nothing_static, "the optimizer is not static"),
        (n_iter_traced, "n_iter is not static"),
        (optimizer_traced, "the optimizer is not static"),
        (adam_restarted, "the optimizer state starts afresh"),
        (params_never_updated, "B and Sigma stay at their starting values"),
        (starting_point_returned, "the starting ones"),
        (stale_params, "one step behind"),
        (one_step_short, "after n_iter - 1 steps"),
        (jit_fit_at_every_call, "new function at every call"),
    ],
)
def test_level2_from_pieces_wrong_answers_fail(wrong, hint):
    verdict = exercises.check_level2_from_pieces(wrong)
    assert not verdict, "passed"
    assert hint in verdict.message, verdict.message
