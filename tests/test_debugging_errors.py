"""The errors and silent behaviours shown in the debugging chapter, pinned; and its sharp-bits index
lists every section of the book that shows an error."""

import re
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.experimental import checkify

from jaxcourse import debugging
from tools.crossref import all_targets, number_book

# More than a few seconds: left out of the fast tier (scripts/test.sh --fast).
pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[1]
CHAPTER = ROOT / "chapters" / "debugging.qmd"


def poisson_log_likelihood(rate, counts):
    log_rate = jnp.log(rate)
    return jnp.sum(counts * log_rate - rate)


@jax.jit
def objective(params, counts):
    rate = params - 1.0
    return poisson_log_likelihood(rate, counts)


def log_likelihood_checked(rate, counts):
    checkify.check(
        jnp.all(rate > 0), "rates must be positive; the smallest is {low}", low=jnp.min(rate)
    )
    return poisson_log_likelihood(rate, counts)


PARAMS = jnp.array([2.0, 0.5, 3.0])
COUNTS = jnp.array([1.0, 2.0, 0.0])


def test_debug_nans_names_the_primitive_and_the_line():
    """Cell 'with jax.debug_nans(True): objective(...)': the error names log; the traceback's own
    frames end at the line that called jnp.log; the flag is off again after the block."""
    assert np.isnan(objective(PARAMS, COUNTS))
    with pytest.raises(
        FloatingPointError, match=r"invalid value \(nan\) encountered in log"
    ) as info:
        with jax.debug_nans(True):
            objective(PARAMS, COUNTS)
    assert (
        debugging.frames_outside_jax(info.value)[-1]
        == "poisson_log_likelihood: log_rate = jnp.log(rate)"
    )
    assert not jax.config.jax_debug_nans


def test_debug_nans_checks_every_eager_operation_but_only_jitted_outputs():
    """The jnp.where cell: eager code stops at the discarded NaN of log, jitted code does not."""

    def log_or_zero(x):
        return jnp.where(x > 0, jnp.log(x), 0.0)

    x = jnp.array([-1.0, 2.0])
    with jax.debug_nans(True):
        np.testing.assert_allclose(jax.jit(log_or_zero)(x), [0.0, np.log(2.0)], rtol=1e-6)
        with pytest.raises(FloatingPointError, match="encountered in log"):
            log_or_zero(x)


def test_checkify_error_throws_with_the_formatted_message():
    """Cell 'error.throw()': the user check's message, with the runtime value, as JaxRuntimeError."""
    error, _ = jax.jit(checkify.checkify(log_likelihood_checked))(PARAMS - 1.0, COUNTS)
    with pytest.raises(
        checkify.JaxRuntimeError, match=r"rates must be positive; the smallest is -0\.5"
    ):
        error.throw()


def test_checkify_under_vmap_names_the_example():
    rates = jnp.array([[1.0, 2.0, 3.0], [1.0, -2.0, 3.0]])
    error, _ = jax.vmap(checkify.checkify(log_likelihood_checked), in_axes=(0, None))(rates, COUNTS)
    assert error.get().startswith("at mapped index 1: rates must be positive")


def test_check_without_checkify_cannot_be_jitted():
    """Cell 'jax.jit(log_likelihood_checked)(...)': a check needs checkify.checkify around it."""
    with pytest.raises(
        ValueError, match="Cannot abstractly evaluate a checkify.check which was not functionalized"
    ):
        jax.jit(log_likelihood_checked)(PARAMS - 1.0, COUNTS)


def test_index_checks_report_and_the_value_is_clamped():
    checked = jax.jit(checkify.checkify(lambda x, i: x[i], errors=checkify.index_checks))
    error, value = checked(jnp.array([1.0, 2.0, 3.0]), 5)
    assert float(value) == 3.0
    assert "index 5 is out of bounds for axis 0 with size 3" in error.get()


def test_numpy_refuses_an_int_that_does_not_fit_and_jax_wraps():
    """Cell 'small_counts + 1000': NumPy raises; JAX keeps int8 and wraps around, silently."""
    small_counts = np.array([100, 120], dtype=np.int8)
    with pytest.raises(OverflowError, match="Python integer 1000 out of bounds for int8"):
        small_counts + 1000
    wrapped = jnp.asarray(small_counts) + 1000
    assert wrapped.dtype == jnp.int8
    assert wrapped.tolist() == [76, 96]


def test_weak_python_scalars_take_the_array_dtype():
    x16 = jnp.ones(3, dtype=jnp.float16)
    assert (x16 * 2.0).dtype == jnp.float16
    assert (x16 * np.float32(2.0)).dtype == jnp.float32
    assert str(jax.typeof(2.0)) == "~float32[]"


def test_float64_is_truncated_without_x64_and_kept_with_it():
    with pytest.warns(UserWarning, match="Explicitly requested dtype float64"):
        assert jnp.ones(2, dtype=jnp.float64).dtype == jnp.float32
    with jax.enable_x64(True):
        assert jnp.asarray(np.ones(2)).dtype == jnp.float64
    assert jnp.asarray(np.ones(2)).dtype == jnp.float32


