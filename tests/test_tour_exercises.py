"""The tour's checker: the reference solution passes, a stub is 'not yet', and the program checks
(growth with the number of learning rates, vmap) tell a loop or a hand-broadcast answer apart."""

import jax
import jax.numpy as jnp
import pytest

from jaxcourse.exercises.tour import check_fit_all


def loss(w, x, y):
    return jnp.mean((x @ w - y) ** 2)


def _fit(lr, x, y, n_steps):
    w = jnp.zeros(x.shape[1])
    for _ in range(n_steps):
        w = w - lr * jax.grad(loss)(w, x, y)
    return w


def test_fit_all_stub_is_not_yet():
    def fit_all(learning_rates, x, y, n_steps):
        raise NotImplementedError

    verdict = check_fit_all(fit_all)
    assert not verdict and "no answer yet" in verdict.message
    assert not check_fit_all(None)


@pytest.mark.slow
def test_fit_all_reference_passes_eager_and_jitted():
    def eager(learning_rates, x, y, n_steps):
        return jax.vmap(lambda lr: _fit(lr, x, y, n_steps))(learning_rates)

    def jitted(learning_rates, x, y, n_steps):
        return jax.jit(jax.vmap(lambda lr: _fit(lr, x, y, n_steps)))(learning_rates)

    assert check_fit_all(eager)
    assert check_fit_all(jitted)


def test_fit_all_python_loop_over_the_learning_rates_fails_on_its_program():
    def fit_all(learning_rates, x, y, n_steps):
        """A Python loop over the learning rates: the right numbers, but under jit the program
        grows with the number of rates, where one vmap batches them."""
        return jnp.stack([_fit(lr, x, y, n_steps) for lr in learning_rates])

    verdict = check_fit_all(fit_all)
    assert not verdict and "grows with the learning rates" in verdict.message


def test_fit_all_broadcast_by_hand_fails_without_vmap():
    def fit_all(learning_rates, x, y, n_steps):
        """Gradient descent rewritten by hand for a matrix of weights: the right numbers, but no
        vmap, which the exercise practises."""
        w = jnp.zeros((len(learning_rates), x.shape[1]))
        for _ in range(n_steps):
            w = w - learning_rates[:, None] * 2 / len(y) * (x @ w.T - y[:, None]).T @ x
        return w

    verdict = check_fit_all(fit_all)
    assert not verdict and "no vmap batched them" in verdict.message


def test_fit_all_a_wrong_signature_gets_a_hint_not_a_crash():
    verdict = check_fit_all(lambda learning_rates, x, y: learning_rates)
    assert not verdict and "cannot be called with 4 argument(s)" in verdict.message
