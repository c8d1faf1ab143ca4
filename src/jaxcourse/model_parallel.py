"""Sharding a model, not only a batch: a small MLP trained with optax, its parameters split over a
`("data", "model")` mesh by FSDP, tensor parallelism or both, each step written twice (`jit` on
sharded arrays, and `shard_map`) and equal to the single-device step.

A `Plan` names the mesh axis each kind of split uses (None: not used). The samples are always
split over "data" (data parallelism); FSDP also stores every weight split over "data" and
gathers it just before use; tensor parallelism splits the hidden units over "model", so the
first layer's weight is cut by columns and the second's by rows (Megatron style), and the
second product leaves partial sums that one all-reduce adds up.
"""

from __future__ import annotations

from functools import partial
from typing import NamedTuple

import jax
import jax.numpy as jnp
import optax
from jax import lax
from jax.sharding import Mesh, NamedSharding
from jax.sharding import PartitionSpec as P

from .mesh import DATA, MODEL

LEARNING_RATE = 0.01
OPTIMIZER = optax.adam(LEARNING_RATE)
"""The optimizer of every variant: optax's Adam, whose state is sharded like the parameters."""


class Layer(NamedTuple):
    """One dense layer, `x @ weights + bias`: `weights` `(n_in, n_out)`, `bias` `(n_out,)`."""

    weights: jax.Array
    bias: jax.Array


class MLP(NamedTuple):
    """A two-layer perceptron: `relu(x @ W1 + b1) @ W2 + b2`."""

    hidden: Layer
    output: Layer


class Plan(NamedTuple):
    """Which mesh axis each split uses; None where the split is not used.

    Attributes:
        fsdp: the axis the stored weights are split over (fully sharded data parallelism).
        tensor: the axis the hidden units are split over (tensor parallelism).
    """

    fsdp: str | None
    tensor: str | None


PLANS = {
    "data parallel": Plan(fsdp=None, tensor=None),
    "FSDP": Plan(fsdp=DATA, tensor=None),
    "tensor parallel": Plan(fsdp=None, tensor=MODEL),
    "FSDP + tensor parallel": Plan(fsdp=DATA, tensor=MODEL),
}
"""The four variants of the chapter, all with the samples split over "data"."""


def init_mlp(n_in: int, n_hidden: int, n_out: int, *, key: jax.Array) -> MLP:
    """Weights drawn N(0, 1/n_in) (He-like scaling), biases zero."""
    key_hidden, key_output = jax.random.split(key)
    return MLP(
        Layer(
            jax.random.normal(key_hidden, (n_in, n_hidden)) / jnp.sqrt(n_in), jnp.zeros(n_hidden)
        ),
        Layer(
            jax.random.normal(key_output, (n_hidden, n_out)) / jnp.sqrt(n_hidden), jnp.zeros(n_out)
        ),
    )


def make_data(
    n_samples: int, n_in: int, n_out: int, *, key: jax.Array
) -> tuple[jax.Array, jax.Array]:
    """Inputs `(n_samples, n_in)` standard normal and targets `(n_samples, n_out)`, a smooth
    nonlinear function of them that an MLP can learn."""
    key_x, key_map = jax.random.split(key)
    x = jax.random.normal(key_x, (n_samples, n_in))
    mixing = jax.random.normal(key_map, (n_in, n_out)) / jnp.sqrt(n_in)
    return x, jnp.sin(x @ mixing)


def mlp(params: MLP, x: jax.Array) -> jax.Array:
    """The MLP on one device: `(n, n_in)` -> `(n, n_out)`."""
    hidden = jax.nn.relu(x @ params.hidden.weights + params.hidden.bias)
    return hidden @ params.output.weights + params.output.bias


def mse(prediction: jax.Array, y: jax.Array) -> jax.Array:
    """Mean squared error over all entries."""
    return jnp.mean(jnp.square(prediction - y))


