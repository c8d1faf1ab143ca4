"""Settings for every pytest run in this repository, the notebooks under nbmake included."""

import os


def pin_worker_to_its_own_cores() -> None:
    """Gives each pytest-xdist worker its own share of the CPU cores (Linux).

    XLA's CPU runtime splits each operation over a thread per schedulable core and waits for
    all of them. Two workers (and the notebook kernels they start, which inherit the
    affinity) on the same cores preempt each other's threads, and a loop of small jitted
    operations then runs 10-40 times slower than alone. With its own cores, a worker runs
    as fast as it would alone. XLA reads the affinity when it starts its CPU backend, so this
    must run before any JAX computation.
    """
    worker = os.environ.get("PYTEST_XDIST_WORKER", "")
    n_workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "0"))
    if not worker.startswith("gw") or n_workers < 2 or not hasattr(os, "sched_setaffinity"):
        return
    cores = sorted(os.sched_getaffinity(0))
    if len(cores) < n_workers:
        return
    os.sched_setaffinity(0, cores[int(worker[2:]) :: n_workers])


pin_worker_to_its_own_cores()


CHECKER_TEST_FILES = (
    "*_exercises.py",
    "*_wrong_answers.py",
    "test_checker_properties.py",
    "test_checkers_never_crash.py",
)
"""The test files that run the exercise checkers: they run as one unit, on one worker."""


def pytest_xdist_make_scheduler(config, log):
    """Under `--dist loadfile` (scripts/test.sh), the files of CHECKER_TEST_FILES go to one
    worker, as one unit, and every other file is a unit of its own.

    They call the same checkers on the same chapters' solutions, and a process compiles a program
    once: a checker's own programs, and a solution's (tests/exercise_references.py builds each
    once per process), are compiled again by every worker that runs one of them. Measured on
    2026-12-06, side by side on two cores: one process ran them in 506 CPU-s, two processes
    (every other file each) in 565.
    """
    if config.getvalue("dist") != "loadfile":
        return None
    from fnmatch import fnmatch

    from xdist.scheduler import LoadFileScheduling

    class CheckerTestsTogether(LoadFileScheduling):
        def _split_scope(self, nodeid: str) -> str:
            path = super()._split_scope(nodeid)
            name = path.rsplit("/", 1)[-1]
            checkers = any(fnmatch(name, pattern) for pattern in CHECKER_TEST_FILES)
            return "the exercise checkers' tests" if checkers else path

    return CheckerTestsTogether(config, log)
