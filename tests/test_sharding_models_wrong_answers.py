"""Wrong answers to the second sharding chapter's exercises, written from the exercise texts alone
as a hurried learner would (issue 27, point 4): each fails, and its hint names what the answer
did. The wrong answers of tests/test_sharding_models_exercises.py are not repeated here."""

from functools import partial

import jax
import jax.numpy as jnp
import numpy as np
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
    """conftest.py simulates 4 CPU devices: a (2, 2) grid, like the chapter's (4, 2) one."""
    return meshes.grid_mesh(2, 2)


# Exercise 1: psum from psum_scatter and all_gather -----------------------------------------


def _scattered(block):
    return lax.psum_scatter(block, "data", tiled=True)


def _untiled(block):
    """Works when the block has exactly as many rows as devices, and only then."""
    return lax.all_gather(lax.psum_scatter(block, "data"), "data")


def _averaged(block):
    return lax.all_gather(_scattered(block) / lax.axis_size("data"), "data", tiled=True)


def _summed_round_a_ring(block):
    n = lax.axis_size("data")
    total = current = block
    for _ in range(n - 1):
        current = lax.ppermute(current, "data", [(i, (i + 1) % n) for i in range(n)])
        total = total + current
    return total


def _gathered_along_columns(block):
    return lax.all_gather(_scattered(block), "data", axis=1, tiled=True)


def _own_piece_repeated(block):
    return jnp.tile(_scattered(block), (lax.axis_size("data"), 1))


def _times_the_devices(block):
    return block * lax.axis_size("data")


def _pieces_interleaved(block):
    return lax.all_gather(_scattered(block), "data").transpose(1, 0, 2).reshape(block.shape)


def _over_both_axes(block):
    axes = ("data", "model")
    return lax.all_gather(lax.psum_scatter(block, axes, tiled=True), axes, tiled=True)


WRONG_PSUM = {
    "untiled scatter and gather": (_untiled, ("tiled=True",)),
    "the mean, not the sum": (_averaged, ("mean",)),
    "summed round a ring with ppermute": (_summed_round_a_ring, ("ppermute",)),
    "pieces gathered along the columns": (_gathered_along_columns, ("should be one array",)),
    "its own piece repeated": (_own_piece_repeated, ("never gathers",)),
    "the block times the number of devices": (_times_the_devices, ("no collective",)),
    "pieces interleaved": (_pieces_interleaved, ("another order",)),
    "summed over 'model' too": (_over_both_axes, ("'model'",)),
}


@pytest.mark.slow_after_first
@pytest.mark.parametrize("case", list(WRONG_PSUM), ids=list(WRONG_PSUM))
def test_psum_from_pieces_wrong_answer(case, mesh):
    body, fragments = WRONG_PSUM[case]
    assert_fails_with(check_psum_from_pieces(body, mesh), *fragments)


# Exercise 2: an FSDP loss ------------------------------------------------------------------


def _gathered_weights(params):
    return (
        lax.all_gather(params.hidden.weights, "data", axis=0, tiled=True),
        lax.all_gather(params.output.weights, "data", axis=1, tiled=True),
    )


def _no_biases(params, x_block, y_block):
    w1, w2 = _gathered_weights(params)
    return lax.pmean(mp.mse(jax.nn.relu(x_block @ w1) @ w2, y_block), "data")


def _no_relu(params, x_block, y_block):
    w1, w2 = _gathered_weights(params)
    output = (x_block @ w1 + params.hidden.bias) @ w2 + params.output.bias
    return lax.pmean(mp.mse(output, y_block), "data")


def _bias_after_relu(params, x_block, y_block):
    w1, w2 = _gathered_weights(params)
    hidden = jax.nn.relu(x_block @ w1) + params.hidden.bias
    return lax.pmean(mp.mse(hidden @ w2 + params.output.bias, y_block), "data")


def _prediction(params, x_block):
    w1, w2 = _gathered_weights(params)
    return jax.nn.relu(x_block @ w1 + params.hidden.bias) @ w2 + params.output.bias


