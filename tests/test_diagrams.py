"""The conceptual figures: each draws what JAX reports, and each plot function runs."""

import itertools
from dataclasses import dataclass

import jax
import jax.numpy as jnp
import matplotlib
import pytest
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P

from jaxcourse import diagrams, hlo

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


@pytest.fixture(autouse=True)
def close_figures():
    yield
    plt.close("all")


def chain(x):
    return jnp.tanh(x) * 2.0 + jnp.sin(x) ** 2 - jnp.exp(-x) / (1.0 + x * x)


# --- jit ------------------------------------------------------------------------------------------


def test_jit_pipeline_reports_what_each_stage_produced():
    """The primitives are the jaxpr's equations, the StableHLO count is the lowered module's
    operations, and the compiled instructions are the entry computation's, parameters left out."""
    x = jnp.linspace(0.0, 1.0, 5)
    pipeline = diagrams.jit_pipeline(chain, x)
    assert pipeline.name == "chain"
    assert pipeline.arg_names == ("x",) and pipeline.abstract_args == ("float32[5]",)
    assert pipeline.primitives == tuple(
        e.primitive.name for e in jax.make_jaxpr(chain)(x).jaxpr.eqns
    )
    assert "\n".join(pipeline.jaxpr_lines) == str(jax.make_jaxpr(chain)(x))
    assert len(pipeline.stablehlo_ops) == jax.jit(chain).lower(x).as_text().count(" = stablehlo.")
    entry = hlo.entry_computation(chain, x)
    assert pipeline.fusions == entry.count(" fusion(") >= 1
    assert len(pipeline.compiled_ops) == len(entry.splitlines()) - entry.count(" parameter(")


def test_jit_pipeline_of_pytree_arguments_lists_every_leaf_type():
    """With a pytree argument there is one type per leaf, and no argument names."""
    pipeline = diagrams.jit_pipeline(
        lambda p: p["w"] @ p["b"], {"w": jnp.ones((2, 3)), "b": jnp.ones(3)}
    )
    assert pipeline.abstract_args == ("float32[3]", "float32[2,3]") and pipeline.arg_names is None
    diagrams.plot_jit_pipeline(pipeline)


def test_jit_pipeline_plots_and_rejects_a_non_function():
    """The figure draws; a non-callable gets a TypeError."""
    ax = diagrams.plot_jit_pipeline(diagrams.jit_pipeline(chain, jnp.ones(4)))
    assert len(ax.patches) >= 8
    with pytest.raises(TypeError, match="needs a function"):
        diagrams.jit_pipeline(3.0, jnp.ones(4))


# --- vmap -----------------------------------------------------------------------------------------


def predict(w, x):
    return jax.nn.sigmoid(x @ w)


def normalise(v):
    return v / jnp.linalg.norm(v)


def test_batching_layout_of_a_shared_argument():
    """in_axes=(None, 0): w is whole in every call, features is sliced by rows, the scalar
    results stack into a vector."""
    layout = diagrams.batching_layout(predict, jnp.ones(3), jnp.ones((4, 3)), in_axes=(None, 0))
    assert layout.names == ("w", "x")
    assert layout.in_axes == (None, 0)
    assert layout.slice_shapes == ((3,), (3,))
    assert layout.slice_out_shape == ()
    assert layout.out_shape == (4,) and layout.batch_size == 4


def test_batching_layout_of_columns_matches_vmap():
    """in_axes=1, out_axes=1: each call sees a column and the results stay columns."""
    columns = jnp.arange(12.0).reshape(3, 4)
    layout = diagrams.batching_layout(normalise, columns, in_axes=1, out_axes=1, names=["columns"])
    assert layout.slice_shapes == ((3,),) and layout.slice_out_shape == (3,)
    assert layout.out_shape == jax.vmap(normalise, in_axes=1, out_axes=1)(columns).shape == (3, 4)
    assert layout.out_axis == 1 and layout.batch_size == 4
    assert diagrams.batching_layout(normalise, columns, in_axes=1, out_axes=-1).out_axis == 1


@pytest.mark.parametrize(
    "args, in_axes, error, match",
    [
        ((jnp.ones((2, 2, 2)),), 0, ValueError, "at most 2 dimensions"),
        ((jnp.ones(3),), None, ValueError, "at least one mapped argument"),
        ((jnp.ones(3),), (0, 0), ValueError, "2 entries for 1 arguments"),
        ((jnp.ones(3),), (True,), TypeError, "an int or None per argument"),
    ],
)
def test_batching_layout_rejects_what_it_cannot_draw(args, in_axes, error, match):
    """Arrays of 3 dimensions, nothing mapped, a wrong number of in_axes, a bool axis: clear errors."""
    with pytest.raises(error, match=match):
        diagrams.batching_layout(lambda *a: a[0], *args, in_axes=in_axes)


