"""Shared test settings: four simulated CPU devices, a persistent compilation cache for this
process, and small fixtures."""

import jax

# Must happen before any JAX operation; the sharding tests need several devices, and a
# single-device computation is unaffected (it runs on device 0).
jax.config.update("jax_num_cpu_devices", 4)

import atexit  # noqa: E402
import shutil  # noqa: E402
import tempfile  # noqa: E402

import pytest  # noqa: E402

from jaxcourse import compilation_cache  # noqa: E402

# Each test process compiles through a persistent compilation cache of its own, a temporary
# folder removed when the process ends: a program that an earlier test of the process compiled
# (the same chapter solution rebuilt by another test, a checker's reference met again) is read
# back instead of compiled, about 30 % of the checkers' tests' time. Only this process: the
# notebook kernels and the fresh processes that the tests and the benchmark start keep JAX's
# default, the cache off, as a learner has it. A program read back counts as compiled
# (`tracecount.count_compilations`), so the counts the checkers and tests assert are the same.
TEST_COMPILATION_CACHE = compilation_cache.enable(tempfile.mkdtemp(prefix="jaxcourse-tests-jit-"))
atexit.register(shutil.rmtree, TEST_COMPILATION_CACHE, ignore_errors=True)


@pytest.fixture
def key():
    """A fresh typed PRNG key."""
    return jax.random.key(0)


@pytest.fixture(scope="module")
def extra_arguments():
    """Values for the checkers' arguments after the answer (the sharding chapters' mesh), for
    the tests that call every checker."""
    from jaxcourse import parallel

    previous = jax.config.jax_default_device
    devices = parallel.course_devices()
    yield {
        "n_devices": len(devices),
        "mesh": jax.make_mesh((len(devices),), ("data",), devices=devices),
    }
    jax.config.update("jax_default_device", previous)


@pytest.hookimpl(tryfirst=True)  # before -m "not slow" deselects
def pytest_collection_modifyitems(config, items):
    """A parametrized test marked `slow_after_first` runs its first case in the fast tier
    (scripts/test.sh --fast) and its other cases only in the full run: the fast tier meets every
    such wrong-answer test once, without paying for each of its cases."""
    seen = set()
    for item in items:
        if item.get_closest_marker("slow_after_first") is None:
            continue
        function = (item.path, getattr(item, "originalname", item.name))
        if function in seen:
            item.add_marker(pytest.mark.slow)
        seen.add(function)
