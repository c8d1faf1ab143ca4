"""Checker of the second sharding chapter's exercise on an FSDP loss that gathers each layer."""

from __future__ import annotations

import sys

import jax
import jax.numpy as jnp
import numpy as np
import optax
from jax.sharding import Mesh, NamedSharding
from jax.sharding import PartitionSpec as P

from ... import model_parallel as mp
from ...checks import (
    CheckFailed,
    call_answer,
    close,
    describe,
    exercise_checker,
    require,
    require_accepts,
    require_array,
    require_callable,
)
from ...mesh import DATA
from .._jaxpr import traced_program
from ._common import collectives, numpy_hint

_ROWS_PER_DEVICE = 3
"""Samples per device: unlike every dimension of a weight block, so a gather of samples shows."""


def _problem(mesh: Mesh, seed: int):
    n_data = mesh.shape[DATA]
    n_in, n_hidden, n_out = 2 * n_data, 8, 2 * n_data
    key_params, key_data = jax.random.split(jax.random.key(seed))
    params = mp.init_mlp(n_in, n_hidden, n_out, key=key_params)
    params = mp.MLP(  # biases of both signs and none zero, so that a missing one shows
        mp.Layer(params.hidden.weights, jnp.linspace(-0.1, 0.1, n_hidden)),
        mp.Layer(params.output.weights, jnp.linspace(0.2, -0.3, n_out)),
    )
    x, y = mp.make_data(_ROWS_PER_DEVICE * n_data, n_in, n_out, key=key_data)
    return params, x, y


