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
