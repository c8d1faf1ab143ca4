"""Pictures of the ideas, drawn from real JAX objects: jit's pipeline, vmap's axes, flatten, sharding,
collectives, a Pallas grid.

Each picture has two halves. A data function asks JAX what happens (`jit_pipeline`,
`batching_layout`, `flatten_layout`, `shard_blocks`, `collective_moves`, `grid_blocks`), so tests can check the picture against JAX;
a `plot_*` function draws that data with matplotlib and returns the axes.

One private module per picture (`_jit`, `_vmap`, `_pytrees`, `_sharding`, `_collectives`, `_pallas`), and `_drawing` for the
colours, boxes and arrows they share.
"""

from ._collectives import collective_moves as collective_moves
from ._collectives import plot_collective as plot_collective
from ._jit import jit_pipeline as jit_pipeline
from ._jit import plot_jit_pipeline as plot_jit_pipeline
from ._pallas import grid_blocks as grid_blocks
from ._pallas import plot_grid_blocks as plot_grid_blocks
from ._pytrees import flatten_layout as flatten_layout
from ._pytrees import plot_flatten as plot_flatten
from ._sharding import plot_mesh as plot_mesh
from ._sharding import plot_sharding as plot_sharding
from ._sharding import shard_blocks as shard_blocks
from ._vmap import batching_layout as batching_layout
from ._vmap import plot_batching as plot_batching
