"""Problem sizes chosen by device, so every page runs on a CPU laptop and at full size on a GPU;
and the thread limit for BLAS and LAPACK that large CPU fits need."""

from __future__ import annotations

import contextlib
from typing import NamedTuple

import jax


def on_accelerator() -> bool:
    """True when JAX computes on a GPU or TPU."""
    return jax.default_backend() != "cpu"


def by_device(*, cpu, accelerator):
    """Returns `accelerator` on a GPU/TPU and `cpu` otherwise."""
    return accelerator if on_accelerator() else cpu


def check_thread_limit(limit) -> None:
    """Raises unless `limit` is None (no limit) or an int of at least 1."""
    if limit is None:
        return
    if isinstance(limit, bool) or not isinstance(limit, int):
        raise TypeError(f"a thread limit must be an int or None, got {type(limit).__name__}.")
    if limit < 1:
        raise ValueError(f"a thread limit must be at least 1, got {limit}.")


def limit_blas_threads(limit: int | None = 1):
    """Lets the BLAS and LAPACK libraries in this process use at most `limit` threads.

    On a CPU, JAX runs small factorisations such as `jnp.linalg.cholesky` and triangular
    solves by calling the LAPACK that SciPy ships (OpenBLAS). After each call, OpenBLAS keeps
    its worker threads spinning for a while, waiting for more work. A loop that factorises a
    matrix at every iteration therefore keeps a core busy with waiting threads, the core
    that XLA's own threads need for the large array operations of the same iteration. With
    one LAPACK thread nothing waits; small problems, which leave a core idle anyway, lose a
    little. The benchmark chapter measures both cases.

    Args:
        limit: the most threads BLAS and LAPACK may use, at least 1; None for no limit.

    Returns:
        The `threadpoolctl.threadpool_limits` object (a context manager that does nothing
        for None). The limit holds until its `restore_original_limits()` is called or, used
        as a context manager, until its block ends.
    """
    check_thread_limit(limit)
    if limit is None:
        return contextlib.nullcontext()
    # JAX loads SciPy's LAPACK at its first factorisation; load it now, so that the limit
    # reaches it (threadpoolctl changes only the libraries already loaded).
    import scipy.linalg.cython_lapack  # noqa: F401
    from threadpoolctl import threadpool_limits

    return threadpool_limits(limits=limit, user_api="blas")


def blas_threads() -> dict[str, int]:
    """The thread limit of each BLAS/LAPACK library loaded in this process, by file name."""
    from threadpoolctl import threadpool_info

    return {
        info["filepath"].rsplit("/", 1)[-1]: info["num_threads"]
        for info in threadpool_info()
        if info["user_api"] == "blas"
    }


class PLNSizes(NamedTuple):
    """Problem sizes of the PLN chapters.

    Attributes:
        repeat: copies of the oaks data stacked (1: n = 116; 100: n = 11600, the seed's size).
        n_iter: iterations of a full fit of levels 0-4 (the levels chapter prints how far below
            pyPLNmodels and the best known ELBO it ends).
        n_iter_eager: iterations run by the slow eager level 0, and in the level-parity figure.
        timing_repeats: timed repetitions of each fit.
    """

    repeat: int
    n_iter: int
    n_iter_eager: int
    timing_repeats: int


def pln_sizes() -> PLNSizes:
    """Small on CPU (each chapter runs in about a minute), the seed's full size on a GPU."""
    return by_device(
        cpu=PLNSizes(repeat=1, n_iter=300, n_iter_eager=40, timing_repeats=3),
        accelerator=PLNSizes(repeat=100, n_iter=1000, n_iter_eager=100, timing_repeats=5),
    )
