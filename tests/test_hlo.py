"""`jaxcourse.hlo`, and the fusion facts the benchmark chapter states, on jax 0.12.0.1 (CPU).

The chapter says which sums make XLA write the `(n, p)` array they sum to memory. These tests
compile the same expressions at the chapter's sizes, so a JAX release that fuses them
differently fails here, not in a learner's reading. On jax 0.10 most of them were the other
way round.
"""

from functools import partial

import jax
import jax.numpy as jnp
import pytest

from jaxcourse.hlo import entry_computation, entry_opcodes, intermediate_arrays, written_arrays
from jaxcourse.pln.constants import OAKS100_SHAPE, OAKS_SHAPE
from jaxcourse.reductions import BLOCK_ROWS, SUM_FORMS, column_sums, total

SHAPE = OAKS100_SHAPE
"""oaks stacked 100 times, the size of the chapter's examples."""

plain_sum = SUM_FORMS["jnp.sum(a * b)"]
plain_column_sums = SUM_FORMS["jnp.sum(a * b, axis=0)"]
ones_on_the_right = SUM_FORMS["jnp.sum((a * b) @ ones)"]
ones_on_the_left = SUM_FORMS["ones @ (a * b)"]
blocks_of_rows = SUM_FORMS[f"blocks of {BLOCK_ROWS} rows"]


def operands(shape, count=2):
    return [jax.ShapeDtypeStruct(shape, jnp.float32)] * count


def written(fn, shape=SHAPE):
    return intermediate_arrays(fn, *operands(shape), shape=shape)


@pytest.mark.parametrize("shape", [SHAPE, OAKS_SHAPE, (300, 20)])
def test_plain_sums_fuse_the_product(shape):
    """`jnp.sum(a * b)` and its column sums compute `a * b` inside the summing loop."""
    assert written(plain_sum, shape) == {}
    assert written(plain_column_sums, shape) == {}


@pytest.mark.parametrize("shape", [SHAPE, OAKS_SHAPE, (300, 20)])
def test_products_with_ones_write_the_product(shape):
    """`(a * b) @ ones` and `ones @ (a * b)` first write `a * b`, then pass it to a `dot`."""
    assert written(ones_on_the_right, shape) == {"wrapped_multiply": shape}
    assert written(ones_on_the_left, shape) == {"wrapped_multiply": shape}


