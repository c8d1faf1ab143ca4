"""Checkers for the exercises of the second sharding chapter: psum from psum_scatter and
all_gather, an FSDP loss that gathers each layer, and a ring all-gather with ppermute.

Each learner function is a per-device body; the checker runs it in a `jax.shard_map` itself,
compares the result with the collective JAX provides (or the single-device step), and reads
the collectives used from the jaxpr.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import optax
from jax.sharding import Mesh, NamedSharding
from jax.sharding import PartitionSpec as P

from .. import model_parallel as mp
from ..checks import (
    call_answer,
    close,
    describe,
    exercise_checker,
    require,
    require_accepts,
    require_array,
    require_callable,
)
from ..mesh import DATA
from ._jaxpr import primitive_names, traced_program

HINTS = {
    "check_psum_from_pieces": (
        "lax.psum_scatter(block, 'data', tiled=True) leaves each device one slice of the "
        "sum; lax.all_gather(..., 'data', tiled=True) puts the slices back together.",
        "Use tiled=True in both (without it the scatter wants a leading axis of size n and "
        "the gather adds one); gather along the axis you scattered, rows (axis 0). A gather"
        " of the blocks themselves concatenates them instead of adding them.",
    ),
    "check_fsdp_loss": (
        "Each device holds a slice of each weight matrix: lax.all_gather it back to full "
        "size, inside the body, before using it.",
        "W1 is split by rows (all_gather axis=0, tiled=True), W2 by columns (axis=1); the "
        "biases are whole. The loss is the mean over ALL samples: average the block's mean "
        "with lax.pmean over 'data' (a psum of the means is n_devices times too large, a "
        "block mean alone is one device's).",
    ),
    "check_ring_all_gather": (
        "n - 1 calls of lax.ppermute along a ring (device i sends to i + 1) bring every "
        "block to every device; keep what each step receives.",
        "After s steps a device holds the block of device (me - s) % n, not of device s: "
        "put each received block at its owner's position (lax.axis_index gives me) before "
        "concatenating the rows, and use no all_gather, psum or all_to_all.",
    ),
}


_PSUM = ("psum", "psum_invariant")


def _line_mesh(mesh: Mesh) -> Mesh:
    """All of `mesh`'s devices along one axis "data": more devices make wrong orders visible."""
    require(
        isinstance(mesh, Mesh),
        f"pass the chapter's mesh (a jax.sharding.Mesh), got {type(mesh).__name__}.",
    )
    return jax.make_mesh((mesh.size,), (DATA,), devices=list(np.asarray(mesh.devices).flat))


def _run_per_device(body, mesh: Mesh, x: np.ndarray, what: str):
    """`body` on each device's rows of `x` (split over "data"), its results stacked by device,
    and the jaxpr of that program."""
    require_accepts(body, x[:1], what=what)

    def checked(block):  # a wrong kind of result gets a hint, not shard_map's error about specs
        out = body(block)
        require(
            isinstance(out, jax.Array) and out.ndim == 2,
            f"{what} should return one 2-D array (rows, columns) for each device's block, got {describe(out)}.",
        )
        return out

    spec = P(DATA)
    program = jax.shard_map(checked, mesh=mesh, in_specs=spec, out_specs=spec, check_vma=False)
    with jax.set_mesh(mesh):  # the chapter's own mesh may be set; this one is for these lines
        placed = jax.device_put(jnp.asarray(x), NamedSharding(mesh, spec))
        result = call_answer(program, placed, what=what)
        jaxpr = traced_program(program, placed, what=what)
    return result, primitive_names(jaxpr)


def _per_device_rows(result, n_devices: int, what: str, rows: int, columns: int) -> np.ndarray:
    out = require_array(
        result,
        (n_devices * rows, columns),
        what=f"{what} (stacked over devices)",
        expected=f"each device returns {rows} rows, like its input block" if rows else "",
    )
    return out.reshape(n_devices, rows, columns)


