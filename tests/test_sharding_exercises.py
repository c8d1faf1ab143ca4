"""The sharding chapter's checkers: reference solutions pass, typical mistakes get a useful hint."""

from functools import partial

import jax
import jax.numpy as jnp
import pytest
from jax import lax
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P

from jaxcourse import parallel, pln
from jaxcourse.exercises.sharding import (
    check_global_standardise,
    check_sharded_grad,
    check_sharded_profiled_elbo,
)


@pytest.fixture(scope="module")
def devices():
    """`course_devices` may make a CPU device the default (single-GPU machines); undo that after."""
    previous = jax.config.jax_default_device
    yield parallel.course_devices()
    jax.config.update("jax_default_device", previous)


@pytest.fixture(scope="module")
def mesh(devices):
    return jax.make_mesh((len(devices),), ("data",), devices=devices)


# --- Exercise 1: standardise with shard_map ------------------------------------------------


def _on_rows(mesh):
    return lambda body: jax.jit(
        jax.shard_map(body, mesh=mesh, in_specs=P("data"), out_specs=P("data"))
    )


def test_standardise_reference_passes(mesh):
    @_on_rows(mesh)
    def standardise(x_block):
        mean = lax.pmean(jnp.mean(x_block, axis=0), "data")
        mean_of_squares = lax.pmean(jnp.mean(x_block**2, axis=0), "data")
        return (x_block - mean) / jnp.sqrt(mean_of_squares - mean**2)

    verdict = check_global_standardise(standardise, mesh)
    assert verdict, verdict.message


def test_standardise_two_pass_variant_passes(mesh):
    @_on_rows(mesh)
    def standardise(x_block):
        centred = x_block - lax.pmean(jnp.mean(x_block, axis=0), "data")
        return centred / jnp.sqrt(lax.pmean(jnp.mean(centred**2, axis=0), "data"))

    assert check_global_standardise(standardise, mesh)


def test_standardise_pmap_still_passes(devices, mesh):
    """Older code: the same statistics with pmap over the reshaped blocks are accepted too."""
    pmapped = jax.pmap(
        lambda b: (
            (b - lax.pmean(b.mean(axis=0), "data"))
            / jnp.sqrt(
                lax.pmean(jnp.mean((b - lax.pmean(b.mean(axis=0), "data")) ** 2, axis=0), "data")
            )
        ),
        axis_name="data",
        devices=devices,
    )

    def standardise(x):
        return pmapped(parallel.split_for_devices(x, len(devices))).reshape(x.shape)

    assert check_global_standardise(standardise, mesh)


def test_standardise_with_block_statistics_fails(mesh):
    @_on_rows(mesh)
    def standardise(x_block):
        return (x_block - x_block.mean(axis=0)) / x_block.std(axis=0)

    verdict = check_global_standardise(standardise, mesh)
    assert not verdict
    assert "its own block" in verdict.message


def test_standardise_with_mean_of_block_stds_fails(mesh):
    @_on_rows(mesh)
    def standardise(x_block):
        mean = lax.pmean(x_block.mean(axis=0), "data")
        return (x_block - mean) / lax.pmean(x_block.std(axis=0), "data")

    verdict = check_global_standardise(standardise, mesh)
    assert not verdict
    assert "the mean of the block stds is not the std" in verdict.message


def test_standardise_on_the_whole_array_fails(mesh):
    """Right values from plain jnp code on the sharded array: not the per-device program asked for."""

    @jax.jit
    def standardise(x):
        return (x - x.mean(axis=0)) / x.std(axis=0)

    verdict = check_global_standardise(standardise, mesh)
    assert not verdict
    assert "not a shard_map with collectives" in verdict.message


def test_standardise_stub_is_not_yet(mesh):
    @_on_rows(mesh)
    def standardise(x_block):
        raise NotImplementedError

    verdict = check_global_standardise(standardise, mesh)
    assert not verdict
    assert "no answer yet" in verdict.message


# --- Exercise 2: a data-parallel gradient with shard_map -----------------------------------


def _sharded(mesh, check_vma=True):
    return lambda body: jax.jit(
        jax.shard_map(
            body,
            mesh=mesh,
            in_specs=(P(), P("data"), P("data")),
            out_specs=P(),
            check_vma=check_vma,
        )
    )


def test_sharded_grad_reference_passes(mesh):
    @_sharded(mesh)
    def sharded_grad(params, x_block, y_block):
        def global_loss(params):
            return lax.pmean(parallel.mse_loss(params, x_block, y_block), "data")

        return jax.grad(global_loss)(params)

    verdict = check_sharded_grad(sharded_grad, mesh)
    assert verdict, verdict.message


def test_sharded_grad_ported_from_pmap_fails_with_factor_hint(mesh):
    @_sharded(mesh)
    def sharded_grad(params, x_block, y_block):
        return lax.pmean(jax.grad(parallel.mse_loss)(params, x_block, y_block), "data")

    verdict = check_sharded_grad(sharded_grad, mesh)
    assert not verdict
    assert f"{mesh.shape['data']} times too large" in verdict.message


def test_sharded_grad_unreduced_without_vma_check_fails(mesh):
    @_sharded(mesh, check_vma=False)
    def sharded_grad(params, x_block, y_block):
        return jax.grad(parallel.mse_loss)(params, x_block, y_block)

    verdict = check_sharded_grad(sharded_grad, mesh)
    assert not verdict
    assert "first device's block only" in verdict.message


def test_sharded_grad_wrong_type_fails(mesh):
    @_sharded(mesh)
    def sharded_grad(params, x_block, y_block):
        grads = jax.grad(lambda p: lax.pmean(parallel.mse_loss(p, x_block, y_block), "data"))(
            params
        )
        return grads.weights

    verdict = check_sharded_grad(sharded_grad, mesh)
    assert not verdict
    assert "LinearParams" in verdict.message