def _sum_of_squares(params, x_block, y_block):
    residual = _prediction(params, x_block) - y_block
    return lax.pmean(jnp.sum(residual**2), "data")


def _outputs_summed(params, x_block, y_block):
    residual = _prediction(params, x_block) - y_block
    return lax.pmean(jnp.mean(jnp.sum(residual**2, axis=1)), "data")


def _one_loss_per_output(params, x_block, y_block):
    residual = _prediction(params, x_block) - y_block
    return lax.pmean(jnp.mean(residual**2, axis=0), "data")


def _w2_stacked_then_reshaped(params, x_block, y_block):
    w1 = lax.all_gather(params.hidden.weights, "data").reshape(-1, params.hidden.weights.shape[1])
    w2 = lax.all_gather(params.output.weights, "data").reshape(params.output.weights.shape[0], -1)
    hidden = jax.nn.relu(x_block @ w1 + params.hidden.bias)
    return lax.pmean(mp.mse(hidden @ w2 + params.output.bias, y_block), "data")


def _samples_gathered(params, x_block, y_block):
    x = lax.all_gather(x_block, "data", tiled=True)
    y = lax.all_gather(y_block, "data", tiled=True)
    return mp.mse(_prediction(params, x), y)


WRONG_FSDP = {
    "no biases": (_no_biases, ("without the biases b1 and b2",)),
    "no relu": (_no_relu, ("without the relu",)),
    "b1 added after the relu": (_bias_after_relu, ("b1 added after the relu",)),
    "sum of squares, not the mean": (_sum_of_squares, ("entries of one device's block",)),
    "outputs summed, samples averaged": (_outputs_summed, ("once per output",)),
    "one loss per output": (_one_loss_per_output, ("one scalar", "shape (4,)")),
    "W2 stacked untiled, then reshaped": (_w2_stacked_then_reshaped, ("W2's", "tiled=False")),
    "the samples gathered too": (_samples_gathered, ("gathers the samples",)),
    "the course's own loss, partial(mp.block_loss, plan=FSDP)": (
        partial(mp.block_loss, plan=mp.PLANS["FSDP"]),
        ("runs mp.block_loss", "write FSDP's body yourself"),
    ),
    "the global view's sharded_loss (shown before the exercise) as the body": (
        lambda params, x_block, y_block: mp.sharded_loss(
            params, x_block, y_block, plan=mp.PLANS["FSDP"]
        ),
        ("the shapes of a product do not match", "jax.reshard"),
    ),
    "the course's own loss, called from a function of the learner's": (
        lambda params, x_block, y_block: mp.block_loss(
            params, x_block, y_block, plan=mp.PLANS["FSDP"]
        ),
        ("runs mp.block_loss",),
    ),
}


@pytest.mark.slow
@pytest.mark.parametrize("case", list(WRONG_FSDP), ids=list(WRONG_FSDP))
def test_fsdp_loss_wrong_answer(case, mesh):
    body, fragments = WRONG_FSDP[case]
    assert_fails_with(check_fsdp_loss(body, mesh), *fragments)


# Exercise 3: a ring all-gather -------------------------------------------------------------


def _to_next(n):
    return [(i, (i + 1) % n) for i in range(n)]


def _placed(block, pieces_by_source):
    n = len(pieces_by_source)
    gathered = jnp.zeros((n,) + block.shape, block.dtype)
    for source, piece in pieces_by_source:
        gathered = gathered.at[source].set(piece)
    return gathered.reshape(-1, block.shape[1])


def _sources_counted_the_wrong_way(block):
    n, me = lax.axis_size("data"), lax.axis_index("data")
    pieces, current = [(me, block)], block
    for step in range(1, n):
        current = lax.ppermute(current, "data", _to_next(n))
        pieces.append(((me + step) % n, current))  # it came from me - step
    return _placed(block, pieces)


def _ring_not_closed(block):
    n, me = lax.axis_size("data"), lax.axis_index("data")
    pieces, current = [(me, block)], block
    for step in range(1, n):
        current = lax.ppermute(current, "data", [(i, i + 1) for i in range(n - 1)])
        pieces.append(((me - step) % n, current))
    return _placed(block, pieces)