@exercise_checker("psum from psum_scatter and all_gather")
def check_psum_from_pieces(psum_from_pieces, mesh: Mesh) -> None:
    """`psum_from_pieces(block)` runs on one device's `(rows, columns)` block inside shard_map
    and returns `lax.psum(block, "data")`, built from `lax.psum_scatter` and `lax.all_gather`."""
    require_callable(psum_from_pieces, "psum_from_pieces")
    line = _line_mesh(mesh)
    n = line.shape[DATA]
    rng = np.random.default_rng(3)
    for rows in (n, 2 * n):
        x = rng.standard_normal((n * rows, 3)).astype(np.float32)
        result, names = _run_per_device(psum_from_pieces, line, x, "psum_from_pieces")
        got = _per_device_rows(result, n, "psum_from_pieces", rows, 3)
        total = x.reshape(n, rows, 3).sum(axis=0)
        require(
            all(close(got[d], total, rtol=1e-4, atol=1e-5) for d in range(n)),
            f"with {rows} rows per device, some device does not hold the sum over devices of the "
            "blocks. psum_scatter(block, 'data', tiled=True) leaves device i the i-th slice of the "
            "sum; all_gather(..., tiled=True) puts the slices back in order on every device.",
        )
    require(
        not any(name in _PSUM for name in names),
        "the values are right, but your function calls lax.psum (or pmean) itself; build the sum "
        "from lax.psum_scatter and lax.all_gather only.",
    )
    require(
        "reduce_scatter" in names,
        "the values are right, but without lax.psum_scatter: gathering every full block and "
        "adding them moves n times more data than scattering the sum first.",
    )
    require(
        "all_gather" in names, "use lax.all_gather to give every device all the scattered pieces."
    )


def _padded(spec, ndim: int) -> tuple:
    return tuple(spec) + (None,) * (ndim - len(tuple(spec)))


def _fsdp_problem(mesh: Mesh, seed: int):
    n_data = mesh.shape[DATA]
    n_in, n_hidden, n_out = 2 * n_data, 8, 2 * n_data
    key_params, key_data = jax.random.split(jax.random.key(seed))
    params = mp.init_mlp(n_in, n_hidden, n_out, key=key_params)
    params = params._replace(hidden=params.hidden._replace(bias=jnp.linspace(-0.1, 0.1, n_hidden)))
    x, y = mp.make_data(4 * n_data, n_in, n_out, key=key_data)
    return params, x, y


