"""The PLN exercise checkers accept the reference solutions and reject typical mistakes."""

import jax
import jax.numpy as jnp
import pytest

from jaxcourse.exercises import pln as exercises


def stable_log_det(matrix):
    return 2.0 * jnp.sum(jnp.log(jnp.diagonal(jnp.linalg.cholesky(matrix))))


def naive_log_det(matrix):
    return jnp.log(jnp.linalg.det(matrix))


def test_log_det_solution_passes():
    assert exercises.check_log_det(stable_log_det)


def test_log_det_slogdet_passes():
    assert exercises.check_log_det(lambda m: jnp.linalg.slogdet(m)[1])


def test_log_det_of_det_fails_with_overflow_hint():
    verdict = exercises.check_log_det(naive_log_det)
    assert not verdict
    assert "Cholesky" in verdict.message


def test_log_det_forgetting_the_factor_two_fails():
    verdict = exercises.check_log_det(lambda m: jnp.sum(jnp.log(jnp.diagonal(jnp.linalg.cholesky(m)))))
    assert not verdict and "prod(diag(L))**2" in verdict.message


def test_stub_reports_not_yet():
    def stub(matrix):
        raise NotImplementedError

    verdict = exercises.check_log_det(stub)
    assert not verdict and "no answer yet" in verdict.message


@jax.tree_util.register_pytree_node_class
class GoodContainer:
    def __init__(self, latent_mean, latent_sqrt_var, name):
        self.latent_mean, self.latent_sqrt_var, self.name = latent_mean, latent_sqrt_var, name

    def tree_flatten(self):
        return (self.latent_mean, self.latent_sqrt_var), self.name

    @classmethod
    def tree_unflatten(cls, name, children):
        return cls(*children, name)


@jax.tree_util.register_pytree_node_class
class DropsName(GoodContainer):
    @classmethod
    def tree_unflatten(cls, name, children):
        obj = object.__new__(cls)
        obj.latent_mean, obj.latent_sqrt_var = children
        return obj


@jax.tree_util.register_pytree_node_class
class ArraysInAux(GoodContainer):
    def tree_flatten(self):
        return (), (self.latent_mean, self.latent_sqrt_var, self.name)

    @classmethod
    def tree_unflatten(cls, aux, children):
        return cls(*aux)


class Plain:
    def __init__(self, latent_mean, latent_sqrt_var, name):
        self.latent_mean, self.latent_sqrt_var, self.name = latent_mean, latent_sqrt_var, name


def test_pytree_container_solution_passes():
    assert exercises.check_pytree_container(GoodContainer)


@pytest.mark.parametrize(
    ("wrong", "hint"),
    [(DropsName, "lost the field 'name'"), (ArraysInAux, "only small hashable values"), (Plain, "single opaque leaf")],
)
def test_pytree_container_mistakes_fail(wrong, hint):
    verdict = exercises.check_pytree_container(wrong)
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
