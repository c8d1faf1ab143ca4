"""Each error shown in chapters/sharding.qmd, pinned: same call, same class, stable message fragment."""

import jax
import jax.numpy as jnp
import pytest
from jax import lax
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P

from jaxcourse import parallel

# More than a few seconds: left out of the fast tier (scripts/test.sh --fast).
pytestmark = pytest.mark.slow


@pytest.fixture
def devices():
    """`course_devices` may make a CPU device the default (single-GPU machines); undo that after."""
    previous = jax.config.jax_default_device
    yield parallel.course_devices()
    jax.config.update("jax_default_device", previous)


@pytest.fixture
def mesh(devices):
    return jax.make_mesh((len(devices),), (parallel.AXIS,), devices=devices)


@pytest.fixture
def batch():
    return parallel.make_regression(256, key=jax.random.key(0))


@pytest.fixture
def params0():
    return parallel.LinearParams(jnp.zeros(3), jnp.zeros(()))


def test_num_cpu_devices_after_backend_start_raises():
    """Changing the CPU device count once a backend runs is refused, and the count is kept."""
    jax.devices()  # the backends are running, as in the chapter after start_chapter()
    with pytest.raises(RuntimeError, match="should be updated before backends are initialized"):
        jax.config.update("jax_num_cpu_devices", 8)
    assert len(jax.devices("cpu")) == 4


def test_psum_outside_a_mapped_axis_raises():
    """A collective needs a transformation that binds its axis name."""
    with pytest.raises(NameError, match="unbound axis name: data"):
        lax.psum(jnp.ones(3), "data")


def test_pmap_without_the_reshape_raises(devices, batch):
    """pmap over the whole (256, 3) batch on 4 devices: it cuts 64-row blocks, then cannot squeeze."""
    x, _ = batch
    with pytest.raises(ValueError, match="cannot select an axis to squeeze out"):
        jax.pmap(lambda block: 2.0 * block, devices=devices)(x)


def test_explicit_mesh_needs_placed_params(mesh, batch, params0):
    """On an Explicit mesh, the gradient of unplaced params over sharded rows is ambiguous."""
    x, y = batch
    rows = NamedSharding(mesh, P(parallel.AXIS))
    with pytest.raises(
        Exception, match="Contracting dimensions are sharded and it is ambiguous"
    ) as raised:
        jax.jit(parallel.sgd_step)(params0, jax.device_put(x, rows), jax.device_put(y, rows))
    # The page shows this name; JAX exports the class only from a private module, so the test
    # checks the name the learner sees rather than importing it from there.
    assert type(raised.value).__name__ == "ShardingTypeError"


def test_shard_map_rejects_unsharded_input(mesh, batch, params0):
    """On an Explicit mesh, shard_map does not reshard: inputs must already match in_specs. The
    message offers what the chapter says: leave out in_specs, or `jax.reshard` the arguments (it
    does not name device_put)."""
    x, y = batch
    with pytest.raises(ValueError, match="does not match the specs of the input") as raised:
        parallel.make_shard_map_step(mesh)(params0, x, y)
    message = str(raised.value)
    assert "P(None, None)" in message
    assert "you can omit specifying it and shard_map will infer the in_specs" in message
    assert "you can use `jax.reshard` on the arguments" in message
    assert "device_put" not in message


def test_reshard_and_device_put_both_fix_the_unsharded_input(mesh, batch, params0):
    """The chapter's fix: jax.reshard gives the same layout as device_put, and the same step."""
    x, y = batch
    rows = NamedSharding(mesh, P(parallel.AXIS))
    step = parallel.make_shard_map_step(mesh)
    resharded = step(params0, jax.reshard(x, rows), jax.reshard(y, rows))
    placed = step(params0, jax.device_put(x, rows), jax.device_put(y, rows))
    assert jax.typeof(jax.reshard(x, rows)) == jax.typeof(jax.device_put(x, rows))
    assert parallel.max_abs_difference(resharded, placed) == 0.0


