"""Sharding a model: every parallel variant of the MLP step equals the single-device step, the
compiled collectives are pinned on the pinned jax, and the collectives module's pieces are right."""

from functools import partial

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax import lax
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P

from jaxcourse import collectives, diagrams, hlo
from jaxcourse import mesh as meshes
from jaxcourse import model_parallel as mp
from jaxcourse.parallel import max_abs_difference

# More than a few seconds: left out of the fast tier (scripts/test.sh --fast).
pytestmark = pytest.mark.slow

N_STEPS = 3


@pytest.fixture(scope="module")
def mesh():
    return meshes.grid_mesh(2, 2)


@pytest.fixture(scope="module")
def problem():
    x, y = mp.make_data(32, 8, 4, key=jax.random.key(0))
    params = mp.init_mlp(8, 16, 4, key=jax.random.key(1))
    reference = mp.train(jax.jit(mp.train_step), params, mp.OPTIMIZER.init(params), x, y, N_STEPS)
    return params, x, y, reference


def _sharded(mesh, problem, plan):
    params, x, y, _ = problem
    rows = NamedSharding(mesh, P(meshes.DATA))
    placed = mp.place(params, mp.stored_specs(plan), mesh)
    return placed, mp.OPTIMIZER.init(placed), jax.device_put(x, rows), jax.device_put(y, rows)


@pytest.mark.parametrize("name", list(mp.PLANS))
def test_every_variant_equals_the_single_device_step(mesh, problem, name):
    """jit on sharded arrays and shard_map, for each plan: same losses and parameters as one
    device (float32 sums in another order), and the parameters keep their stored layout."""
    plan = mp.PLANS[name]
    reference_params, reference_losses = problem[3]
    with jax.set_mesh(mesh):
        for step, options in [
            (mp.sharded_step, {"plan": plan}),
            (mp.shard_map_step, {"plan": plan, "mesh": mesh}),
        ]:
            params, losses = mp.train(step, *_sharded(mesh, problem, plan), N_STEPS, **options)
            assert max_abs_difference(params, reference_params) < 1e-5, step.__name__
            np.testing.assert_allclose(losses, reference_losses, rtol=1e-5)
            specs = jax.tree.leaves(mp.stored_specs(plan), is_leaf=lambda s: isinstance(s, P))
            for leaf, spec in zip(jax.tree.leaves(params), specs):
                assert tuple(leaf.sharding.spec) + (None,) * (
                    leaf.ndim - len(leaf.sharding.spec)
                ) == tuple(spec) + (None,) * (leaf.ndim - len(spec))


def test_gradient_from_outside_is_right_without_check_vma(mesh, problem):
    """Differentiating the shard_map from outside gives the global gradient with check_vma on or off."""
    params, x, y, _ = problem
    plan = mp.PLANS["FSDP + tensor parallel"]
    expected = jax.grad(lambda p: mp.mse(mp.mlp(p, x), y))(params)
    placed, _, x_rows, y_rows = _sharded(mesh, problem, plan)
    for check_vma in (True, False):
        grads = jax.jit(jax.grad(mp.shard_map_loss(plan, mesh, check_vma=check_vma)))(
            placed, x_rows, y_rows
        )
        assert max_abs_difference(grads, expected) < 1e-5


# Pinned on jax 0.12.0.1, CPU, a (2, 2) mesh: (all-reduce, all-gather, reduce-scatter) per step.
PINNED_COUNTS = {
    ("data parallel", "jit"): (1, 0, 0),
    ("data parallel", "shard_map"): (1, 0, 0),
    ("FSDP", "jit"): (1, 2, 0),
    ("FSDP", "shard_map"): (1, 2, 2),
    ("tensor parallel", "jit"): (2, 0, 0),
    ("tensor parallel", "shard_map"): (2, 0, 0),
    ("FSDP + tensor parallel", "jit"): (2, 2, 0),
    ("FSDP + tensor parallel", "shard_map"): (2, 2, 2),
}


