"""Each error shown in chapters/sharding.qmd, pinned: same call, same class, stable message fragment."""

import jax
import jax.numpy as jnp
import pytest
from jax import lax
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P

from jaxcourse import parallel


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
    with pytest.raises(Exception, match="Contracting dimensions are sharded and it is ambiguous") as raised:
        jax.jit(parallel.sgd_step)(params0, jax.device_put(x, rows), jax.device_put(y, rows))
    # The page shows this name; JAX exports the class only from a private module, so the test
    # checks the name the learner sees rather than importing it from there.
    assert type(raised.value).__name__ == "ShardingTypeError"


def test_shard_map_rejects_unsharded_input(mesh, batch, params0):
    """On an Explicit mesh, shard_map does not reshard: inputs must already match in_specs."""
    x, y = batch
    with pytest.raises(ValueError, match="does not match the specs of the input"):
        parallel.make_shard_map_step(mesh)(params0, x, y)