def test_set_mesh_replicates_uncommitted_params(mesh, batch, params0):
    """Under jax.set_mesh, the unplaced (uncommitted) params are taken as replicated: the step runs."""
    x, y = batch
    rows = NamedSharding(mesh, P(parallel.AXIS))
    with jax.set_mesh(mesh):
        new_params, _ = jax.jit(parallel.sgd_step)(
            params0, jax.device_put(x, rows), jax.device_put(y, rows)
        )
    assert new_params.weights.sharding.is_fully_replicated


def test_params_committed_to_one_device_fail_even_under_set_mesh(devices, mesh, batch, params0):
    x, y = batch
    rows = NamedSharding(mesh, P(parallel.AXIS))
    with (
        jax.set_mesh(mesh),
        pytest.raises(ValueError, match="Received incompatible devices for jitted computation"),
    ):
        jax.jit(parallel.sgd_step)(
            jax.device_put(params0, devices[0]), jax.device_put(x, rows), jax.device_put(y, rows)
        )


def test_indexing_along_the_split_axis_asks_for_an_out_sharding(mesh, batch):
    x, _ = batch
    x_sharded = jax.device_put(x, NamedSharding(mesh, P(parallel.AXIS)))
    with pytest.raises(Exception, match=r"Use `\.at\[\.\.\.\]\.get\(out_sharding=\)`") as raised:
        x_sharded[0]
    assert type(raised.value).__name__ == "ShardingTypeError"
    row = x_sharded.at[0].get(out_sharding=NamedSharding(mesh, P()))
    assert row.tolist() == x[0].tolist()


def test_jit_moves_uncommitted_inputs_but_refuses_committed_ones_elsewhere(mesh, batch, params0):
    x, y = batch
    step = parallel.make_jit_step(mesh)
    step(params0, x, y)  # uncommitted: moved to the in_shardings
    placed = jax.device_put(params0, NamedSharding(mesh, P()))
    rows = NamedSharding(mesh, P(parallel.AXIS))
    with pytest.raises(
        ValueError, match="Sharding passed to jit does not match the sharding on the respective arg"
    ):
        step(placed, jax.device_put(x, NamedSharding(mesh, P())), jax.device_put(y, rows))


def test_check_vma_false_leaves_each_device_its_block_gradient(mesh, batch, params0):
    """A pmean inside the differentiated loss reduces the gradient only with check_vma=True;
    grad of the shard_map from outside is right in both modes."""
    x, y = batch
    rows = NamedSharding(mesh, P(parallel.AXIS))
    xs, ys = jax.device_put(x, rows), jax.device_put(y, rows)
    true = jax.grad(parallel.mse_loss)(params0, x, y).weights

    def body(params, x_block, y_block):
        grads = jax.grad(
            lambda p: lax.pmean(parallel.mse_loss(p, x_block, y_block), parallel.AXIS)
        )(params)
        return grads.weights[None]

    for check_vma, all_true in ((True, True), (False, False)):
        per_device = jax.jit(
            jax.shard_map(
                body,
                mesh=mesh,
                in_specs=(P(), P("data"), P("data")),
                out_specs=P("data"),
                check_vma=check_vma,
            )
        )(params0, xs, ys)
        assert bool(jnp.allclose(per_device, true, rtol=1e-5, atol=1e-6).all()) is all_true
        assert jnp.allclose(per_device.mean(axis=0), true, rtol=1e-5, atol=1e-5)
        loss = jax.shard_map(
            lambda p, xb, yb: lax.pmean(parallel.mse_loss(p, xb, yb), parallel.AXIS),
            mesh=mesh,
            in_specs=(P(), P("data"), P("data")),
            out_specs=P(),
            check_vma=check_vma,
        )
        assert jnp.allclose(
            jax.jit(jax.grad(loss))(params0, xs, ys).weights, true, rtol=1e-5, atol=1e-6
        )