@pytest.mark.parametrize("name, style", list(PINNED_COUNTS))
def test_collective_counts_in_the_compiled_step(mesh, problem, name, style):
    """The steps that the test above ran, as compiled (from JAX's cache), counted."""
    plan = mp.PLANS[name]
    step, options = (
        (mp.sharded_step, {"plan": plan})
        if style == "jit"
        else (mp.shard_map_step, {"plan": plan, "mesh": mesh})
    )
    with jax.set_mesh(mesh):
        counts = hlo.collective_counts(step, *_sharded(mesh, problem, plan), **options)
    assert (counts["all-reduce"], counts["all-gather"], counts["reduce-scatter"]) == PINNED_COUNTS[
        name, style
    ]
    assert counts["collective-permute"] == counts["all-to-all"] == 0


@pytest.mark.parametrize("name", ["tensor parallel", "FSDP + tensor parallel"])
@pytest.mark.parametrize("style", ["jit", "shard_map"])
def test_a_layer_before_the_tensor_parallel_block_adds_one_all_reduce(mesh, problem, name, style):
    """The chapter's tensor-parallel backward pass needs no all-reduce only because the block's
    input is data. With a trainable layer before it, the input's gradient is a partial sum over
    `model`: 2 all-reduces become 3, the new one the size of one device's block of x. The
    deeper gradient still equals the single-device one."""
    plan = mp.PLANS[name]
    placed, _, x_rows, y_rows = _sharded(mesh, problem, plan)
    params, x, y, _ = problem
    front = jnp.eye(x.shape[1]) * 0.5
    loss = partial(mp.sharded_loss, plan=plan) if style == "jit" else mp.shard_map_loss(plan, mesh)
    deeper = mp.with_layer_before(loss)
    with jax.set_mesh(mesh):
        front_placed = jax.device_put(front, NamedSharding(mesh, P()))
        shallow = hlo.collectives(jax.value_and_grad(loss), placed, x_rows, y_rows)
        deep = hlo.collectives(jax.value_and_grad(deeper), (front_placed, placed), x_rows, y_rows)
        deep_gradient = jax.jit(jax.grad(deeper))((front_placed, placed), x_rows, y_rows)
    all_reduces = [[size for op, size in found if op == "all-reduce"] for found in (shallow, deep)]
    assert [len(sizes) for sizes in all_reduces] == [2, 3]
    x_block_bytes = x.size // mesh.shape[meshes.DATA] * x.dtype.itemsize
    assert x_block_bytes in set(all_reduces[1]) - set(all_reduces[0])
    expected = jax.grad(mp.with_layer_before(lambda p, x, y: mp.mse(mp.mlp(p, x), y)))(
        (front, params), x, y
    )
    assert max_abs_difference(deep_gradient, expected) < 1e-5


def test_check_sizes_names_what_does_not_split(mesh):
    with pytest.raises(
        ValueError, match="5 hidden units do not split evenly over the 2 devices of 'model'"
    ):
        mp.check_sizes(mp.PLANS["tensor parallel"], mesh, n_samples=8, n_in=4, n_hidden=5, n_out=2)
    with pytest.raises(ValueError, match="not an axis of"):
        mp.check_sizes(mp.Plan("rows", None), mesh, n_samples=8, n_in=4, n_hidden=6, n_out=2)
    mp.check_sizes(
        mp.PLANS["FSDP + tensor parallel"], mesh, n_samples=8, n_in=4, n_hidden=6 + 2, n_out=2
    )


# --- collectives ------------------------------------------------------------------------------


def _per_device(mesh, body, *arrays):
    spec = P(meshes.DATA)
    program = jax.shard_map(
        body, mesh=mesh, in_specs=(spec,) * len(arrays), out_specs=spec, check_vma=False
    )
    with jax.set_mesh(mesh):
        return jax.jit(program)(*(jax.device_put(a, NamedSharding(mesh, spec)) for a in arrays))