def test_plot_batching_draws_one_cell_per_entry():
    """Inputs, the slices of call 0, its result and the output: one square per entry of each."""
    layout = diagrams.batching_layout(predict, jnp.ones(3), jnp.ones((4, 3)), in_axes=(None, 0))
    ax = diagrams.plot_batching(layout, title="predict")
    cells = [patch for patch in ax.patches if isinstance(patch, matplotlib.patches.Rectangle)]
    assert len(cells) == 3 + 12 + 3 + 3 + 1 + 4


# --- pytrees --------------------------------------------------------------------------------------


@dataclass
class Scaled:
    value: jax.Array
    name: str


jax.tree_util.register_dataclass(Scaled, data_fields=["value"], meta_fields=["name"])


def _tree_leaves_in_drawing_order(node):
    if node.kind == "leaf":
        return [node]
    return list(
        itertools.chain.from_iterable(
            _tree_leaves_in_drawing_order(child) for _, child in node.children
        )
    )


def test_flatten_layout_numbers_leaves_as_flatten_does():
    """Leaf i of the drawn tree is leaf i of jax.tree.flatten; None and the dict's keys stay in
    the structure, and the treedef is JAX's own."""
    tree = [1.0, {"k": (2.0, None), "a": jnp.arange(3)}, "label"]
    layout = diagrams.flatten_layout(tree)
    leaves, treedef = jax.tree.flatten(tree)
    drawn = _tree_leaves_in_drawing_order(layout.root)
    assert [node.leaf_index for node in drawn] == list(range(len(leaves)))
    assert (
        [node.label for node in drawn]
        == list(layout.leaves)
        == ["1.0", "int32[3]", "2.0", "'label'"]
    )
    assert layout.treedef == str(treedef)
    dict_node = layout.root.children[1][1]
    assert dict_node.aux == ["a", "k"] and [key for key, _ in dict_node.children] == [
        "['a']",
        "['k']",
    ]
    assert dict_node.children[1][1].children[1][1].kind == "none"


def test_flatten_layout_shows_aux_data_of_a_registered_class():
    """A dataclass's meta field is aux data: kept on the node, not among the leaves."""
    layout = diagrams.flatten_layout({"scaled": Scaled(jnp.ones(2), "half"), "empty": []})
    scaled = dict(layout.root.children)["['scaled']"]
    assert scaled.label == "Scaled" and scaled.aux == ("half",)
    assert layout.leaves == ("float32[2]",)
    assert dict(layout.root.children)["['empty']"].kind == "container"
    diagrams.plot_flatten(layout)


# --- sharding -------------------------------------------------------------------------------------


def _meshes():
    devices = jax.devices()[:4]
    flat = jax.make_mesh((4,), ("data",), devices=devices)
    return flat, jax.make_mesh((2, 2), ("data", "model"), devices=devices)


@pytest.mark.parametrize(
    "mesh_index, spec, shape",
    [
        (0, P("data"), (8, 3)),
        (0, P(), (3,)),
        (0, P("data"), (8,)),
        (1, P("data", "model"), (8, 6)),
        (1, P("data"), (8, 6)),
        (1, P(None, "data"), (3, 4)),
    ],
)
def test_shard_blocks_match_devices_indices_map(mesh_index, spec, shape):
    """Every device holds exactly the block devices_indices_map gives it, and the distinct blocks
    tile the array: their areas add up to its size."""
    sharding = NamedSharding(_meshes()[mesh_index], spec)
    array = jax.device_put(jnp.zeros(shape), sharding)
    blocks = diagrams.shard_blocks(array)
    assert blocks == diagrams.shard_blocks(sharding, shape=shape)
    grid = (1, *shape) if len(shape) == 1 else shape
    for device, index in sharding.devices_indices_map(shape).items():
        index = (slice(None), *index) if len(shape) == 1 else index
        expected = tuple(piece.indices(size)[:2] for piece, size in zip(index, grid))
        holding = [block for block in blocks if device.id in block.device_ids]
        assert len(holding) == 1 and (holding[0].rows, holding[0].cols) == expected
    areas = [(block.rows[1] - block.rows[0]) * (block.cols[1] - block.cols[0]) for block in blocks]
    assert sum(areas) == grid[0] * grid[1]


