"""Wrong answers to the sharding chapter's exercises, written from the exercise texts alone as a
hurried learner would (issue 27, point 4): each fails, and its hint names what the answer did."""

from functools import partial

import jax
import jax.numpy as jnp
import pytest
from jax import lax
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P
from wrong_answers import assert_fails_with

from jaxcourse import parallel, pln
from jaxcourse.exercises.sharding import (
    check_global_standardise,
    check_sharded_grad,
    check_sharded_profiled_elbo,
)


@pytest.fixture(scope="module")
def mesh():
    previous = jax.config.jax_default_device
    devices = parallel.course_devices()
    yield jax.make_mesh((len(devices),), ("data",), devices=devices)
    jax.config.update("jax_default_device", previous)


# Exercise 1: standardise with shard_map ----------------------------------------------------


def _global_mean(x_block):
    return lax.pmean(jnp.mean(x_block, axis=0), "data")


def _global_var(x_block):
    mean = _global_mean(x_block)
    return lax.pmean(jnp.mean(x_block**2, axis=0), "data") - mean**2


WRONG_STANDARDISE = {
    "global mean, the block's own std": (
        lambda x: (x - _global_mean(x)) / x.std(axis=0),
        ("its own block",),
    ),
    "sample std (n - 1)": (
        lambda x: (
            (x - _global_mean(x)) / jnp.sqrt(_global_var(x) * 4 * x.shape[0] / (4 * x.shape[0] - 1))
        ),
        ("ddof=1",),
    ),
    "psum of the block means": (
        lambda x: (x - lax.psum(jnp.mean(x, axis=0), "data")) / jnp.sqrt(_global_var(x)),
        ("psum",),
    ),
    "mean not subtracted": (lambda x: x / jnp.sqrt(_global_var(x)), ("subtract the mean",)),
    "mean of the block variances": (
        lambda x: (x - _global_mean(x)) / jnp.sqrt(lax.pmean(x.var(axis=0), "data")),
        ("block variances",),
    ),
    "divided by the variance": (
        lambda x: (x - _global_mean(x)) / _global_var(x),
        ("variance",),
    ),
    "every row gathered to every device": (
        lambda x: (x - _gathered(x).mean(axis=0)) / _gathered(x).std(axis=0),
        ("all_gathers the rows",),
    ),
}


def _gathered(x_block):
    """The whole data set on every device: right statistics, no data parallelism left."""
    return lax.all_gather(x_block, "data", tiled=True)


@pytest.mark.parametrize("case", list(WRONG_STANDARDISE), ids=list(WRONG_STANDARDISE))
def test_standardise_wrong_answer(case, mesh):
    body, fragments = WRONG_STANDARDISE[case]
    answer = jax.jit(jax.shard_map(body, mesh=mesh, in_specs=P("data"), out_specs=P("data")))
    assert_fails_with(check_global_standardise(answer, mesh), *fragments)


# Exercise 2: a data-parallel gradient with shard_map ---------------------------------------


def _block_loss(params, x_block, y_block):
    return parallel.mse_loss(params, x_block, y_block)


def _grad_of_psum_loss(params, x_block, y_block):
    return jax.grad(lambda p: lax.psum(_block_loss(p, x_block, y_block), "data"))(params)


def _grad_of_block_loss(params, x_block, y_block):
    return jax.grad(_block_loss)(params, x_block, y_block)


def _global_grad(params, x_block, y_block):
    return jax.grad(lambda p: lax.pmean(_block_loss(p, x_block, y_block), "data"))(params)


def _sgd_step_returned(params, x_block, y_block):
    grads = _global_grad(params, x_block, y_block)
    return jax.tree.map(lambda p, g: p - parallel.LEARNING_RATE * g, params, grads)


def _negated(params, x_block, y_block):
    return jax.tree.map(jnp.negative, _global_grad(params, x_block, y_block))


def _sum_of_squares(params, x_block, y_block):
    def loss(p):
        residual = x_block @ p.weights + p.bias - y_block
        return lax.psum(jnp.sum(residual**2), "data")

    return jax.grad(loss)(params)