def test_collective_matmul_equals_the_plain_product_with_ppermutes_only():
    line = jax.make_mesh((4,), (meshes.DATA,))
    x = jax.random.normal(jax.random.key(2), (16, 32))
    w = jax.random.normal(jax.random.key(3), (32, 8))
    for fn in (collectives.gathered_matmul, collectives.collective_matmul):
        got = _per_device(line, partial(fn, axis_name=meshes.DATA), x, w)
        np.testing.assert_allclose(
            np.asarray(got), np.asarray(x) @ np.asarray(w), rtol=1e-4, atol=1e-4
        )
    spec = P(meshes.DATA)
    program = jax.shard_map(
        partial(collectives.collective_matmul, axis_name=meshes.DATA),
        mesh=line,
        in_specs=(spec, spec),
        out_specs=spec,
    )
    with jax.set_mesh(line):
        args = [jax.device_put(a, NamedSharding(line, spec)) for a in (x, w)]
        counts = hlo.collective_counts(program, *args)
    assert counts["collective-permute"] == 3 and counts["all-gather"] == 0


def test_bytes_sent_follow_the_ring_algorithms():
    assert collectives.bytes_sent_per_device("psum", 1000, 4) == 1500
    assert (
        collectives.bytes_sent_per_device("psum_scatter", 1000, 4)
        + collectives.bytes_sent_per_device("all_gather", 250, 4)
        == 1500
    )
    assert collectives.bytes_sent_per_device("ppermute", 1000, 4) == 1000
    # all_to_all by direct links: each of the other three pieces sent once, not forwarded.
    assert collectives.bytes_sent_per_device("all_to_all", 1000, 4) == 750
    with pytest.raises(ValueError, match="unknown collective 'pmax'"):
        collectives.bytes_sent_per_device("pmax", 1000, 4)
    with pytest.raises(ValueError, match="n_devices must be an int of at least 1"):
        collectives.bytes_sent_per_device("psum", 1000, 0)
    assert collectives.ring(3) == [(0, 1), (1, 2), (2, 0)]


def test_each_collective_compiles_to_its_hlo_instruction(mesh):
    bodies = {
        "psum": lambda b: lax.psum(b, meshes.DATA),
        "all_gather": lambda b: lax.all_gather(b, meshes.DATA, tiled=True),
        "psum_scatter": lambda b: lax.psum_scatter(b, meshes.DATA, tiled=True),
        "ppermute": lambda b: lax.ppermute(b, meshes.DATA, collectives.ring(2)),
        "all_to_all": lambda b: lax.all_to_all(b, meshes.DATA, 0, 0, tiled=True),
    }
    with jax.set_mesh(mesh):
        x = jnp.ones((8, 4), out_sharding=P(meshes.DATA))
        for name, body in bodies.items():
            program = jax.shard_map(
                body, mesh=mesh, in_specs=P(meshes.DATA), out_specs=P(meshes.DATA), check_vma=False
            )
            counts = hlo.collective_counts(program, x)
            assert {op for op, n in counts.items() if n} == {collectives.HLO_NAMES[name]}, name


def test_collective_moves_read_back_what_moved():
    line = jax.make_mesh((4,), (meshes.DATA,))
    gathered = diagrams.collective_moves(
        lambda b: lax.all_gather(b, meshes.DATA, tiled=True), line, meshes.DATA, blocks=2
    )
    assert gathered.before[1] == (frozenset({(1, 0)}), frozenset({(1, 1)}))
    assert all(
        row == tuple(frozenset({(d, j)}) for d in range(4) for j in range(2))
        for row in gathered.after
    )
    summed = diagrams.collective_moves(
        lambda b: lax.psum(b, meshes.DATA), line, meshes.DATA, blocks=2
    )
    assert summed.after[3] == tuple(frozenset((d, j) for d in range(4)) for j in range(2))
    shifted = diagrams.collective_moves(
        lambda b: lax.ppermute(b, meshes.DATA, collectives.ring(4)), line, meshes.DATA, blocks=1
    )
    assert shifted.after[0] == (frozenset({(3, 0)}),)
    diagrams.plot_collective(summed, title="psum")
