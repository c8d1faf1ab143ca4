"""Wrong answers to the tour's exercise, written from the exercise text as a hurried learner would:
each fails, and its hint names what the answer actually did."""

import jax
import jax.numpy as jnp
import pytest

from jaxcourse.exercises.tour import check_fit_all


def loss(w, x, y):
    return jnp.mean((x @ w - y) ** 2)


def _fit_all(*, sign=-1.0, extra_steps=0, start=0.0, reduce=jnp.mean, history=False, out_axes=0):
    """A fit_all with one mistake, chosen by the keyword that differs from its default."""

    def fit_all(learning_rates, x, y, n_steps):
        def own_loss(w, x, y):
            return reduce((x @ w - y) ** 2)

        def fit(lr):
            w, steps = jnp.full(x.shape[1], start), []
            for _ in range(n_steps + extra_steps):
                w = w + sign * lr * jax.grad(own_loss)(w, x, y)
                steps.append(w)
            return jnp.stack(steps) if history else w

        return jax.vmap(fit, out_axes=out_axes)(learning_rates)

    return fit_all


WRONG = {
    "gradient ascent": (_fit_all(sign=1.0), "gradient ascent"),
    "one step short": (_fit_all(extra_steps=-1), "one short of n_steps"),
    "one step too many": (_fit_all(extra_steps=1), "one more than n_steps"),
    "starting from ones": (_fit_all(start=1.0), "starts from ones"),
    "summed instead of mean loss": (_fit_all(reduce=jnp.sum), "summed squared error"),
    "every step returned": (_fit_all(history=True), "the weights after every step"),
    "learning rates along the columns": (_fit_all(out_axes=1), "transposed"),
}


@pytest.mark.parametrize("name", WRONG)
def test_fit_all_wrong_answer_gets_its_hint(name):
    answer, fragment = WRONG[name]
    verdict = check_fit_all(answer)
    assert not verdict, f"{name} passed"
    assert fragment in verdict.message, verdict.message


def test_fit_all_every_row_with_the_first_learning_rate_fails():
    def fit_all(learning_rates, x, y, n_steps):
        first = _fit_all()(learning_rates[:1], x, y, n_steps)[0]
        return jax.vmap(lambda lr: first + 0 * lr)(learning_rates)

    verdict = check_fit_all(fit_all)
    assert not verdict and "first learning rate" in verdict.message


def test_fit_all_the_whole_vector_of_learning_rates_without_vmap_fails_on_shape():
    """fit called once on the vector: the gradient times every learning rate, one row of weights."""

    def fit_all(learning_rates, x, y, n_steps):
        w = jnp.zeros(x.shape[1])
        for _ in range(n_steps):
            w = w - learning_rates * jax.grad(loss)(w, x, y)
        return w

    verdict = check_fit_all(fit_all)
    assert not verdict and "one row of weights per learning rate" in verdict.message
