"""The PLN levels chapter's exercise checkers accept the reference solutions and reject typical mistakes."""

import functools

import jax
import jax.numpy as jnp
import optax
import pytest

from jaxcourse import pln
from jaxcourse.exercises import pln_levels as exercises
from jaxcourse.pln import FitResult, init_variational, level1


def _one_step(variational, params, opt_state, data):
    loss, grads = level1.loss_and_grad(variational, params, data)
    variational, opt_state = level1.optimizer_step(variational, grads, opt_state, pln.ADAM)
    return variational, level1.closed_form_step(data, variational), opt_state, -loss


donating_step = jax.jit(_one_step, donate_argnums=(0, 1, 2))


@pytest.mark.slow
def test_donating_step_solution_passes():
    verdict = exercises.check_donating_step(donating_step)
    assert verdict, verdict.message


@pytest.mark.slow
@pytest.mark.parametrize(
    ("wrong", "hint"),
    [
        (jax.jit(_one_step), "still hold their memory"),
        (jax.jit(_one_step, donate_argnums=(0, 1, 2, 3)), "data is donated"),
        (jax.jit(_one_step, donate_argnums=0), "params, opt_state still hold their memory"),
        (
            jax.jit(
                lambda v, p, s, d: _one_step(v, p, s, d)[:3] + (_one_step(v, p, s, d)[3] * 0.5,),
                donate_argnums=(0, 1, 2),
            ),
            "return minus the loss",
        ),
    ],
    ids=["no-donation", "data-donated", "variational-only", "wrong-elbo"],
)
def test_donating_step_mistakes_fail(wrong, hint):
    verdict = exercises.check_donating_step(wrong)
    assert not verdict and hint in verdict.message


def scan_solution(step, state, n_iter):
    return jax.lax.scan(lambda carry, _: step(carry), state, length=n_iter)


def python_loop(step, state, n_iter):
    values = []
    for _ in range(n_iter):
        state, value = step(state)
        values.append(value)
    return state, jnp.stack(values)


def test_scan_solution_passes():
    assert exercises.check_scan_loop(scan_solution)


def test_python_loop_fails_with_unrolling_hint():
    verdict = exercises.check_scan_loop(python_loop)
    assert not verdict and "unrolled" in verdict.message


def test_scan_dropping_values_fails():
    def final_only(step, state, n_iter):
        state, _ = jax.lax.scan(lambda carry, _: step(carry), state, length=n_iter)
        return state, jnp.zeros(())

    verdict = exercises.check_scan_loop(final_only)
    assert not verdict and "stacked values" in verdict.message


def test_scan_with_a_fixed_length_fails_on_a_second_n_iter():
    def fixed(step, state, n_iter):
        return jax.lax.scan(lambda carry, _: step(carry), state, length=25)

    verdict = exercises.check_scan_loop(fixed)
    assert not verdict and "n_iter=1" in verdict.message


def test_scan_returning_values_only_fails_with_the_expected_structure():
    def values_only(step, state, n_iter):
        return jax.lax.scan(lambda carry, _: step(carry), state, length=n_iter)[1]

    verdict = exercises.check_scan_loop(values_only)
    assert not verdict and "pair (final_state, stacked_values)" in verdict.message


# Exercise 3: one optimizer per learning rate ------------------------------------------------------


@functools.cache
def adam_with(learning_rate):
    return optax.adam(learning_rate)


@pytest.mark.slow
def test_fit_with_learning_rate_reference_passes():
    verdict = exercises.check_fit_with_learning_rate(
        lambda data, n_iter, rate: pln.level2.fit(data, n_iter, optimizer=adam_with(rate))
    )
    assert verdict, verdict.message


@pytest.mark.slow
def test_fit_with_a_fresh_optimizer_each_call_fails():
    verdict = exercises.check_fit_with_learning_rate(
        lambda data, n_iter, rate: pln.level2.fit(data, n_iter, optimizer=optax.adam(rate))
    )
    assert not verdict and "new optax.adam object" in verdict.message


@pytest.mark.slow
def test_fit_ignoring_the_learning_rate_fails():
    verdict = exercises.check_fit_with_learning_rate(
        lambda data, n_iter, rate: pln.level2.fit(data, n_iter)
    )
    assert not verdict and "learning rate is ignored" in verdict.message


