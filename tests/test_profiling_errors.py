"""The profiling chapter's claims, pinned: its error cells, the trace reader on a real trace, the
cost-analysis counts and the memory figures it relies on, and the persistent cache (turned on in
a subprocess only)."""

import gzip
import json
import os
import subprocess
import sys
from functools import partial

import jax
import jax.numpy as jnp
import pytest

from jaxcourse import compilation_cache, memory, profiling, roofline
from jaxcourse.exercises.profiling import scan_loss, wide_body
from jaxcourse.pln import simulate
from jaxcourse.pln.costs import iteration_cost

# More than a few seconds: left out of the fast tier (scripts/test.sh --fast).
pytestmark = pytest.mark.slow

SQUARE = jax.ShapeDtypeStruct((256, 256), jnp.float32)


def layer(x, w):
    return jnp.tanh(x @ w) @ w.T


@pytest.fixture(scope="module")
def layer_trace(tmp_path_factory):
    """A real trace: one compiling call and two cached calls of `layer`, waited for inside."""
    directory = tmp_path_factory.mktemp("trace")
    layer_jit = jax.jit(layer)
    x, w = jax.block_until_ready(
        (jnp.ones((512, 256)), jnp.ones((256, 256)) / 256)
    )  # not run in the trace

    def three_calls():
        return [layer_jit(x, w) for _ in range(3)]

    return profiling.capture(three_calls, directory=directory)


# Error cells -----------------------------------------------------------------------------------


def test_cost_of_a_jitted_function_never_compiled():
    """Cell 'roofline.cost(layer_jit)'."""
    with pytest.raises(
        TypeError,
        match="cost needs a compiled program, and 'layer' was never compiled for any arguments",
    ):
        roofline.cost(jax.jit(layer))


def test_memory_analysis_of_a_lowered_program():
    """Cell 'jax.jit(affine).lower(x_big).memory_analysis()': only a compiled program has one."""
    with pytest.raises(AttributeError, match="'Lowered' object has no attribute 'memory_analysis'"):
        jax.jit(lambda x: x * 2 + 1).lower(jnp.ones((1_000, 1_000))).memory_analysis()


def test_the_package_names_what_was_not_compiled():
    with pytest.raises(TypeError, match="only lowered: call .compile"):
        memory.memory_figures(jax.jit(layer).lower(SQUARE, SQUARE))
    with pytest.raises(TypeError, match="got a int"):
        roofline.cost(3)


# The trace reader, on a real trace ---------------------------------------------------------------


def test_each_call_of_a_jitted_function_is_two_nested_events_and_counts_once(layer_trace):
    """jax 0.12 records a call from Python as two nested `PjitFunction` events: `of_kind` sees
    six for the trace's three calls, `jitted_calls` three (the profiling chapter counts calls
    with it). A release that records one event per call fails the first assertion."""
    events = profiling.read_trace(layer_trace)
    dispatched = [
        e for e in profiling.of_kind(events, "dispatch") if e.name == "PjitFunction(layer)"
    ]
    assert len(dispatched) == 6
    calls = [e for e in profiling.jitted_calls(events) if e.name == "PjitFunction(layer)"]
    assert len(calls) == 3 and all(call in dispatched for call in calls)


def test_a_real_trace_has_every_kind_the_chapter_draws(layer_trace):
    """The first call compiles; every call is dispatched from Python and run; XLA:CPU's thunks
    belong to the compiled module, and their names are HLO instructions."""
    events = profiling.read_trace(layer_trace)
    kinds = {event.kind for event in events}
    assert {"dispatch", "compile", "run", "thunk"} <= kinds
    assert [e.name for e in profiling.of_kind(events, "dispatch")].count("PjitFunction(layer)") >= 3
    thunks = [
        event for event in profiling.of_kind(events, "thunk") if event.hlo_module == "jit_layer"
    ]
    assert thunks and len(thunks) % 3 == 0  # the same thunks at each of the three runs
    assert all(event.start_us >= 0 and event.duration_us >= 0 for event in events)
    assert min(event.start_us for event in events) == 0
    assert events == sorted(events, key=lambda event: event.start_us)
    first_compile = profiling.of_kind(events, "compile")[0]
    assert (
        min(event.start_us for event in thunks) >= first_compile.end_us
    )  # compiled first, then run