def test_out_of_bounds_reads_clamp_and_writes_are_dropped():
    x = jnp.arange(3.0)
    assert float(x[10]) == 2.0 and float(x[-10]) == 0.0
    np.testing.assert_array_equal(x.at[10].set(9.0), x)
    indices = jnp.array([0, 2, 5, -1, -10])
    np.testing.assert_array_equal(
        x.at[indices].get(mode="fill", fill_value=jnp.nan), [0, 2, np.nan, 2, np.nan]
    )
    np.testing.assert_array_equal(jnp.take(x, indices), [0, 2, np.nan, 2, np.nan])


def test_item_assignment_is_rejected():
    """Cell 'x_fixed[0] = 10.0'."""
    x_fixed = jnp.arange(3.0)
    with pytest.raises(
        TypeError, match="JAX arrays are immutable and do not support in-place item assignment"
    ):
        x_fixed[0] = 10.0


def test_an_index_array_out_of_bounds_clamps_the_value_and_zeroes_the_gradient():
    """Section sec-debugging-oob: x[jnp.array([5])] is a PROMISE_IN_BOUNDS gather: value 2.0,
    gradient [0, 0, 0]; a scalar index and mode="clip" send the gradient to the entry read."""
    x = jnp.arange(3.0)
    out = jnp.array([5])
    read = lambda x: x[out]
    modes = [e.params["mode"] for e in jax.make_jaxpr(read)(x).eqns if e.primitive.name == "gather"]
    assert [str(m) for m in modes] == ["GatherScatterMode.PROMISE_IN_BOUNDS"]
    for grad in (jax.grad, lambda f: jax.jit(jax.grad(f))):
        assert float(read(x)[0]) == 2.0
        np.testing.assert_array_equal(grad(lambda x: jnp.sum(read(x)))(x), [0.0, 0.0, 0.0])
        np.testing.assert_array_equal(grad(lambda x: x[5])(x), [0.0, 0.0, 1.0])
        np.testing.assert_array_equal(
            grad(lambda x: jnp.sum(x.at[out].get(mode="clip")))(x), [0.0, 0.0, 1.0]
        )
    assert np.isnan(x.at[out].get(mode="fill", fill_value=jnp.nan)[0])


def test_a_nan_born_in_the_backward_pass_is_found_only_on_the_gradient():
    """Section sec-debugging-nans: log_or_zero at 0 has no NaN in its value; the gradient's NaN
    comes from the backward div; debug_infs finds the log of 0 eagerly, nothing under jit."""

    def total(x):
        return jnp.sum(jnp.where(x > 0, jnp.log(x), 0.0))

    x = jnp.array([0.0, 2.0])
    with jax.debug_nans(True):
        total(x)
        jax.jit(total)(x)
        with pytest.raises(FloatingPointError, match=r"invalid value \(nan\) encountered in div"):
            jax.jit(jax.grad(total))(x)
        with pytest.raises(FloatingPointError, match=r"invalid value \(nan\) encountered in div"):
            jax.grad(total)(x)
    with jax.debug_infs(True):
        assert np.isnan(jax.jit(jax.grad(total))(x)[0])
        with pytest.raises(FloatingPointError, match=r"invalid value \(inf\) encountered in log"):
            jax.grad(total)(x)


def test_default_matmul_precision_is_written_into_the_program():
    """Section sec-debugging-float32: the context manager changes the dot's precision attribute."""
    a = jnp.ones((4, 4))
    assert "precision = [DEFAULT, DEFAULT]" in jax.jit(lambda a: a @ a).lower(a).as_text()
    with jax.default_matmul_precision("highest"):
        assert "precision = [HIGHEST, HIGHEST]" in jax.jit(lambda a: a @ a).lower(a).as_text()


def test_debug_print_under_vmap_prints_per_example_and_under_grad_primal_values(capfd):
    """Section sec-debugging-print-transforms."""

    def sine_with_print(x):
        jax.debug.print("x = {x}", x=x)
        return jnp.sin(x)

    jax.vmap(sine_with_print)(jnp.arange(3.0))
    jax.effects_barrier()
    assert capfd.readouterr().out.split("\n")[:3] == ["x = 0.0", "x = 1.0", "x = 2.0"]
    jax.grad(sine_with_print)(1.0)
    jax.effects_barrier()
    assert capfd.readouterr().out.strip() == "x = 1.0"


def test_ordered_debug_prints_are_marked_in_the_jaxpr():
    """Section sec-debugging-print-transforms: ordered=True is a parameter of debug_print."""

    def two_prints(x):
        jax.debug.print("first: {x}", x=x, ordered=True)
        jax.debug.print("second: {x}", x=x)
        return x

    orders = [
        e.params["ordered"]
        for e in jax.make_jaxpr(two_prints)(1.0).eqns
        if e.primitive.name == "debug_print"
    ]
    assert orders == [True, False]


