"""The second sharding chapter's checkers: reference solutions pass, typical mistakes get a useful hint."""

import jax
import jax.numpy as jnp
import pytest
from jax import lax
from wrong_answers import assert_fails_with

from jaxcourse import mesh as meshes
from jaxcourse import model_parallel as mp
from jaxcourse.exercises.sharding_models import (
    check_fsdp_loss,
    check_psum_from_pieces,
    check_ring_all_gather,
)


@pytest.fixture(scope="module")
def mesh():
    """conftest.py simulates 4 CPU devices: a (2, 2) grid."""
    return meshes.grid_mesh(2, 2)


# --- Exercise 1: psum from psum_scatter and all_gather -----------------------------------------


def test_psum_from_pieces_reference_passes(mesh):
    def psum_from_pieces(block):
        return lax.all_gather(lax.psum_scatter(block, "data", tiled=True), "data", tiled=True)

    verdict = check_psum_from_pieces(psum_from_pieces, mesh)
    assert verdict, verdict.message


def test_psum_from_pieces_stub_is_not_yet(mesh):
    def psum_from_pieces(block):
        raise NotImplementedError

    assert "no answer yet" in check_psum_from_pieces(psum_from_pieces, mesh).message


@pytest.mark.parametrize(
    "psum_from_pieces, hint",
    [
        (lambda block: lax.psum(block, "data"), "calls lax.psum"),
        (lambda block: lax.psum_scatter(block, "data", tiled=True), "should be one array of shape"),
        (
            lambda block: jnp.sum(lax.all_gather(block, "data"), axis=0),
            "without lax.psum_scatter: gathering every full block and adding them sends n - 1 "
            "whole blocks per device, n/2 times",
        ),
        (
            lambda block: lax.all_gather(block, "data", tiled=True)[: block.shape[0]],
            "does not hold the sum",
        ),
    ],
    ids=["psum itself", "scatter only", "gather then add", "gather only"],
)
def test_psum_from_pieces_wrong_answers(mesh, psum_from_pieces, hint):
    assert_fails_with(check_psum_from_pieces(psum_from_pieces, mesh), hint)


# --- Exercise 2: an FSDP loss ---------------------------------------------------------------


def _fsdp_loss(params, x_block, y_block, *, reduce=lax.pmean, gather=True):
    w1, w2 = params.hidden.weights, params.output.weights
    if gather:
        w1 = lax.all_gather(w1, "data", axis=0, tiled=True)
        w2 = lax.all_gather(w2, "data", axis=1, tiled=True)
    hidden = jax.nn.relu(x_block @ w1 + params.hidden.bias)
    loss = mp.mse(hidden @ w2 + params.output.bias, y_block)
    return reduce(loss, "data") if reduce else loss


@pytest.mark.slow
def test_fsdp_loss_reference_passes(mesh):
    verdict = check_fsdp_loss(_fsdp_loss, mesh)
    assert verdict, verdict.message


@pytest.mark.slow
def test_fsdp_loss_stub_is_not_yet(mesh):
    def fsdp_block_loss(params, x_block, y_block):
        raise NotImplementedError

    assert "no answer yet" in check_fsdp_loss(fsdp_block_loss, mesh).message


def _gather_the_wrong_axis(params, x_block, y_block):
    w2 = lax.all_gather(params.output.weights, "data", axis=0, tiled=True)
    hidden = jax.nn.relu(
        x_block @ lax.all_gather(params.hidden.weights, "data", axis=0, tiled=True)
    )
    return lax.pmean(mp.mse(hidden @ w2.T[: w2.shape[1]].T, y_block), "data")


@pytest.mark.slow
@pytest.mark.parametrize(
    "fsdp_block_loss, hint",
    [
        (lambda p, x, y: _fsdp_loss(p, x, y, reduce=lax.psum), "times too large"),
        (lambda p, x, y: _fsdp_loss(p, x, y, reduce=None), "first device's block only"),
        (lambda p, x, y: _fsdp_loss(p, x, y, gather=False), "gather each weight whole"),
        (_gather_the_wrong_axis, "along the axis it is split on"),
    ],
    ids=["psum of the means", "no pmean", "no gather", "wrong gather axis"],
)
def test_fsdp_loss_wrong_answers(mesh, fsdp_block_loss, hint):
    assert_fails_with(check_fsdp_loss(fsdp_block_loss, mesh), hint)


# --- Exercise 3: a ring all-gather ----------------------------------------------------------


def _ring(block, *, reorder=True, steps=None, direction=1):
    n = lax.axis_size("data")
    me = lax.axis_index("data")
    perm = [(i, (i + direction) % n) for i in range(n)]
    received, current = [block], block
    for _ in range((n - 1) if steps is None else steps):
        current = lax.ppermute(current, "data", perm)
        received.append(current)
    stacked = jnp.stack(received)  # received[s] came from device me - s * direction
    if reorder:
        sources = (me - direction * jnp.arange(len(received))) % n
        stacked = jnp.zeros_like(stacked).at[sources].set(stacked)
    return stacked.reshape(-1, block.shape[1])


@pytest.mark.slow
def test_ring_all_gather_reference_passes(mesh):
    verdict = check_ring_all_gather(_ring, mesh)
    assert verdict, verdict.message


@pytest.mark.slow
def test_ring_all_gather_other_direction_passes(mesh):
    assert check_ring_all_gather(lambda b: _ring(b, direction=-1), mesh)


def test_ring_all_gather_stub_is_not_yet(mesh):
    def ring_all_gather(block):
        raise NotImplementedError

    assert "no answer yet" in check_ring_all_gather(ring_all_gather, mesh).message


@pytest.mark.slow_after_first
@pytest.mark.parametrize(
    "ring_all_gather, hint",
    [
        (lambda b: lax.all_gather(b, "data", tiled=True), "calls lax.all_gather"),
        (lambda b: _ring(b, reorder=False), "not in device order"),
        (lambda b: jnp.concatenate([_ring(b, steps=2), b]), "missing a block"),
        (lambda b: _ring(b, steps=1), "should be one array of shape"),
    ],
    ids=["all_gather itself", "arrival order", "blocks repeated", "one step only"],
)
def test_ring_all_gather_wrong_answers(mesh, ring_all_gather, hint):
    assert_fails_with(check_ring_all_gather(ring_all_gather, mesh), hint)