def test_a_thunk_contains_what_runs_within_it_on_its_thread_whatever_its_name():
    def thunk(name, start, duration, thread="t1"):
        return profiling.TraceEvent(name, "thunk", thread, float(start), float(duration), "jit_f")

    call, body, other_thread = (
        thunk("call.6", 0, 100),
        thunk("dot.6", 0, 100),
        thunk("x", 10, 5, "t2"),
    )
    assert profiling.contains(call, body) and profiling.contains(body, call)  # equal intervals
    assert not profiling.contains(call, call)
    assert not profiling.contains(call, other_thread)
    assert not profiling.contains(call, thunk("late", 90, 20))


def test_thunk_totals_and_gaps_are_consistent(layer_trace):
    events = profiling.read_trace(layer_trace)
    thunks = profiling.of_kind(events, "thunk")
    totals = profiling.time_by_name(thunks)
    assert sum(count for _, _, count in totals) == len(thunks)
    assert [total for _, total, _ in totals] == sorted(
        (total for _, total, _ in totals), reverse=True
    )
    busy = profiling.busy_intervals(thunks)
    assert all(end1 < start2 for (_, end1), (start2, _) in zip(busy, busy[1:]))
    gaps = profiling.idle_gaps(events)
    assert len(gaps) == len(busy) - 1
    assert profiling.idle_gaps(events, min_gap_us=float("inf")) == []


def test_the_perfetto_json_has_intervals_and_names_only(layer_trace):
    """'What a CPU trace cannot show': no counter events, and a thunk records no work."""
    with gzip.open(layer_trace, "rt") as file:
        raw = json.load(file)["traceEvents"]
    assert {event["ph"] for event in raw if "ph" in event} == {"M", "X"}
    keys = {key for event in raw if "hlo_op" in event.get("args", {}) for key in event["args"]}
    assert not {"flops", "bytes"} & keys and "hlo_module" in keys


def test_reading_a_folder_or_a_file_gives_the_same_events(layer_trace):
    folder = layer_trace.parents[3]
    assert profiling.find_trace(folder) == layer_trace
    assert profiling.read_trace(folder) == profiling.read_trace(layer_trace)


def test_a_folder_without_a_trace(tmp_path):
    with pytest.raises(ValueError, match="no perfetto_trace.json.gz under"):
        profiling.find_trace(tmp_path)
    with pytest.raises(ValueError, match="is not a folder"):
        profiling.find_trace(tmp_path / "missing")


def test_a_file_that_is_not_a_trace(tmp_path):
    not_gzip = tmp_path / "perfetto_trace.json.gz"
    not_gzip.write_text("hello")
    with pytest.raises(ValueError, match="is not a profiler trace"):
        profiling.read_trace(not_gzip)
    no_events = tmp_path / "other.json.gz"
    with gzip.open(no_events, "wt") as file:
        json.dump({"displayTimeUnit": "ns"}, file)
    with pytest.raises(ValueError, match="has no 'traceEvents' list"):
        profiling.read_trace(no_events)
    with pytest.raises(ValueError, match="kind must be one of"):
        profiling.of_kind([], "kernel")


# Cost analysis -----------------------------------------------------------------------------------


def test_a_matmul_costs_two_n_cubed_flops_and_three_matrices_of_bytes():
    cost = roofline.cost_of(lambda a, b: a @ b, SQUARE, SQUARE)
    assert cost == roofline.Cost(2 * 256**3, 0.0, 3 * 256**2 * 4)
    assert cost.intensity == pytest.approx(256 / 6)


def test_a_loop_is_counted_once_and_loop_body_cost_counts_one_iteration():
    def repeated_products(x, n_steps, unroll=1):
        return jax.lax.fori_loop(0, n_steps, lambda i, x: jnp.tanh(x @ x), x, unroll=unroll)

    ten, thousand = (
        roofline.cost_of(partial(repeated_products, n_steps=n), SQUARE) for n in (10, 1_000)
    )
    assert ten == thousand and ten.flops == 2 * 256**3
    # The compiled body is what is counted: unrolled by 4, it holds 4 iterations.
    unrolled = partial(repeated_products, n_steps=1_000, unroll=4)
    assert roofline.cost_of(unrolled, SQUARE).flops == 4 * 2 * 256**3
    for fn in (partial(repeated_products, n_steps=10), unrolled):
        body = roofline.loop_body_cost(fn, SQUARE)
        assert body.flops == 2 * 256**3 and body.transcendentals == 256**2
    with pytest.raises(ValueError, match="found no lax.while_loop or lax.scan"):
        roofline.loop_body_cost(jnp.sin, SQUARE)