def test_breakpoint_stops_and_reads_commands_from_stdin():
    """Section sec-debugging-breakpoint: the child process shows the values at the breakpoint."""
    import subprocess
    import sys
    import textwrap

    script = textwrap.dedent("""
        import jax, jax.numpy as jnp

        @jax.jit
        def scaled_log(x):
            y = jnp.log(x)
            jax.debug.breakpoint()
            return 2.0 * y

        print([e.primitive.name for e in jax.make_jaxpr(scaled_log.__wrapped__)(jnp.ones(2)).eqns])
        print("result:", scaled_log(jnp.array([1.0, -1.0])))
    """)
    session = subprocess.run(
        [sys.executable, "-c", script],
        input="p y\np x\nc\n",
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert "['log', 'debug_callback', 'mul']" in session.stdout
    assert "Entering jdb:" in session.stdout
    assert "(jdb) Array([ 0., nan], dtype=float32)" in session.stdout
    assert "(jdb) Array([ 1., -1.], dtype=float32)" in session.stdout
    assert "result: [ 0. nan]" in session.stdout


class RemembersLast:
    def __init__(self):
        self.last = None

    def __call__(self, x):
        self.last = x
        return 2.0 * x


def test_environment_variables_disable_jit_and_log_compiles_for_a_whole_run():
    """Section sec-debugging-disable-jit: JAX_DISABLE_JIT=1 runs the jitted body at every call on
    arrays and compiles nothing; JAX_LOG_COMPILES=1 traces once and logs jit(double)."""
    import os
    import subprocess
    import sys

    script = (
        "import jax, jax.numpy as jnp\n"
        "@jax.jit\n"
        "def double(x):\n"
        "    print('body sees', type(x).__name__)\n"
        "    return 2 * x\n"
        "double(jnp.ones(2)); double(jnp.ones(2))\n"
    )

    def run(variable):
        done = subprocess.run(
            [sys.executable, "-c", script],
            env={**os.environ, variable: "1"},
            capture_output=True,
            text=True,
            check=True,
            timeout=120,
        )
        compiled = [line for line in done.stderr.splitlines() if "Finished XLA compilation" in line]
        return done.stdout.splitlines(), compiled

    lines, compiled = run("JAX_DISABLE_JIT")
    assert lines == ["body sees ArrayImpl", "body sees ArrayImpl"] and compiled == []
    lines, compiled = run("JAX_LOG_COMPILES")
    assert lines == ["body sees DynamicJaxprTracer"]
    assert any("jit(double)" in line for line in compiled)


def test_a_leaked_tracer_fails_where_it_is_used_and_checking_leaks_names_the_holder():
    """Section sec-debugging-leaks: both error cells."""
    remembers = RemembersLast()
    jax.jit(remembers)(1.0)
    with pytest.raises(jax.errors.UnexpectedTracerError, match="Encountered an unexpected tracer"):
        remembers.last + 1.0
    with pytest.raises(
        Exception, match=r"Leaked trace DynamicJaxprTrace(.|\n)*RemembersLast \d+>\.last"
    ):
        with jax.checking_leaks():
            jax.jit(RemembersLast())(1.0)


def test_traceback_filtering_off_shows_jits_frames():
    """Section sec-debugging-tracebacks."""
    import traceback

    def frames(mode):
        jax.config.update("jax_traceback_filtering", mode)
        try:
            jax.jit(lambda x: jnp.reshape(x, (4,)))(jnp.ones(3))
        except TypeError as error:
            return [frame.name for frame in traceback.extract_tb(error.__traceback__)]
        finally:
            jax.config.update("jax_traceback_filtering", "auto")

    assert "cache_miss" not in frames("remove_frames")
    assert "cache_miss" in frames("off")


# The sharp-bits index ------------------------------------------------------------------------------


def sharp_bits_references() -> set[str]:
    text = CHAPTER.read_text()
    start = text.index("## The sharp bits, all in one place")
    end = text.index("## Summary", start)
    return set(re.findall(r"@(sec-[\w-]+)", text[start:end]))


def sections_with_error_cells() -> dict[str, str]:
    """{section id: chapter} for every section (nearest heading with an id) holding an error cell."""
    heading = re.compile(r"^#{1,6} .*\{#(sec-[\w-]+)\}")
    found = {}
    for path in sorted((ROOT / "chapters").glob("*.qmd")):
        section = None
        for line in path.read_text().split("\n"):
            match = heading.match(line)
            if match:
                section = match.group(1)
            if line.strip() == "#| error: true" and section:
                found[section] = path.name
    return found


def test_sharp_bits_index_lists_every_section_that_shows_an_error():
    missing = {
        section: chapter
        for section, chapter in sections_with_error_cells().items()
        if section not in sharp_bits_references()
    }
    assert missing == {}, f"add these sections to the sharp-bits table: {missing}"


def test_sharp_bits_index_references_existing_sections():
    targets = set(all_targets(number_book(ROOT)))
    assert sorted(sharp_bits_references() - targets) == []