@pytest.mark.slow
def test_fit_caching_whole_results_fails():
    """A cache keyed on the data's shape and the rate returns stale fits for new data."""
    results = {}

    def cached(data, n_iter, rate):
        key = (data.counts.shape, n_iter, rate)
        if key not in results:
            results[key] = pln.level2.fit(data, n_iter, optimizer=adam_with(rate))
        return results[key]

    verdict = exercises.check_fit_with_learning_rate(cached)
    assert not verdict and "cache the optimizer, not the fit" in verdict.message


def test_fit_returning_the_trace_only_fails_with_the_expected_structure():
    verdict = exercises.check_fit_with_learning_rate(
        lambda data, n_iter, rate: (
            pln.level2.fit(data, n_iter, optimizer=adam_with(rate)).elbo_trace
        )
    )
    assert not verdict and "must return a pln.FitResult" in verdict.message


# Exercise 4: level 2 from level 1's pieces ---------------------------------------------------------


def level2_body(data, optimizer, record_after=False, sign=1.0):
    """The scan body built from level 1's pieces (optionally with a typical mistake)."""

    def body(carry, _):
        variational, params, opt_state = carry
        loss, grads = level1.loss_and_grad(variational, params, data)
        variational, opt_state = level1.optimizer_step(variational, grads, opt_state, optimizer)
        params = level1.closed_form_step(data, variational)
        if record_after:
            loss = level1.loss_and_grad(variational, params, data)[0]
        return (variational, params, opt_state), -sign * loss

    return body


def scan_fit(data, n_iter, optimizer, **mistake):
    variational = init_variational(data)
    carry = (variational, level1.closed_form_step(data, variational), optimizer.init(variational))
    (variational, params, _), trace = jax.lax.scan(
        level2_body(data, optimizer, **mistake), carry, length=n_iter
    )
    return FitResult.of_all_steps(trace, variational, params)


DEFAULT = exercises.default_optimizer()


@functools.partial(jax.jit, static_argnames=("n_iter", "optimizer"))
def level2_fit(data, n_iter, *, optimizer=DEFAULT):
    return scan_fit(data, n_iter, optimizer)


@pytest.mark.slow
def test_level2_from_pieces_reference_passes():
    verdict = exercises.check_level2_from_pieces(level2_fit)
    assert verdict, verdict.message


@pytest.mark.slow
def test_level2_from_pieces_without_jit_fails():
    verdict = exercises.check_level2_from_pieces(
        lambda data, n_iter, *, optimizer=DEFAULT: scan_fit(data, n_iter, optimizer)
    )
    assert not verdict and "not jitted" in verdict.message


@functools.partial(jax.jit, static_argnames=("n_iter", "optimizer"))
def python_loop_fit(data, n_iter, *, optimizer=DEFAULT):
    variational = init_variational(data)
    carry = (variational, level1.closed_form_step(data, variational), optimizer.init(variational))
    body, trace = level2_body(data, optimizer), []
    for _ in range(n_iter):
        carry, elbo = body(carry, None)
        trace.append(elbo)
    return FitResult.of_all_steps(jnp.stack(trace), carry[0], carry[1])


@pytest.mark.slow
def test_level2_from_pieces_python_loop_under_jit_fails():
    verdict = exercises.check_level2_from_pieces(python_loop_fit)
    assert not verdict and "unrolled" in verdict.message


@pytest.mark.slow
@pytest.mark.parametrize(
    ("mistake", "hint"),
    [({"record_after": True}, "one iteration late"), ({"sign": -1.0}, "minus the ELBO")],
)
def test_level2_from_pieces_wrong_trace_gets_its_hint(mistake, hint):
    @functools.partial(jax.jit, static_argnames=("n_iter", "optimizer"))
    def wrong(data, n_iter, *, optimizer=DEFAULT):
        return scan_fit(data, n_iter, optimizer, **mistake)

    verdict = exercises.check_level2_from_pieces(wrong)
    assert not verdict and hint in verdict.message


@pytest.mark.slow
def test_level2_from_pieces_ignoring_the_optimizer_fails():
    @functools.partial(jax.jit, static_argnames=("n_iter", "optimizer"))
    def fixed(data, n_iter, *, optimizer=DEFAULT):
        return scan_fit(data, n_iter, DEFAULT)

    verdict = exercises.check_level2_from_pieces(fixed)
    assert not verdict and "use the optimizer argument" in verdict.message