def test_the_roofline_arithmetic():
    machine = roofline.Roofline(peak_flops=100e9, bandwidth=20e9)
    assert machine.ridge == 5
    assert machine.bound(1) == 20e9 and machine.bound(50) == 100e9
    cost = roofline.Cost(flops=1e9, transcendentals=0.0, bytes_accessed=1e9)
    assert machine.limited_by(cost) == "memory"
    assert machine.time_bound(cost) == pytest.approx(0.05)
    assert machine.fraction(cost, 0.1) == pytest.approx(0.5)
    assert roofline.attained(cost, 0.5) == 2e9
    with pytest.raises(ValueError, match="seconds must be positive"):
        machine.fraction(cost, 0.0)


def test_measured_roofs_come_from_the_harness_and_the_cost_analysis():
    peak = roofline.measure_peak_flops(128, repeat=2)
    assert peak.cost.flops == 2 * 128**3 and peak.rate == peak.cost.flops / peak.seconds
    bandwidth = roofline.measure_bandwidth(2**16, repeat=2)
    assert bandwidth.cost.bytes_accessed >= 4 * 2**16 and bandwidth.rate > 0
    # The size the chapter also runs its memory-bound kernels at: 128 MB on a CPU, beyond its caches.
    assert roofline.bandwidth_size() == 2**25


def test_pln_iteration_costs():
    """At the oaks shape (n = 116, p = 114): levels 0-4 share one iteration; level 5's profiled
    iteration does at least the floor's two (n, p) x (p, p) products, and fewer FLOPs than the
    autodiff iteration; level 6 is refused."""
    data = simulate(116, 114, key=jax.random.key(0)).data
    shared = [iteration_cost(level, data) for level in range(5)]
    assert all(cost == shared[0] for cost in shared)
    profiled = iteration_cost(5, data)
    assert 2 * 2 * 116 * 114**2 <= profiled.flops < shared[0].flops
    with pytest.raises(ValueError, match="level 6 runs level 5's iteration"):
        iteration_cost(6, data)
    with pytest.raises(ValueError, match="level must be one of 0-5"):
        iteration_cost(7, data)


# Memory figures ----------------------------------------------------------------------------------


def test_donation_turns_the_output_into_an_alias():
    x = jnp.ones((1_000, 1_000), jnp.float32)
    assert memory.memory_of(lambda x: x * 2 + 1, x) == memory.MemoryFigures(
        4_000_000, 4_000_000, 0, 0
    )
    donated = memory.memory_of(lambda x: x * 2 + 1, x, donate_argnums=0)
    assert donated == memory.MemoryFigures(4_000_000, 4_000_000, 0, 4_000_000)
    # The output is still reported, in the argument's buffer: the footprint counts it once.
    assert memory.memory_of(lambda x: x * 2 + 1, x).footprint_bytes == 8_000_000
    assert donated.footprint_bytes == 4_000_000
    assert memory.MemoryFigures(1, 2, 3, 0).footprint_bytes == 6


@pytest.mark.parametrize("steps, temp_bytes", [(25, 3_450_096), (50, 6_765_296), (100, 13_395_696)])
def test_a_scan_gradient_keeps_every_steps_residuals(steps, temp_bytes):
    """One (256, 128) float32 residual and two 256-vectors per step: 132,608 bytes a step."""
    x0 = jnp.linspace(-1.0, 1.0, 256)
    ws = jnp.linspace(0.0, 1.0, steps * 128).reshape(steps, 128)
    assert memory.memory_of(jax.grad(scan_loss, argnums=1), x0, ws).temp_bytes == temp_bytes


def test_checkpointing_the_body_cuts_the_temporaries_and_keeps_the_gradient():
    x0 = jnp.linspace(-1.0, 1.0, 256)
    ws = jnp.linspace(0.0, 1.0, 100 * 128).reshape(100, 128)

    def checkpointed_loss(x0, ws):
        body = jax.checkpoint(wide_body, policy=jax.checkpoint_policies.nothing_saveable)
        return jnp.sum(jax.lax.scan(body, x0, ws)[0] ** 2)

    plain = jax.jit(jax.grad(scan_loss, argnums=1)).lower(x0, ws).compile()
    checkpointed = jax.jit(jax.grad(checkpointed_loss, argnums=1)).lower(x0, ws).compile()
    assert memory.memory_figures(checkpointed).temp_bytes == 498_408
    assert (
        plain.memory_analysis().peak_memory_in_bytes < memory.memory_figures(plain).temp_bytes
    )  # CPU: not meaningful
    assert jnp.allclose(plain(x0, ws), checkpointed(x0, ws), rtol=1e-5, atol=1e-6)