def train_step(params: MLP, opt_state, x: jax.Array, y: jax.Array, optimizer=OPTIMIZER):
    """The single-device reference step: returns new parameters, optimizer state, and the loss
    before the step."""
    loss, grads = jax.value_and_grad(lambda p: mse(mlp(p, x), y))(params)
    updates, opt_state = optimizer.update(grads, opt_state, params)
    return optax.apply_updates(params, updates), opt_state, loss


def stored_specs(plan: Plan) -> MLP:
    """Where each parameter lives between steps, as partition specs.

    W1 `(n_in, n_hidden)`: rows over `fsdp`, columns over `tensor`. W2 `(n_hidden, n_out)`:
    rows over `tensor` (they match W1's columns), columns over `fsdp`. b1 follows the hidden
    units; b2 is small and replicated.
    """
    return MLP(
        Layer(P(plan.fsdp, plan.tensor), P(plan.tensor)),  # type: ignore[arg-type]  # a tree of PartitionSpecs shaped like the model
        Layer(P(plan.tensor, plan.fsdp), P()),  # type: ignore[arg-type]  # a tree of PartitionSpecs shaped like the model
    )


def used_specs(plan: Plan) -> MLP:
    """Where each parameter must be when it is used: `stored_specs` without the FSDP split,
    which the step undoes (an all-gather over `fsdp`) just before the layer needs it."""
    return stored_specs(Plan(fsdp=None, tensor=plan.tensor))


def place(tree, specs, mesh: Mesh):
    """`jax.device_put` of each leaf of `tree` with `NamedSharding(mesh, spec)`, `specs` a
    matching tree of partition specs (e.g. `stored_specs(plan)`)."""
    shardings = jax.tree.map(
        lambda spec: NamedSharding(mesh, spec), specs, is_leaf=lambda s: isinstance(s, P)
    )
    return jax.device_put(tree, shardings)


def check_sizes(
    plan: Plan, mesh: Mesh, *, n_samples: int, n_in: int, n_hidden: int, n_out: int
) -> None:
    """Raises `ValueError` unless every dimension that `plan` splits divides evenly over its axis."""
    split = {"samples": (n_samples, DATA)}
    if plan.fsdp:
        split |= {
            "inputs (W1's rows)": (n_in, plan.fsdp),
            "outputs (W2's columns)": (n_out, plan.fsdp),
        }
    if plan.tensor:
        split |= {"hidden units": (n_hidden, plan.tensor)}
    for what, (size, axis) in split.items():
        if axis not in mesh.shape:
            raise ValueError(
                f"the plan splits {what} over '{axis}', which is not an axis of {mesh}."
            )
        if size % mesh.shape[axis]:
            raise ValueError(
                f"{size} {what} do not split evenly over the {mesh.shape[axis]} devices of '{axis}'."
            )


# --- The global view: jit on sharded arrays, the collectives left to the compiler ------------


def sharded_mlp(params: MLP, x: jax.Array, plan: Plan) -> jax.Array:
    """The MLP on sharded arrays (call it under `jax.set_mesh(mesh)`): `x` rows over "data",
    the parameters as `stored_specs(plan)`; returns `(n, n_out)` with rows over "data".

    `jax.reshard` to `used_specs` is the FSDP gather (the compiler emits an all-gather; its
    transpose in the backward pass is a reduce-scatter). The second product contracts the
    hidden units, which tensor parallelism splits, so it names its output sharding: the
    compiler adds the partial sums with an all-reduce.
    """
    used = used_specs(plan)
    weights = jax.reshard(params.hidden.weights, used.hidden.weights)
    hidden = jax.nn.relu(x @ weights + params.hidden.bias)
    weights = jax.reshard(params.output.weights, used.output.weights)
    return jnp.matmul(hidden, weights, out_sharding=P(DATA, None)) + params.output.bias


def sharded_loss(params: MLP, x: jax.Array, y: jax.Array, *, plan: Plan) -> jax.Array:
    """The global loss of `sharded_mlp` (under `jax.set_mesh(mesh)`), replicated."""
    return mse(sharded_mlp(params, x, plan), y)