def test_sharded_grad_stub_is_not_yet(mesh):
    @_sharded(mesh)
    def sharded_grad(params, x_block, y_block):
        raise NotImplementedError

    verdict = check_sharded_grad(sharded_grad, mesh)
    assert not verdict
    assert "no answer yet" in verdict.message


# --- Exercise 3: the profiled PLN ELBO, data-parallel --------------------------------------


def _profiled(coef_fn):
    """A sharded profiled ELBO whose B comes from `coef_fn(x_block, m_block)`."""

    def sharded_profiled_elbo(data, variational, mesh):
        rows = NamedSharding(mesh, P("data"))

        @jax.jit
        @partial(jax.shard_map, mesh=mesh, in_specs=(P("data"), P("data")), out_specs=P())
        def on_each_device(data_block, variational_block):
            coef = coef_fn(data_block.covariates, variational_block.latent_mean)
            totals = lax.psum(pln.elbo_statistics(data_block, variational_block, coef), "data")
            return pln.elbo_from_statistics(totals, totals.scatter / totals.n_samples)

        return on_each_device(jax.device_put(data, rows), jax.device_put(variational, rows))

    return sharded_profiled_elbo


@pytest.mark.slow
def test_profiled_elbo_reference_passes(mesh):
    def global_coef(x_block, m_block):
        return jnp.linalg.solve(
            lax.psum(x_block.T @ x_block, "data"), lax.psum(x_block.T @ m_block, "data")
        )

    verdict = check_sharded_profiled_elbo(_profiled(global_coef), mesh)
    assert verdict, verdict.message


@pytest.mark.slow
def test_profiled_elbo_with_block_coef_fails(mesh):
    verdict = check_sharded_profiled_elbo(_profiled(pln.closed_form_coef), mesh)
    assert not verdict
    assert "each device fitted its own B" in verdict.message


@pytest.mark.slow
def test_profiled_elbo_with_wrong_covariance_fails(mesh):
    def sharded_profiled_elbo(data, variational, mesh):
        rows = NamedSharding(mesh, P("data"))

        @jax.jit
        @partial(jax.shard_map, mesh=mesh, in_specs=(P("data"), P("data")), out_specs=P())
        def on_each_device(data_block, variational_block):
            x_block, m_block = data_block.covariates, variational_block.latent_mean
            coef = jnp.linalg.solve(
                lax.psum(x_block.T @ x_block, "data"), lax.psum(x_block.T @ m_block, "data")
            )
            totals = lax.psum(pln.elbo_statistics(data_block, variational_block, coef), "data")
            block_rows = x_block.shape[0]  # the typical slip: the block's n, not the total
            return pln.elbo_from_statistics(totals, totals.scatter / block_rows)

        return on_each_device(jax.device_put(data, rows), jax.device_put(variational, rows))

    verdict = check_sharded_profiled_elbo(sharded_profiled_elbo, mesh)
    assert not verdict
    assert "expected" in verdict.message and "total number of samples" in verdict.message


def test_profiled_elbo_stub_is_not_yet(mesh):
    def sharded_profiled_elbo(data, variational, mesh):
        raise NotImplementedError

    verdict = check_sharded_profiled_elbo(sharded_profiled_elbo, mesh)
    assert not verdict
    assert "no answer yet" in verdict.message


def test_profiled_elbo_none_answer_is_not_yet(mesh):
    verdict = check_sharded_profiled_elbo(None, mesh)
    assert not verdict
    assert "no answer yet" in verdict.message


# --- Answers that ignore the devices or the mesh, or return the wrong structure ------------


def test_standardise_returning_the_statistics_too_fails(mesh):
    """(x, mean, std): one array was asked for."""

    @jax.jit
    @partial(jax.shard_map, mesh=mesh, in_specs=P("data"), out_specs=(P("data"), P(), P()))
    def standardise(x_block):
        mean = lax.pmean(jnp.mean(x_block, axis=0), "data")
        std = jnp.sqrt(lax.pmean(jnp.mean(x_block**2, axis=0), "data") - mean**2)
        return (x_block - mean) / std, mean, std

    verdict = check_global_standardise(standardise, mesh)
    assert not verdict and "got a tuple of 3 items" in verdict.message


def test_sharded_grad_ignoring_the_mesh_fails(mesh):
    """Plain jax.grad on arrays split over an explicit mesh: JAX asks for an output sharding."""
    verdict = check_sharded_grad(jax.jit(jax.grad(parallel.mse_loss)), mesh)
    assert not verdict and "jax.shard_map" in verdict.message


@pytest.mark.slow
def test_profiled_elbo_ignoring_the_mesh_fails(mesh):
    """pln.profiled_elbo on one device gives the value, but the exercise splits the samples."""
    verdict = check_sharded_profiled_elbo(
        lambda data, variational, mesh: pln.profiled_elbo(data, variational), mesh
    )
    assert not verdict and "ignores the mesh" in verdict.message


@pytest.mark.slow
def test_profiled_elbo_returning_an_array_of_block_values_fails(mesh):
    """One ELBO per device (out_specs=P('data')) instead of the scalar total."""

    def per_block(data, variational, mesh):
        rows = NamedSharding(mesh, P("data"))

        @partial(jax.shard_map, mesh=mesh, in_specs=(P("data"), P("data")), out_specs=P("data"))
        def on_each_device(data_block, variational_block):
            return pln.profiled_elbo(data_block, variational_block)[None]

        return on_each_device(jax.device_put(data, rows), jax.device_put(variational, rows))

    verdict = check_sharded_profiled_elbo(per_block, mesh)
    assert not verdict and "the ELBO, a scalar" in verdict.message