def test_checkpointing_a_narrow_body_saves_nothing():
    def narrow_body(x, w):
        return jnp.tanh(x + w), None

    def narrow_loss(body, x0, ws):
        return jnp.sum(jax.lax.scan(body, x0, ws)[0] ** 2)

    x0, ws = jnp.linspace(-1.0, 1.0, 256), jnp.linspace(0.0, 1.0, 100)
    temps = [
        memory.memory_of(jax.grad(partial(narrow_loss, body), argnums=1), x0, ws).temp_bytes
        for body in (
            narrow_body,
            jax.checkpoint(narrow_body, policy=jax.checkpoint_policies.nothing_saveable),
        )
    ]
    assert temps[1] >= temps[0]


def test_checkpointing_blocks_of_steps_grows_with_the_square_root_of_the_steps():
    """profiling.qmd's box: a checkpointed body still keeps one carry per step (temporaries
    proportional to T); checkpointed blocks of sqrt(T) steps keep about 2 sqrt(T) carries."""

    def narrow_body(x, w):
        return jnp.tanh(x + w), None

    def plain_loss(x0, ws):
        return jnp.sum(jax.lax.scan(narrow_body, x0, ws)[0] ** 2)

    def blocked_loss(x0, ws, n_blocks):
        one_block = jax.checkpoint(
            lambda x, ws_block: jax.lax.scan(narrow_body, x, ws_block),
            policy=jax.checkpoint_policies.nothing_saveable,
        )
        return jnp.sum(jax.lax.scan(one_block, x0, ws.reshape(n_blocks, -1))[0] ** 2)

    x0 = jnp.linspace(-1.0, 1.0, 256)
    temps = {}
    for n_steps in (100, 1_600):
        ws = jnp.linspace(0.0, 1.0, n_steps)
        blocked = jax.grad(partial(blocked_loss, n_blocks=int(n_steps**0.5)), argnums=1)
        plain = jax.grad(plain_loss, argnums=1)
        temps[n_steps] = [memory.memory_of(fn, x0, ws).temp_bytes for fn in (plain, blocked)]
        assert jnp.allclose(plain(x0, ws), blocked(x0, ws), rtol=1e-5, atol=1e-6)
    plain_growth, blocked_growth = (temps[1_600][i] / temps[100][i] for i in (0, 1))
    assert plain_growth > 15 and blocked_growth < 5
    assert temps[1_600][1] < temps[1_600][0] / 10


# The persistent compilation cache ---------------------------------------------------------------------


_CACHED_PROGRAM = """
import jax, jax.numpy as jnp
from jaxcourse import compilation_cache
hits = []
jax.monitoring.register_event_listener(lambda event, **_: hits.append(event) if event.endswith("cache_hits") else None)
folder = compilation_cache.enable()
jax.jit(lambda x: jnp.sin(x) * 2)(jnp.ones(7)).block_until_ready()
print(folder, compilation_cache.is_enabled(), len(hits))
"""


def test_the_cache_is_off_here_and_on_in_a_process_that_enables_it(tmp_path):
    """Two fresh processes with XDG_CACHE_HOME in a temporary folder: the first compiles and
    writes under jaxcourse/, the second reads the program back. This process's own cache
    (tests/conftest.py) is neither theirs nor changed by them."""
    ours = jax.config.jax_compilation_cache_dir
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith("JAX_COMPILATION_CACHE")
    }
    env["XDG_CACHE_HOME"] = str(tmp_path)
    outputs = [
        subprocess.run(
            [sys.executable, "-c", _CACHED_PROGRAM],
            env=env,
            capture_output=True,
            text=True,
            check=True,
        ).stdout.split()
        for _ in range(2)
    ]
    folder = tmp_path / "jaxcourse" / "jax-compilation-cache"
    assert outputs[0] == [str(folder), "True", "0"]
    assert outputs[1][:2] == [str(folder), "True"] and int(outputs[1][2]) >= 1
    assert compilation_cache.entries(folder)
    assert compilation_cache.environment(folder)["JAX_COMPILATION_CACHE_DIR"] == str(folder)
    assert jax.config.jax_compilation_cache_dir == ours != str(folder)