def _block_shapes(params: mp.MLP, n_data: int) -> dict[tuple, tuple[str, str, int]]:
    """Each stored weight block's shape -> (name, what the split cuts, gather axis)."""
    (n_in, n_hidden), n_out = params.hidden.weights.shape, params.output.weights.shape[1]
    return {
        (n_in // n_data, n_hidden): ("W1", "rows", 0),
        (n_hidden, n_out // n_data): ("W2", "columns", 1),
    }


def _forward_slips(params: mp.MLP, x: jax.Array) -> dict[str, jax.Array]:
    """The MLP's predictions with one usual slip each, named as a hint says it."""
    (w1, b1), (w2, b2) = params
    h, relu = x @ w1, jax.nn.relu
    return {
        "without the biases b1 and b2": relu(h) @ w2,
        "without the bias b1": relu(h) @ w2 + b2,
        "without the bias b2": relu(h + b1) @ w2,
        "without the relu": (h + b1) @ w2 + b2,
        "with b1 added after the relu, not before": (relu(h) + b1) @ w2 + b2,
        "with a relu on the output as well": relu(relu(h + b1) @ w2 + b2),
    }


def _scale_slips(n_data: int, n_samples: int, n_out: int) -> list[tuple[int, str]]:
    """Factors a loss is too large by, each with what the answer did to get it."""
    rows = n_samples // n_data
    return [
        (
            n_data,
            f"the loss is {n_data} times too large: lax.psum adds the block means; the mean over "
            "all samples is their lax.pmean.",
        ),
        (
            n_out,
            f"the loss is {n_out} times too large, once per output: it sums the squared errors over "
            f"the {n_out} outputs and averages over the samples, where the mean squared error "
            "averages over every entry (mp.mse).",
        ),
        (
            rows * n_out,
            f"the loss is {rows * n_out} times too large, the number of entries of one device's "
            "block: it adds up the block's squared errors (jnp.sum) where the mean squared error "
            "averages them.",
        ),
        (
            n_samples * n_out,
            f"the loss is {n_samples * n_out} times too large, the number of entries of all the "
            "samples: it adds up every squared error where the mean squared error averages them.",
        ),
    ]


def _wrong_loss_hint(loss: float, expected: float, params, x, y, n_data: int, found) -> str:
    """What an answer whose loss is not the single-device one did, as far as can be told."""
    for factor, hint in _scale_slips(n_data, x.shape[0], y.shape[1]):
        if factor > 1 and np.isclose(loss, factor * expected, rtol=1e-4):
            return hint
    block = float(mp.mse(mp.mlp(params, x[:_ROWS_PER_DEVICE]), y[:_ROWS_PER_DEVICE]))
    if np.isclose(loss, block, rtol=1e-4):
        return (
            "this is the loss of the first device's block only: the devices never combined their "
            "block means (lax.pmean over 'data')."
        )
    for slip, prediction in _forward_slips(params, x).items():
        slipped = float(mp.mse(prediction, y))
        if np.isclose(loss, slipped, rtol=1e-4) and not np.isclose(slipped, expected, rtol=1e-4):
            return (
                f"the loss is {loss:.5f}, the single-device MLP's loss {slip} ({expected:.5f} with "
                "the model relu(x @ W1 + b1) @ W2 + b2)."
            )
    shapes = _block_shapes(params, n_data)
    for collective in found:
        untiled = collective.name == "all_gather" and not collective.params.get("tiled", False)
        if untiled and collective.operand_shape in shapes:
            name, cut, axis = shapes[collective.operand_shape]
            # a stack along the split axis itself reshapes back in order: only another one mixes
            if collective.params.get("all_gather_dimension") != axis:
                return (
                    f"the loss is {loss:.5f}, not {expected:.5f}: your lax.all_gather of {name}'s "
                    f"block {collective.operand_shape} has tiled=False, so it stacks the blocks "
                    f"along a new axis {collective.params.get('all_gather_dimension')}, and a "
                    f"reshape of that stack mixes {name}'s {cut} from different devices. "
                    f"lax.all_gather({name}_block, 'data', axis={axis}, tiled=True) puts them back "
                    "in order."
                )
    return (
        f"the loss is {loss:.5f}, the single-device MLP gives {expected:.5f} on the same parameters "
        "and samples, and it is none of the usual slips (a psum of the block means, one block's "
        "loss, a sum of squares, a missing bias or relu, an untiled gather): compare your forward "
        "pass, step by step, with mp.mlp (relu(x @ W1 + b1) @ W2 + b2) and the loss with mp.mse."
    )


_LIBRARY_LOSSES = (mp.block_loss, mp.shard_map_loss)
"""The course's own loss for every plan, shown on the page: an answer that runs it has not
written the FSDP body."""


def _library_losses_run(call, *args, **kwargs) -> tuple[object, list[str]]:
    """`call(*args, **kwargs)`, and the names of `_LIBRARY_LOSSES` whose code ran meanwhile
    (watched with `sys.setprofile`, on this thread, where JAX traces), whatever the answer named
    them."""
    codes = {function.__code__: function.__name__ for function in _LIBRARY_LOSSES}
    ran: list[str] = []
    previous = sys.getprofile()

    def watch(frame, event, _arg):
        if event == "call" and frame.f_code in codes and codes[frame.f_code] not in ran:
            ran.append(codes[frame.f_code])

    sys.setprofile(watch)
    try:
        result = call(*args, **kwargs)
    finally:
        sys.setprofile(previous)
    return result, ran


_UNGATHERED_HINT = (
    TypeError,
    "dot_general requires contracting dimensions to have the same shape",
    "the shapes of a product do not match: inside shard_map each device holds only its slice of "
    "W1's rows and of W2's columns, so gather each weight whole just before its layer, along the "
    "axis it is split on: lax.all_gather(W1_block, 'data', axis=0, tiled=True) and "
    "lax.all_gather(W2_block, 'data', axis=1, tiled=True) (jax.reshard, the gather of the "
    "global view, does not gather inside shard_map)",
)
"""A weight used as this device's block, or gathered along the wrong axis."""


def _padded(spec, ndim: int) -> tuple:
    return tuple(spec) + (None,) * (ndim - len(tuple(spec)))


@exercise_checker(
    hints=(
        "Each device holds a slice of each weight matrix: lax.all_gather it back to full "
        "size, inside the body, before using it.",
        "W1 is split by rows (all_gather axis=0, tiled=True), W2 by columns (axis=1); the "
        "biases are whole. The loss is the mean over ALL samples: average the block's mean "
        "with lax.pmean over 'data' (a psum of the means is n_devices times too large, a "
        "block mean alone is one device's).",
    )
)
def check_fsdp_loss(fsdp_block_loss, mesh: Mesh) -> None:
    """`fsdp_block_loss(params, x_block, y_block)` runs inside shard_map on `mesh` with the
    parameters stored as `model_parallel.stored_specs(PLANS["FSDP"])` and the rows of x, y over
    "data"; it returns the mean squared error of the MLP over all samples. Differentiated from
    outside, two Adam steps in a row must equal the single-device steps, the new parameters keep
    their FSDP sharding, and the samples stay split (no gather of x or y)."""
    require_callable(fsdp_block_loss, "fsdp_block_loss")
    require(
        isinstance(mesh, Mesh) and DATA in mesh.shape,
        "pass the chapter's mesh, with a 'data' axis.",
    )
    specs = mp.stored_specs(mp.PLANS["FSDP"])
    n_data = mesh.shape[DATA]
    require_accepts(fsdp_block_loss, *_problem(mesh, 0), what="fsdp_block_loss")
    hints = (numpy_hint("fsdp_block_loss"), _UNGATHERED_HINT)

    def checked(params, x_block, y_block):
        loss = fsdp_block_loss(params, x_block, y_block)
        require(
            isinstance(loss, jax.Array) and loss.shape == (),
            f"fsdp_block_loss should return the loss, one scalar, got {describe(loss)}.",
        )
        return loss

    loss_fn = jax.shard_map(
        checked, mesh=mesh, in_specs=(specs, P(DATA), P(DATA)), out_specs=P(), check_vma=False
    )

    @jax.jit
    def step(params, opt_state, x, y):
        loss, grads = jax.value_and_grad(loss_fn)(params, x, y)
        updates, opt_state = mp.OPTIMIZER.update(grads, opt_state, params)
        return optax.apply_updates(params, updates), opt_state, loss

    reference_step = jax.jit(mp.train_step)
    rows = NamedSharding(mesh, P(DATA))
    found = None
    for seed in (0, 1):
        params, x, y = _problem(mesh, seed)
        placed = mp.place(params, specs, mesh)
        x_rows, y_rows = jax.device_put(x, rows), jax.device_put(y, rows)
        if found is None:
            program, library = _library_losses_run(
                traced_program, loss_fn, placed, x_rows, y_rows, what="fsdp_block_loss", hints=hints
            )
            require(
                not library,
                f"your loss runs mp.{library[0] if library else ''}, the course's loss for every "
                "plan: this exercise asks you to write FSDP's body yourself. Gather each weight "
                "with lax.all_gather over 'data' along the axis it is split on, just before its "
                "layer, and average the block's mean squared error with lax.pmean.",
            )
            found = collectives(program)
        reference_state, opt_state = mp.OPTIMIZER.init(params), mp.OPTIMIZER.init(placed)
        for number in (1, 2):
            reference_params, reference_state, expected = reference_step(
                params, reference_state, x, y
            )
            new_params, opt_state, loss = call_answer(
                step,
                placed,
                opt_state,
                x_rows,
                y_rows,
                what="fsdp_block_loss in the step",
                hints=hints,
            )
            loss = float(
                require_array(loss, (), what="fsdp_block_loss", expected="the loss, a scalar")
            )
            expected = float(expected)
            if not np.isclose(loss, expected, rtol=1e-4):
                hint = _wrong_loss_hint(loss, expected, params, x, y, n_data, found)
                raise CheckFailed(hint if number == 1 else f"after one right Adam step, {hint}")
            require(
                close(new_params, reference_params, rtol=1e-4, atol=1e-5),
                f"the loss is right but the parameters after Adam step {number} differ from the "
                "single-device step's: the gradient must flow through the gathers (keep every "
                "step inside the loss).",
            )
            for leaf, spec in zip(
                jax.tree.leaves(new_params),
                jax.tree.leaves(specs, is_leaf=lambda s: isinstance(s, P)),
            ):
                require(
                    _padded(leaf.sharding.spec, leaf.ndim) == _padded(spec, leaf.ndim),
                    f"a new parameter is laid out as {leaf.sharding.spec}, expected {spec}: the step "
                    "must keep every parameter split as FSDP stores it.",
                )
            params, placed = reference_params, new_params
    n_in, n_out = params.hidden.weights.shape[0], params.output.weights.shape[1]
    sample_blocks = {(_ROWS_PER_DEVICE, n_in), (_ROWS_PER_DEVICE, n_out)}
    assert found is not None  # traced on the first seed
    gathers = [c for c in found if c.name in ("all_gather", "all_gather_invariant")]
    require(
        not any(c.operand_shape in sample_blocks for c in gathers),
        "the values are right, but your function gathers the samples (lax.all_gather of x_block "
        "or y_block): every device then computes the loss of the whole batch, n times the work. "
        "FSDP keeps the samples split over 'data' and averages the block losses with lax.pmean.",
    )
    require(
        len(gathers) >= 2,
        f"the values are right, but your function calls lax.all_gather {len(gathers)} time(s): "
        "each layer's weight should be gathered just before the layer (lax.all_gather over "
        "'data', one per weight), as FSDP never stores a whole layer.",
    )