def _one_hot_psum(block):
    n, me = lax.axis_size("data"), lax.axis_index("data")
    placed = jnp.zeros((n,) + block.shape, block.dtype).at[me].set(block)
    return lax.psum(placed, "data").reshape(-1, block.shape[1])


def _direct_sends(block):
    n, me = lax.axis_size("data"), lax.axis_index("data")
    pieces = [(me, block)]
    for step in range(1, n):
        received = lax.ppermute(block, "data", [(i, (i + step) % n) for i in range(n)])
        pieces.append(((me - step) % n, received))
    return _placed(block, pieces)


def _one_step_too_many(block):
    n = lax.axis_size("data")
    received, current = [block], block
    for _ in range(n):
        current = lax.ppermute(current, "data", _to_next(n))
        received.append(current)
    return jnp.concatenate(received)


def _along_the_columns(block):
    n, me = lax.axis_size("data"), lax.axis_index("data")
    pieces, current = [(me, block)], block
    for step in range(1, n):
        current = lax.ppermute(current, "data", _to_next(n))
        pieces.append(((me - step) % n, current))
    stacked = _placed(block, pieces).reshape((n,) + block.shape)
    return jnp.concatenate(list(stacked), axis=1)


def _stacked_not_tiled(block):
    n, me = lax.axis_size("data"), lax.axis_index("data")
    pieces, current = [(me, block)], block
    for step in range(1, n):
        current = lax.ppermute(current, "data", _to_next(n))
        pieces.append(((me - step) % n, current))
    return _placed(block, pieces).reshape((n,) + block.shape)


def _numpy_copy(block):
    return np.concatenate([np.asarray(block)] * lax.axis_size("data"))


WRONG_RING = {
    "sources counted the wrong way round": (
        _sources_counted_the_wrong_way,
        ("not in device order",),
    ),
    "the ring not closed": (_ring_not_closed, ("(n - 1, 0)",)),
    "a psum of one-hot blocks": (_one_hot_psum, ("calls lax.psum",)),
    "direct sends over every distance": (_direct_sends, ("neighbour",)),
    "one step too many": (_one_step_too_many, ("should be one array of shape",)),
    "concatenated along the columns": (_along_the_columns, ("should be one array of shape",)),
    "stacked, not tiled": (_stacked_not_tiled, ("one 2-D array", "(4, 1, 2)")),
    "np.asarray of the traced block": (_numpy_copy, ("np.asarray", "tracer")),
}


@pytest.mark.slow
@pytest.mark.parametrize("case", list(WRONG_RING), ids=list(WRONG_RING))
def test_ring_all_gather_wrong_answer(case, mesh):
    body, fragments = WRONG_RING[case]
    assert_fails_with(check_ring_all_gather(body, mesh), *fragments)


# Right answers the checks above must not turn away -------------------------------------------


def _ring_in_a_fori_loop(block):
    n, me = lax.axis_size("data"), lax.axis_index("data")

    def step(s, carry):
        gathered, current = carry
        current = lax.ppermute(current, "data", _to_next(n))
        return gathered.at[(me - s) % n].set(current), current

    gathered = jnp.zeros((n,) + block.shape, block.dtype).at[me].set(block)
    gathered, _ = lax.fori_loop(1, n, step, (gathered, block))
    return gathered.reshape(-1, block.shape[1])


def _ring_the_other_way(block):
    n, me = lax.axis_size("data"), lax.axis_index("data")
    pieces, current = [(me, block)], block
    for step in range(1, n):
        current = lax.ppermute(current, "data", [(i, (i - 1) % n) for i in range(n)])
        pieces.append(((me + step) % n, current))
    return _placed(block, pieces)


@pytest.mark.slow
@pytest.mark.parametrize(
    "body", [_ring_in_a_fori_loop, _ring_the_other_way], ids=["fori_loop", "the other way"]
)
def test_ring_all_gather_right_answers_pass(body, mesh):
    verdict = check_ring_all_gather(body, mesh)
    assert verdict, verdict.message