@partial(jax.jit, static_argnames=("plan", "optimizer"))
def sharded_step(
    params: MLP, opt_state, x: jax.Array, y: jax.Array, *, plan: Plan, optimizer=OPTIMIZER
):
    """`train_step` on sharded arrays (under `jax.set_mesh(mesh)`), the model as `sharded_mlp`.
    The gradients, the optimizer state and the new parameters keep `stored_specs(plan)`."""
    loss, grads = jax.value_and_grad(partial(sharded_loss, plan=plan))(params, x, y)
    updates, opt_state = optimizer.update(grads, opt_state, params)
    return optax.apply_updates(params, updates), opt_state, loss


# --- The per-device view: shard_map, every collective written out ----------------------------


def block_loss(params: MLP, x_block: jax.Array, y_block: jax.Array, *, plan: Plan) -> jax.Array:
    """Inside `shard_map`: the global loss, from one device's blocks of parameters and data.

    FSDP gathers each weight over `plan.fsdp` just before its layer; tensor parallelism
    leaves each device a partial sum of the second product, and `psum` over `plan.tensor`
    adds them; the `pmean` over "data" turns the block's mean into the mean over all samples.
    """
    weights = params.hidden.weights
    if plan.fsdp:
        weights = lax.all_gather(weights, plan.fsdp, axis=0, tiled=True)
    hidden = jax.nn.relu(x_block @ weights + params.hidden.bias)
    weights = params.output.weights
    if plan.fsdp:
        weights = lax.all_gather(weights, plan.fsdp, axis=1, tiled=True)
    output = hidden @ weights
    if plan.tensor:
        output = lax.psum(output, plan.tensor)
    return lax.pmean(mse(output + params.output.bias, y_block), DATA)


def shard_map_loss(plan: Plan, mesh: Mesh, *, check_vma: bool = True):
    """`block_loss` as a `shard_map` over `mesh`: a function of the global (sharded) parameters
    and data that returns the replicated loss. Differentiate it from outside, where the
    gradient is right whether `check_vma` is on or off."""
    return jax.shard_map(
        partial(block_loss, plan=plan),
        mesh=mesh,
        in_specs=(stored_specs(plan), P(DATA), P(DATA)),
        out_specs=P(),
        check_vma=check_vma,
    )


@partial(jax.jit, static_argnames=("plan", "mesh", "optimizer"))
def shard_map_step(params: MLP, opt_state, x, y, *, plan: Plan, mesh: Mesh, optimizer=OPTIMIZER):
    """`train_step` with the loss computed per device (`shard_map_loss`) and differentiated
    outside the `shard_map`; the update runs on the sharded arrays."""
    loss, grads = jax.value_and_grad(shard_map_loss(plan, mesh))(params, x, y)
    updates, opt_state = optimizer.update(grads, opt_state, params)
    return optax.apply_updates(params, updates), opt_state, loss


def with_layer_before(loss):
    """`loss(params, x, y)` behind one more trainable layer: a function of
    `((front, params), x, y)` that returns `loss(params, tanh(x @ front), y)`, `front` an
    `(n_in, n_in)` weight (replicated, say). The block's input is then computed from
    parameters, so the gradient must flow back through it: with tensor parallelism, each
    device's share of that gradient is a partial sum over its hidden units, one all-reduce more
    per step."""

    def deeper(front_and_params, x: jax.Array, y: jax.Array) -> jax.Array:
        front, params = front_and_params
        return loss(params, jnp.tanh(x @ front), y)

    return deeper


def train(step, params, opt_state, x, y, n_steps: int, **options):
    """Runs `n_steps` of `step(params, opt_state, x, y, **options)`, waiting for each loss;
    returns the final parameters and the list of losses."""
    losses = []
    for _ in range(n_steps):
        params, opt_state, loss = step(params, opt_state, x, y, **options)
        losses.append(float(loss))
    return params, losses