def test_shard_blocks_of_addressable_shards_agree():
    """The drawn blocks are where the array's shards really are."""
    array = jax.device_put(jnp.zeros((8, 6)), NamedSharding(_meshes()[1], P("data", "model")))
    blocks = {block.device_ids[0]: block for block in diagrams.shard_blocks(array)}
    for shard in array.addressable_shards:
        rows, cols = blocks[shard.device.id].rows, blocks[shard.device.id].cols
        assert shard.data.shape == (rows[1] - rows[0], cols[1] - cols[0])


@pytest.mark.parametrize(
    "x, shape, error, match",
    [
        (jnp.zeros((2, 2, 2)), None, ValueError, "1- or 2-D"),
        ("array", None, TypeError, "jax.Array or a jax.sharding.Sharding"),
        (None, None, ValueError, "needs `shape`"),
    ],
)
def test_shard_blocks_rejects_bad_input(x, shape, error, match):
    """A 3-D array, a non-array, a sharding without a shape: clear errors."""
    x = NamedSharding(_meshes()[0], P()) if x is None else x
    with pytest.raises(error, match=match):
        diagrams.shard_blocks(x, shape=shape)


def test_plot_sharding_and_mesh_draw_one_rectangle_per_block_and_device():
    """One rectangle per block (plus a colour chip per device of a replicated block), and one
    per device of the mesh; a non-mesh gets a TypeError."""
    flat, grid = _meshes()
    ax = diagrams.plot_sharding(jax.device_put(jnp.zeros((8, 6)), NamedSharding(grid, P("data"))))
    assert len(ax.patches) == 2 + 4
    assert len(diagrams.plot_mesh(grid).patches) == len(diagrams.plot_mesh(flat).patches) == 4
    with pytest.raises(TypeError, match="Mesh"):
        diagrams.plot_mesh(jax.devices())


def test_visualize_array_sharding_draws_one_box_per_device(capsys):
    """What the sharding chapter shows: with rich (in requirements.txt, and on Colab) JAX prints
    one box per block, named by its device."""
    array = jax.device_put(jnp.zeros((8, 3)), NamedSharding(_meshes()[0], P("data")))
    jax.debug.visualize_array_sharding(array)
    picture = capsys.readouterr().out
    assert all(f"CPU {device.id}" in picture for device in _meshes()[0].devices.flat), picture


def test_visualize_array_sharding_takes_one_or_two_axes_only():
    """The chapter's 'arrays of one or two axes'."""
    array = jax.device_put(jnp.zeros((8, 3, 2)), NamedSharding(_meshes()[0], P("data")))
    with pytest.raises(ValueError, match="only works for shapes with 1 and 2 dimensions"):
        jax.debug.visualize_array_sharding(array)


# --- pallas -----------------------------------------------------------------------------------------


def test_grid_blocks_evaluate_the_index_maps_of_a_real_call():
    """row_sums on (13, 200) with (8, 128) blocks: a (2, 2) grid; each input block is read by one
    step, and each output block by both steps of the reduction axis; the edge blocks reach past
    the array."""
    from jaxcourse import pallas_kernels

    x = jnp.ones((13, 200))
    read = diagrams.grid_blocks(pallas_kernels.row_sums, x)
    assert read.grid == (2, 2) and read.array_shape == (13, 200) and read.block_shape == (8, 128)
    assert [visit.steps for visit in read.visits] == [((0, 0),), ((0, 1),), ((1, 0),), ((1, 1),)]
    assert read.visits[-1].rows == (8, 16) and read.visits[-1].cols == (128, 256)
    written = diagrams.grid_blocks(pallas_kernels.row_sums, x, operand="output")
    assert written.array_shape == (13,) and written.block_shape == (8,)
    assert [visit.steps for visit in written.visits] == [((0, 0), (0, 1)), ((1, 0), (1, 1))]
    assert [visit.cols for visit in written.visits] == [(0, 8), (8, 16)]
    ax = diagrams.plot_grid_blocks(read)
    assert len([p for p in ax.patches if p.get_fill()]) == 4  # one filled rectangle per block


@pytest.mark.parametrize(
    "fn, operand, match",
    [
        (jnp.sin, "input", "no pallas_call"),
        (None, "inputs", "'input' or 'output'"),
    ],
)
def test_grid_blocks_rejects_what_it_cannot_draw(fn, operand, match):
    from jaxcourse import pallas_kernels

    with pytest.raises(ValueError, match=match):
        diagrams.grid_blocks(fn or pallas_kernels.row_sums, jnp.ones((4, 4)), operand=operand)
