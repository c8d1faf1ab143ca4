"""Checker of the sharding chapter's exercise on the gradient of a linear model's loss,
data-parallel."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh, NamedSharding
from jax.sharding import PartitionSpec as P

from ... import parallel
from ...checks import call_answer, exercise_checker, require, require_array, require_callable
from ._common import SHARDED_INPUT_HINTS, close_enough, require_per_device_program, require_unlike


@jax.jit
def _mse_grad(params, x, y):
    return jax.grad(parallel.mse_loss)(params, x, y)


def _linear_problem(n_rows: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n_rows, 3)).astype(np.float32)
    y = (x @ np.array([1.0, -2.0, 3.0]) + 0.5 + 0.1 * rng.standard_normal(n_rows)).astype(
        np.float32
    )
    return x, y


def _require_global_gradient(grads, params, x, y, n_devices: int) -> None:
    """The gradient over all rows; the typical wrong ones get the hint naming their mistake."""
    require(
        isinstance(grads, parallel.LinearParams),
        f"return the gradient as LinearParams (what jax.grad of mse_loss gives), got {type(grads).__name__}.",
    )
    for leaf, reference in zip(grads, params):
        require_array(
            leaf,
            np.shape(reference),
            what="each field of the gradient",
            expected="the shape of params",
        )
    expected = _mse_grad(params, x, y)
    require(
        not (
            close_enough(grads.weights, n_devices * expected.weights)
            and close_enough(grads.bias, n_devices * expected.bias)
        ),
        f"your gradient is {n_devices} times too large (one factor per device). Either you "
        "differentiated the psum of the block losses (each block holds an equal share of the "
        "rows, so the global mean loss is their pmean), or you reduced a gradient that is "
        "already summed: inside shard_map the gradient of a replicated parameter is already "
        "summed over devices. Differentiate lax.pmean of the block loss and do not reduce the "
        "gradient again.",
    )
    n_block = x.shape[0] // n_devices
    first_block = _mse_grad(params, x[:n_block], y[:n_block])
    require(
        not close_enough(grads.weights, first_block.weights),
        "this is the gradient of the first device's block only: the devices never combined "
        "their results. With check_vma=False, nothing sums the gradient over devices, not even a "
        "pmean inside the loss, and nothing warns you.",
    )
    require_unlike(
        grads,
        [
            (
                jax.tree.map(lambda p, g: p - parallel.LEARNING_RATE * g, params, expected),
                "you returned the updated parameters, params - learning rate x gradient: return "
                "the gradient itself.",
            ),
            (
                jax.tree.map(np.negative, expected),
                "the sign is flipped: return the gradient of the loss (what jax.grad gives), not "
                "the descent direction.",
            ),
            (
                jax.tree.map(lambda g: x.shape[0] * g, expected),
                f"your gradient is {x.shape[0]} times too large, the number of rows: you "
                "differentiated the sum of squared residuals, and mse_loss is their mean.",
            ),
        ],
    )
    require(
        close_enough(grads.weights, expected.weights) and close_enough(grads.bias, expected.bias),
        "the gradient differs from jax.grad(mse_loss) over all rows; each block holds an equal "
        "share of the rows, so the global loss is the pmean of the block losses.",
    )


@exercise_checker(
    hints=(
        "Write the loss over all rows as seen from one device: the block's mse_loss, combined over "
        "the devices with a collective. Then differentiate that global loss inside shard_map.",
        "Each block holds an equal share of the rows, so the global loss is "
        "lax.pmean(mse_loss(params, x_block, y_block), 'data'); return jax.grad of it as it is. "
        "Do not pmean or psum the gradient afterwards (a replicated parameter's gradient is already "
        "summed over devices), do not psum the losses, and return the gradient, not an updated "
        "step.",
    )
)
def check_sharded_grad(sharded_grad, mesh: Mesh) -> None:
    """`sharded_grad(params, x, y)` takes replicated `LinearParams` and `x`, `y` sharded by rows
    over `mesh` (axis "data"), and returns the gradient of `mse_loss` over all rows, computed
    per device with shard_map.
    """
    require_callable(sharded_grad, "sharded_grad")
    n_devices = mesh.shape[parallel.AXIS]
    rows = NamedSharding(mesh, P(parallel.AXIS))
    cases = [
        (
            parallel.LinearParams(jnp.array([0.5, 0.0, -1.0]), jnp.array(0.2)),
            _linear_problem(16 * n_devices, 3),
        ),
        (
            parallel.LinearParams(jnp.zeros(3), jnp.array(0.0)),
            _linear_problem(4 * n_devices, 4),
        ),  # zeros
    ]
    for params, (x, y) in cases:
        sharded = (params, jax.device_put(x, rows), jax.device_put(y, rows))
        grads = call_answer(sharded_grad, *sharded, what="sharded_grad", hints=SHARDED_INPUT_HINTS)
        _require_global_gradient(grads, params, x, y, n_devices)
    require_per_device_program(
        sharded_grad,
        sharded,
        "the gradient is right, but your function does not compute it per device: the exercise "
        "asks for jax.shard_map over the mesh, with in_specs=(P(), P('data'), P('data')), and a "
        "collective (lax.pmean of the block loss) that combines the devices.",
        what="sharded_grad",
    )