def test_blocks_write_the_product_in_another_shape():
    """The sum over blocks of rows writes `a * b` rearranged into rows of `BLOCK_ROWS` entries:
    no `(n, p)` array, but one as large, which `intermediate_arrays` lists."""
    rearranged = (SHAPE[0] // BLOCK_ROWS * SHAPE[1], BLOCK_ROWS)
    assert list(written(blocks_of_rows).values()) == [rearranged]


def test_whether_a_plain_sum_fuses_depends_on_the_size():
    """The chapter's caveat: tiny arrays are summed in one loop of XLA's own, mid-sized ones after
    writing the products, and from a few thousand entries on (oaks) in one YNNPACK fusion."""
    assert written(plain_sum, (30, 20)) == {}
    assert "ynn_fusion" not in entry_computation(plain_sum, *operands((30, 20)))
    assert written(plain_sum, (60, 60)) == {"wrapped_multiply": (60, 60)}
    assert written(plain_sum, (63, 65)) == {"wrapped_multiply": (63, 65)}  # 4095 entries
    assert written(plain_sum, (64, 64)) == {}  # 4096 entries, the size `reductions` names
    assert written(plain_sum, OAKS_SHAPE) == {}
    assert "ynn_fusion" in entry_computation(plain_sum, *operands(OAKS_SHAPE))


def test_the_plain_sum_is_one_fusion_and_the_product_a_dot():
    """What the chapter shows underneath: one fusion that reads `a` and `b`, against a loop that
    writes `a * b` and a `dot` that reads it."""
    plain = entry_computation(plain_sum, *operands(SHAPE))
    assert plain.count(" fusion(") == 1 and " dot(" not in plain
    product = entry_computation(ones_on_the_left, *operands(SHAPE))
    assert "%wrapped_multiply = f32[11600,114]" in product and " dot(" in product


@pytest.mark.parametrize("shape", [SHAPE, OAKS_SHAPE])
def test_the_course_sums_are_fused(shape):
    """`total` and `column_sums`, which level 5 uses, write no array as large as the one they sum."""
    assert written(lambda a, b: total(a * b), shape) == {}
    assert written(lambda a, b: column_sums(a * b), shape) == {}
    assert intermediate_arrays(lambda s: column_sums(s * s), *operands(shape, 1), shape=shape) == {}


def test_parameters_and_results_are_not_listed_but_shared_values_are():
    """Inputs and results (one, or a tuple) are not listed; an array that two loops read is."""
    assert written(lambda a, b: a * b) == {}
    assert written(lambda a, b: (a * b, jnp.exp(a))) == {}

    def exp_read_twice(a, b):
        return jnp.exp(a) @ b[: SHAPE[1]].T, jnp.sum(jnp.exp(a), axis=0)

    assert written(exp_read_twice) == {"wrapped_exponential": SHAPE}


def test_small_arrays_are_written_but_not_listed():
    """`written_arrays` has every array, `intermediate_arrays` only those as large as `shape`."""
    arrays = written_arrays(ones_on_the_left, *operands(SHAPE))
    assert (SHAPE[0], 1) in arrays.values()  # the vector of ones
    assert written(ones_on_the_left) == {"wrapped_multiply": SHAPE}


def test_loop_bodies_are_searched():
    """Arrays written inside a `lax.fori_loop` body count too."""

    def loop(x):
        return jax.lax.fori_loop(0, 3, lambda i, y: jnp.exp(y) @ jnp.eye(SHAPE[1]), x)

    assert len(intermediate_arrays(loop, *operands(SHAPE, 1), shape=SHAPE)) >= 1


def test_a_sum_over_a_static_range_is_folded_to_a_constant():
    """The tracing chapter's claim: with n a Python constant, XLA computes sum(arange(n)) at compile
    time; the entry computation keeps no iota and no reduce, only the constant."""

    def sum_below(n):
        return jnp.sum(jnp.arange(n, dtype=jnp.float32))

    opcodes = entry_opcodes(partial(sum_below, 1_000_000))
    assert "constant" in opcodes and not {"iota", "reduce", "fusion"} & set(opcodes)
    assert "fusion" in entry_opcodes(
        lambda x: jnp.sum(x * x), jnp.ones(1000)
    )  # a sum of data is real work


@pytest.mark.parametrize("n_arrays", [1, 5, 6, 12])
def test_one_all_reduce_of_many_arrays_is_counted_once_with_all_its_bytes(n_arrays):
    """A psum of a tuple compiles to one all-reduce whose result type is a tuple; XLA marks
    every fifth element of a tuple type with `/*index=5*/`, which must not hide the instruction."""
    from jax.sharding import NamedSharding
    from jax.sharding import PartitionSpec as P

    from jaxcourse.hlo import collective_counts, collectives

    mesh = jax.make_mesh((4,), ("i",))
    sums = jax.shard_map(
        lambda *blocks: jax.lax.psum(blocks, "i"),
        mesh=mesh,
        in_specs=P("i"),
        out_specs=P(),
        check_vma=False,
    )
    arrays = [
        jax.device_put(jnp.ones((8, 3)), NamedSharding(mesh, P("i"))) for _ in range(n_arrays)
    ]
    assert collectives(sums, *arrays) == [("all-reduce", n_arrays * 2 * 3 * 4)]
    assert collective_counts(sums, *arrays)["all-reduce"] == 1


def test_passes_count_what_each_instruction_reads_and_writes():
    """`passes`: an elementwise product of two (n, p) arrays reads two and writes one, in bytes
    as XLA's cost analysis counts them; a sum of it reads two and writes none."""
    from jaxcourse import roofline
    from jaxcourse.hlo import passes

    args = operands(SHAPE)
    product = jax.jit(lambda a, b: a * b + 1.0).lower(*args).compile()
    (one,) = passes(product, SHAPE)
    assert (one.opcode, one.reads, one.writes) == ("fusion", 2, 1)
    assert one.bytes == 3 * 4 * SHAPE[0] * SHAPE[1] == roofline.cost(product).bytes_accessed
    summed = passes(jax.jit(plain_sum).lower(*args).compile(), SHAPE)
    assert sum(p.reads for p in summed) == 2 and sum(p.writes for p in summed) == 0


# XLA:CPU's multi-output fusion, off by default (the benchmark chapter's "Where the time goes")

LEVEL5_ITERATION = """
import json
from jaxcourse import hlo
from jaxcourse.pln import convergence, costs, level5, load_oaks
found = costs.iteration_passes(load_oaks(10), optimizer=level5.NEWTON_MOMENTUM,
                               monitor_every=convergence.DEFAULT_MONITOR_EVERY)
print(json.dumps({"totals": hlo.pass_totals(found), "several": [p.writes for p in found if p.writes > 1]}))
"""


def level5_iteration_in_a_fresh_process(xla_flags: str) -> dict:
    import json
    import os
    import subprocess
    import sys

    env = {**os.environ, "XLA_FLAGS": xla_flags, "JAX_PLATFORMS": "cpu"}
    done = subprocess.run(
        [sys.executable, "-c", LEVEL5_ITERATION],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_multi_output_fusion_merges_sibling_loops_but_writes_no_fewer_arrays():
    """The benchmark chapter's account of level 5's remaining passes. By default no fusion of
    the level-5 iteration writes two arrays. With `hlo.CPU_MULTI_OUTPUT_FUSION`, XLA:CPU runs
    sibling loops as one (the velocities of M and S, the new M and S, ...), which read shared
    operands once: fewer arrays read and fewer bytes, but no fewer written. A release that
    changes either fails here."""
    from jaxcourse.hlo import CPU_MULTI_OUTPUT_FUSION

    default = level5_iteration_in_a_fresh_process("")
    fused = level5_iteration_in_a_fresh_process(CPU_MULTI_OUTPUT_FUSION)
    assert default["several"] == []
    writes, reads, moved = default["totals"]
    assert len(fused["several"]) >= 3 and set(fused["several"]) == {2}
    fused_writes, fused_reads, fused_moved = fused["totals"]
    assert fused_writes >= writes and fused_reads < reads and fused_moved < moved