@exercise_checker("An FSDP loss that gathers each layer")
def check_fsdp_loss(fsdp_block_loss, mesh: Mesh) -> None:
    """`fsdp_block_loss(params, x_block, y_block)` runs inside shard_map on `mesh` with the
    parameters stored as `model_parallel.stored_specs(PLANS["FSDP"])` and the rows of x, y over
    "data"; it returns the mean squared error of the MLP over all samples. Differentiated from
    outside, two Adam steps must equal the single-device steps, and the new parameters keep
    their FSDP sharding."""
    require_callable(fsdp_block_loss, "fsdp_block_loss")
    require(
        isinstance(mesh, Mesh) and DATA in mesh.shape,
        "pass the chapter's mesh, with a 'data' axis.",
    )
    plan = mp.PLANS["FSDP"]
    specs = mp.stored_specs(plan)
    require_accepts(fsdp_block_loss, *_fsdp_problem(mesh, 0), what="fsdp_block_loss")

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

    n_data = mesh.shape[DATA]
    for seed in (0, 1):
        params, x, y = _fsdp_problem(mesh, seed)
        reference = jax.jit(mp.train_step)(params, mp.OPTIMIZER.init(params), x, y)
        placed = mp.place(params, specs, mesh)
        rows = NamedSharding(mesh, P(DATA))
        x_rows, y_rows = jax.device_put(x, rows), jax.device_put(y, rows)
        new_params, _, loss = call_answer(
            step,
            placed,
            mp.OPTIMIZER.init(placed),
            x_rows,
            y_rows,
            what="fsdp_block_loss in the step",
        )
        loss = float(require_array(loss, (), what="fsdp_block_loss", expected="the loss, a scalar"))
        expected = float(reference[2])
        block = float(mp.mse(mp.mlp(params, x[: x.shape[0] // n_data]), y[: x.shape[0] // n_data]))
        require(
            not np.isclose(loss, n_data * expected, rtol=1e-4) or n_data == 1,
            f"the loss is {n_data} times too large: lax.psum adds the block means; the mean over all "
            "samples is their lax.pmean.",
        )
        require(
            not (np.isclose(loss, block, rtol=1e-4) and not np.isclose(block, expected, rtol=1e-4)),
            "this is the loss of the first device's block only: the devices never combined their "
            "block means (lax.pmean over 'data').",
        )
        require(
            np.isclose(loss, expected, rtol=1e-4),
            f"the loss is {loss:.5f}, the single-device MLP gives {expected:.5f}: gather each weight "
            "whole (W1's rows and W2's columns are split over 'data') before its layer.",
        )
        require(
            close(new_params, reference[0], rtol=1e-4, atol=1e-5),
            "the loss is right but the updated parameters differ from the single-device step: "
            "the gradient must flow through the gathers (keep every step inside the loss).",
        )
        for leaf, spec in zip(
            jax.tree.leaves(new_params), jax.tree.leaves(specs, is_leaf=lambda s: isinstance(s, P))
        ):
            require(
                _padded(leaf.sharding.spec, leaf.ndim) == _padded(spec, leaf.ndim),
                f"a new parameter is laid out as {leaf.sharding.spec}, expected {spec}: the step must "
                "keep every parameter split as FSDP stores it.",
            )
    names = primitive_names(traced_program(loss_fn, placed, x_rows, y_rows, what="fsdp_block_loss"))
    require(
        names.count("all_gather") >= 2,
        "the values are right, but each layer's weight should be gathered just before the layer "
        "(lax.all_gather over 'data', one per weight): FSDP never stores a whole layer.",
    )


@exercise_checker("A ring all-gather with ppermute")
def check_ring_all_gather(ring_all_gather, mesh: Mesh) -> None:
    """`ring_all_gather(block)` runs on one device's `(rows, columns)` block inside shard_map and
    returns `lax.all_gather(block, "data", tiled=True)`: every device's block, in device order,
    passed around a ring with `lax.ppermute` only."""
    require_callable(ring_all_gather, "ring_all_gather")
    line = _line_mesh(mesh)
    n = line.shape[DATA]
    rng = np.random.default_rng(5)
    for rows in (1, 3):
        x = rng.standard_normal((n * rows, 2)).astype(np.float32)
        result, names = _run_per_device(ring_all_gather, line, x, "ring_all_gather")
        got = require_array(
            result,
            (n * n * rows, 2),
            what="ring_all_gather (stacked over devices)",
            expected=f"each device returns all {n} blocks, {n * rows} rows",
        ).reshape(n, n * rows, 2)
        blocks_of = lambda device, got=got, rows=rows: {
            tuple(np.round(got[device][k * rows : (k + 1) * rows], 5).ravel()) for k in range(n)
        }
        every_block = {tuple(np.round(x[k * rows : (k + 1) * rows], 5).ravel()) for k in range(n)}
        require(
            all(blocks_of(d) == every_block for d in range(n)),
            f"with {rows} row(s) per device, some device is missing a block (or holds one twice): "
            f"after {n - 1} ppermute steps around the ring, each device has seen all {n} blocks, "
            "its own included.",
        )
        require(
            all(close(got[d], x, rtol=1e-6, atol=1e-6) for d in range(n)),
            "every device has every block, but not in device order: the block received after s "
            "steps comes from device (i - s) % n (for a ring that sends i -> i + 1); put it at that "
            "position, e.g. with jnp.roll on the stacked blocks or an index from lax.axis_index.",
        )
    require(
        "all_gather" not in names,
        "the values are right, but your function calls lax.all_gather: pass the blocks around "
        "with lax.ppermute instead.",
    )
    require(
        names.count("ppermute") >= n - 1,
        f"the values are right, but with {names.count('ppermute')} ppermute(s); a ring of {n} devices "
        f"needs {n - 1} steps.",
    )