WRONG_SHARDED_GRAD = {
    "grad of the psum of block losses": (_grad_of_psum_loss, True, ("psum of the block",)),
    "grad of the block loss, nothing reduced": (_grad_of_block_loss, True, ("already summed",)),
    "pmean loss with check_vma=False": (_global_grad, False, ("check_vma=False",)),
    "the SGD step instead of the gradient": (_sgd_step_returned, True, ("updated parameters",)),
    "the gradient with its sign flipped": (_negated, True, ("sign",)),
    "sum of squares, not the mean": (_sum_of_squares, True, ("sum of squared residuals",)),
}


@pytest.mark.slow_after_first
@pytest.mark.parametrize("case", list(WRONG_SHARDED_GRAD), ids=list(WRONG_SHARDED_GRAD))
def test_sharded_grad_wrong_answer(case, mesh):
    body, check_vma, fragments = WRONG_SHARDED_GRAD[case]
    answer = jax.jit(
        jax.shard_map(
            body,
            mesh=mesh,
            in_specs=(P(), P("data"), P("data")),
            out_specs=P(),
            check_vma=check_vma,
        )
    )
    assert_fails_with(check_sharded_grad(answer, mesh), *fragments)


# Exercise 3: the profiled PLN ELBO, data-parallel ------------------------------------------


def _global_coef(x_block, m_block):
    return jnp.linalg.solve(
        lax.psum(x_block.T @ x_block, "data"), lax.psum(x_block.T @ m_block, "data")
    )


def _averaged_statistics(data_block, variational_block):
    coef = _global_coef(data_block.covariates, variational_block.latent_mean)
    totals = lax.pmean(pln.elbo_statistics(data_block, variational_block, coef), "data")
    return pln.elbo_from_statistics(totals, totals.scatter / totals.n_samples)


def _sum_of_block_profiled_elbos(data_block, variational_block):
    return lax.psum(pln.profiled_elbo(data_block, variational_block), "data")


def _local_cross_product(data_block, variational_block):
    x_block, m_block = data_block.covariates, variational_block.latent_mean
    coef = jnp.linalg.solve(lax.psum(x_block.T @ x_block, "data"), x_block.T @ m_block)
    totals = lax.psum(pln.elbo_statistics(data_block, variational_block, coef), "data")
    return pln.elbo_from_statistics(totals, totals.scatter / totals.n_samples)


def _statistics_never_summed(data_block, variational_block):
    coef = _global_coef(data_block.covariates, variational_block.latent_mean)
    stats = pln.elbo_statistics(data_block, variational_block, coef)
    return pln.elbo_from_statistics(stats, stats.scatter / stats.n_samples)


def _negative_elbo(data_block, variational_block):
    coef = _global_coef(data_block.covariates, variational_block.latent_mean)
    totals = lax.psum(pln.elbo_statistics(data_block, variational_block, coef), "data")
    return -pln.elbo_from_statistics(totals, totals.scatter / totals.n_samples)


def _on_mesh(body):
    def sharded_profiled_elbo(data, variational, mesh):
        rows = NamedSharding(mesh, P("data"))
        on_each_device = jax.jit(
            partial(jax.shard_map, mesh=mesh, in_specs=(P("data"), P("data")), out_specs=P())(body)
        )
        return on_each_device(jax.device_put(data, rows), jax.device_put(variational, rows))

    return sharded_profiled_elbo


WRONG_PROFILED = {
    "statistics averaged with pmean": (_averaged_statistics, ("pmean",)),
    "the sum of each block's profiled ELBO": (_sum_of_block_profiled_elbos, ("each block",)),
    "X'M not summed over devices": (_local_cross_product, ("X'M",)),
    "the negative ELBO": (_negative_elbo, ("sign",)),
    "block statistics never summed": (_statistics_never_summed, ("never combined",)),
}


@pytest.mark.slow
@pytest.mark.parametrize("case", list(WRONG_PROFILED), ids=list(WRONG_PROFILED))
def test_profiled_elbo_wrong_answer(case, mesh):
    body, fragments = WRONG_PROFILED[case]
    assert_fails_with(check_sharded_profiled_elbo(_on_mesh(body), mesh), *fragments)
