"""The support modules: checkers never raise, source display, honest timing, sizes by device."""

import time

import jax
import jax.numpy as jnp
import pytest

from jaxcourse import checks, config, display
from jaxcourse.bench import environment, environment_line, time_call, timings_table
from jaxcourse.pln import level2


@checks.exercise_checker()
def check_double(fn):
    checks.require(fn(2) == 4, "double the input")


def test_checker_verdicts():
    """Pass, hint, stub, None and a crashing answer each give a verdict, never an exception."""
    assert check_double(lambda x: 2 * x)
    wrong = check_double(lambda x: x + 1)
    assert not wrong and "Hint: double the input" in str(wrong)

    def stub(x):
        raise NotImplementedError

    assert "no answer yet" in check_double(stub).message
    assert "no answer yet" in check_double(None).message
    crashed = check_double(lambda x: 1 / 0)
    assert not crashed and "ZeroDivisionError" in crashed.message
    assert str(check_double(lambda x: 2 * x)).startswith("[PASSED] check_double")


def test_show_source_renders_package_code_as_markdown():
    source = display.show_source(level2.fit)
    assert source.startswith("def fit(")
    assert source._repr_markdown_().startswith("```python\ndef fit(")
    with pytest.raises(TypeError, match="cannot show the source"):
        display.show_source(3)


def test_time_call_blocks_and_separates_compilation():
    """A jitted call is compiled ahead of time; steady times include the device work."""

    @jax.jit
    def slow(x):
        for _ in range(4):
            x = jnp.tanh(x @ x.T)
        return x.sum()

    x = jnp.ones((200, 200)) / 200
    timing = time_call(slow, x, repeat=3, name="slow")
    assert timing.name == "slow" and len(timing.times_s) == 3
    assert timing.compile_s is not None and timing.compile_s > 0
    assert 0 < timing.min_s <= timing.median_s
    assert timing.spread_s >= 0


def test_time_call_on_plain_python_has_no_compile_time():
    timing = time_call(time.sleep, 0.01, repeat=2)
    assert timing.compile_s is None
    assert timing.median_s >= 0.01


def test_time_call_rejects_bad_repeat():
    with pytest.raises(ValueError, match="repeat"):
        time_call(abs, 1, repeat=0)


def test_timings_table_has_one_row_per_timing():
    timings = [time_call(abs, -1, repeat=2, name=n) for n in ("a", "b")]
    table = timings_table(timings)
    assert list(table.index) == ["a", "b"] and "median (ms)" in table.columns


def test_environment_records_versions_and_device():
    env = environment()
    assert env["jax"] == jax.__version__ and env["backend"] == jax.default_backend()
    assert jax.__version__ in environment_line()


def test_sizes_are_small_on_cpu():
    assert config.by_device(cpu="small", accelerator="large") == (
        "large" if config.on_accelerator() else "small"
    )
    if not config.on_accelerator():
        assert config.pln_sizes().repeat == 1


def test_exercise_summary_enforces_the_expected_verdicts(monkeypatch):
    """Solution notebooks end with expect='passed', student ones with 'not yet'; CI enforces it."""
    monkeypatch.setattr(checks, "_VERDICTS", [])
    monkeypatch.setenv(checks.ENFORCE_ENV, "1")
    with pytest.raises(AssertionError, match="no exercise"):
        checks.exercise_summary(expect="passed")
    check_double(None)  # the stub
    assert "| check_double | NOT YET |" in checks.exercise_summary(expect="not yet")
    with pytest.raises(AssertionError, match="check_double"):
        checks.exercise_summary(expect="passed")
    check_double(lambda x: 2 * x)  # the solution: the last verdict counts
    assert "| check_double | PASSED |" in checks.exercise_summary(expect="passed")
    # A solution notebook checks its stubs too: the first verdict of each exercise is its stub's.
    monkeypatch.setattr(checks, "_VERDICTS", [])
    check_double(lambda x: 2 * x)  # a "stub" that already passes
    check_double(lambda x: 2 * x)
    with pytest.raises(AssertionError, match="stub"):
        checks.exercise_summary(expect="passed")
    assert "| check_double | PASSED |" in checks.exercise_summary(expect=None)
    monkeypatch.delenv(checks.ENFORCE_ENV)
    assert "PASSED" in checks.exercise_summary(expect="not yet")  # learners never get an error


def test_count_compilations_sees_a_new_shape_but_not_a_cache_hit():
    from jaxcourse.tracecount import count_compilations

    @jax.jit
    def cube(x):
        return x**3

    seven, eleven = jnp.ones(7), jnp.ones(11)  # made outside: creating them compiles too
    cube(seven)
    with count_compilations() as hit:
        cube(seven)
    with count_compilations() as miss:
        cube(eleven)
    assert (hit.traces, hit.compiles) == (0, 0)
    assert miss.traces == 1 and miss.compiles == 1


def test_a_program_read_from_the_persistent_cache_counts_as_compiled():
    """Two jitted functions with the same code are two programs for JAX's in-memory caches: the
    second is read from the persistent cache that tests/conftest.py turned on, and counted."""
    from jaxcourse import compilation_cache
    from jaxcourse.tracecount import count_compilations

    hits = []

    def listener(event, **_):
        if event.endswith("/cache_hits"):
            hits.append(event)

    x = jnp.ones(1_307)  # a shape no other test uses; made outside: creating it compiles too
    counts = []
    jax.monitoring.register_event_listener(listener)
    try:
        for _ in range(2):
            with count_compilations() as counted:
                jax.jit(lambda x: jnp.cos(x) * 3.25 + 1.0)(x)
            counts.append((counted.traces, counted.compiles, len(hits)))
    finally:
        jax.monitoring.unregister_event_listener(listener)
    assert compilation_cache.is_enabled()
    assert counts == [(1, 1, 0), (1, 1, 1)]  # compiled, then read back: one program each


def test_clear_compiled_empties_the_packages_programs_and_keeps_the_others():
    """After `clear_compiled` of a package, a function of the package compiles again at its next
    call; a function defined elsewhere, and an operation run op by op, do not."""
    from jaxcourse.pln import init_variational, level1, load_oaks
    from jaxcourse.tracecount import clear_compiled, count_compilations

    data = load_oaks()
    start = init_variational(data)
    page_function = jax.jit(lambda x: x * 2.0)
    x = jnp.ones(3)
    calls = (lambda: level1.closed_form_step(data, start), lambda: page_function(x), lambda: x + x)
    for call in calls:
        call()
    assert clear_compiled("jaxcourse.pln") >= 10  # every level's programs, among others
    counts = []
    for call in calls:
        with count_compilations() as counted:
            call()
        counts.append(counted.compiles)
    assert counts == [1, 0, 0]


def test_require_array_accepts_bfloat16_as_numeric():
    """A bfloat16 result of the right shape passes the structural check (NumPy sees its dtype as
    kind 'V'); it comes back as float32 for the checker's comparisons."""
    import jax.numpy as jnp

    from jaxcourse.checks import require_array

    array = require_array(jnp.ones((2, 3), jnp.bfloat16), (2, 3))
    assert str(array.dtype) == "float32" and array.shape == (2, 3)
