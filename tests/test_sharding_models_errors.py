"""Each error shown in chapters/sharding-models.qmd, pinned: same call, same class, stable message fragment."""

from functools import partial

import jax
import jax.numpy as jnp
import pytest
from jax import lax
from jax.sharding import PartitionSpec as P

from jaxcourse import mesh as meshes


@pytest.fixture
def mesh():
    """The chapter's (data, model) grid, on the 4 devices of conftest.py: (2, 2)."""
    grid = meshes.grid_mesh(2, 2)
    with jax.set_mesh(grid):
        yield grid


def test_indexing_a_split_axis_asks_for_an_out_sharding(mesh):
    x_rows = jax.reshard(jnp.arange(16 * 8, dtype=jnp.float32).reshape(16, 8), P("data", None))
    with pytest.raises(Exception, match=r"Use `\.at\[\.\.\.\]\.get\(out_sharding=\)`") as raised:
        x_rows[3]
    assert type(raised.value).__name__ == "ShardingTypeError"
    # The fix of the chapter, and indexing along an axis that is not split:
    assert x_rows.at[3].get(out_sharding=P()).tolist() == list(range(24, 32))
    assert str(jax.typeof(x_rows[:, 2])) == "float32[16@data]"


def test_contracting_a_split_axis_asks_for_an_out_sharding(mesh):
    x_grid = jnp.ones((16, 8), out_sharding=P("data", "model"))
    w_rows = jnp.ones((8, 4), out_sharding=P("model", None))
    with pytest.raises(
        Exception, match="Contracting dimensions are sharded and it is ambiguous"
    ) as raised:
        x_grid @ w_rows
    assert type(raised.value).__name__ == "ShardingTypeError"
    assert (
        str(jax.typeof(jnp.matmul(x_grid, w_rows, out_sharding=P("data", None))))
        == "float32[16@data,4]"
    )


def test_all_gather_is_varying_so_out_specs_p_is_refused(mesh):
    x_line = jnp.ones((8, 8), out_sharding=P("data"))
    gather_everything = partial(jax.shard_map, mesh=mesh, in_specs=P("data"), out_specs=P())
    with pytest.raises(
        ValueError, match="out_specs which require replication which can't be statically inferred"
    ):
        gather_everything(lambda b: lax.all_gather(b, "data", tiled=True))(x_line)
    assert gather_everything(lambda b: lax.all_gather(b, "data", tiled=True, to="invarying"))(
        x_line
    ).shape == (8, 8)


def test_typeof_shows_the_sharding_and_reductions_propagate_it(mesh):
    x_grid = jnp.ones((16, 8), out_sharding=P("data", "model"))
    assert str(jax.typeof(x_grid)) == "float32[16@data,8@model]"
    assert str(jax.typeof(x_grid.sum(axis=1))) == "float32[16@data]"
    assert str(jax.typeof(x_grid.sum(axis=0))) == "float32[8@model]"


def test_auto_axes_leave_the_sharding_out_of_the_type():
    auto = meshes.grid_mesh(2, 2, axis_types=jax.sharding.AxisType.Auto)
    with jax.set_mesh(auto):
        x_auto = jax.device_put(jnp.ones((16, 8)), P("data", None))
        row = jax.jit(lambda x: x[3])(x_auto)
    assert str(jax.typeof(x_auto)) == "float32[16,8]"
    assert row.shape == (8,)


def test_grid_mesh_refuses_counts_it_cannot_use():
    with pytest.raises(
        ValueError, match=r"a \(4, 2\) mesh needs 8 devices, but only 4 are available"
    ):
        meshes.grid_mesh(4, 2)
    with pytest.raises(ValueError, match="do not form a grid with 2 along 'model'"):
        meshes.grid_shape(5)
    with pytest.raises(TypeError, match="data must be an int"):
        meshes.grid_mesh(2.0, 2)
    with pytest.raises(ValueError, match="model must be at least 1"):
        meshes.grid_mesh(2, 0)
    assert meshes.grid_shape(8) == (4, 2)
