"""Fits in a fresh Python process: cold first calls, and pyPLNmodels away from JAX.

A first call in the process that has already compiled something, imported torch or warmed
its allocator is not a first call. `run_fresh` starts a new interpreter (`_worker`), hands it
the data sets as .npz files, and returns what it measured: the import time, every fit's
wall time (the first one cold), the device, and each fit's final (M, S).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

from ..pln import PLNData

FRESH_TIMEOUT_S = 900
"""A fresh-process run that takes longer than this is stopped (and raises)."""

CHILD_GPU_MEMORY_FRACTION = "0.2"
"""The share of a GPU's memory a fresh JAX process may reserve (`XLA_PYTHON_CLIENT_MEM_FRACTION`)."""


class FreshFit(NamedTuple):
    """One data set's fits in a fresh process.

    Attributes:
        times_s: wall time of each fit, in order; the first includes compilation (JAX) or
            torch's first-call costs (pyPLNmodels), the others are warm.
        n_steps: iterations of the last fit.
        variational: `(n, p)` M and S of the last fit, as NumPy arrays.
        trace_elbo: the reference's own ELBO trace of its last fit (exact convention), else None.
        trace_times_s: the times it recorded for those ELBOs, else None.
    """

    times_s: tuple[float, ...]
    n_steps: int
    variational: tuple[np.ndarray, np.ndarray]
    trace_elbo: np.ndarray | None = None
    trace_times_s: np.ndarray | None = None


class FreshRun(NamedTuple):
    """What one fresh process measured.

    Attributes:
        import_s: seconds from starting the process to having imported what it runs (JAX and
            the course, or torch and pyPLNmodels), before any fit.
        device: where it computed, e.g. `jax cpu (cpu)` or `torch cpu, 2 thread(s)`.
        torch_threads: `torch.get_num_threads()` after the fits (None for JAX).
        fits: one `FreshFit` per data set, in order.
        pid: the process id, different for every run.
        description: for the reference, the optimizer it reports; else "".
        xla_flags: the `XLA_FLAGS` the process ran with, as it read them ("" for none).
    """

    import_s: float
    device: str
    torch_threads: int | None
    fits: tuple[FreshFit, ...]
    pid: int
    description: str = ""
    xla_flags: str = ""


def default_torch_threads() -> int:
    """The cores this process may run on (its affinity), which JAX's CPU backend uses too."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def _check(kind: str, method: str | None, repeat: int, datasets, xla_flags) -> None:
    if kind not in ("jax", "reference"):
        raise ValueError(f"kind must be 'jax' or 'reference', got {kind!r}.")
    if kind == "jax" and not method:
        raise ValueError("a JAX run needs the name of a method of bench.METHODS.")
    if isinstance(repeat, bool) or not isinstance(repeat, int) or repeat < 1:
        raise ValueError(f"repeat must be an int of at least 1, got {repeat!r}.")
    if not datasets or not all(isinstance(d, PLNData) for d in datasets):
        raise TypeError("datasets must be a non-empty list of PLNData.")
    if xla_flags is not None and not isinstance(xla_flags, str):
        raise TypeError(f"xla_flags must be a str of XLA flags or None, got {xla_flags!r}.")


def run_fresh(
    kind: str,
    datasets: list[PLNData],
    *,
    n_iter: int,
    method: str | None = None,
    repeat: int = 1,
    torch_threads: int | None = None,
    cache_dir: str | None = None,
    maxiter: list[int | None] | None = None,
    xla_flags: str | None = None,
) -> FreshRun:
    """Fits each data set `repeat` times in one new Python process and returns what it measured.

    Args:
        kind: `"jax"` (a method of `bench.METHODS`, by `method`) or `"reference"` (pyPLNmodels).
        datasets: the data sets, fitted in order in the same process.
        n_iter: the iteration budget (for the reference, its `maxiter`).
        method: the JAX method's name.
        repeat: fits per data set; the first one in the process is the cold one.
        torch_threads: `torch.set_num_threads` for the reference (`default_torch_threads()`
            by default); recorded either way.
        cache_dir: a folder for JAX's persistent compilation cache (None: no cache).
        maxiter: per data set, a `maxiter` for the reference other than `n_iter`.
        xla_flags: flags added to the process's `XLA_FLAGS` (after any this process has),
            such as `hlo.CPU_MULTI_OUTPUT_FUSION`: XLA reads them only when its backend
            starts, so a fresh process is the way to compare them.

    The reference's process gets `JAX_PLATFORMS=cpu`, so that JAX there never takes GPU memory
    from torch. A JAX process may take at most `CHILD_GPU_MEMORY_FRACTION` of a GPU's memory
    (unless `XLA_PYTHON_CLIENT_MEM_FRACTION` is set): by default JAX reserves 75% of it in the
    parent already, and a child asking for as much again would fail.
    """
    _check(kind, method, repeat, datasets, xla_flags)
    maxiter = maxiter or [None] * len(datasets)
    with tempfile.TemporaryDirectory(prefix="jaxcourse-fresh-") as folder:
        jobs = []
        for k, data in enumerate(datasets):
            path = Path(folder) / f"data{k}.npz"
            np.savez(
                path,
                counts=np.asarray(data.counts),
                offsets=np.asarray(data.offsets),
                covariates=np.asarray(data.covariates),
            )
            jobs.append(
                {"data": str(path), "out": str(Path(folder) / f"fit{k}.npz"), "maxiter": maxiter[k]}
            )
        request: dict[str, Any] = {
            "kind": kind,
            "method": method,
            "n_iter": n_iter,
            "repeat": repeat,
            "cache_dir": cache_dir,
            "torch_threads": torch_threads or default_torch_threads(),
            "jobs": jobs,
        }
        request["started_at"] = time.time()  # the worker counts its start-up and imports from here
        (Path(folder) / "request.json").write_text(json.dumps(request))
        env = dict(os.environ)
        if xla_flags:
            env["XLA_FLAGS"] = " ".join(filter(None, [env.get("XLA_FLAGS", ""), xla_flags]))
        if kind == "reference":
            env["JAX_PLATFORMS"] = "cpu"
        else:
            env.setdefault("XLA_PYTHON_CLIENT_MEM_FRACTION", CHILD_GPU_MEMORY_FRACTION)
        answer = _run_worker(Path(folder) / "request.json", env)
        fits = tuple(_fit(job, answer_job) for job, answer_job in zip(jobs, answer["jobs"]))
    return FreshRun(
        import_s=answer["import_s"],
        device=answer["device"],
        torch_threads=answer.get("torch_threads"),
        fits=fits,
        pid=answer["pid"],
        description=answer["jobs"][0].get("optimizer", ""),
        xla_flags=answer.get("xla_flags", ""),
    )


def _run_worker(request: Path, env: dict[str, str]) -> dict[str, Any]:
    command = [sys.executable, "-m", "jaxcourse.bench._worker", str(request)]
    done = subprocess.run(command, capture_output=True, text=True, env=env, timeout=FRESH_TIMEOUT_S)
    lines = done.stdout.strip().splitlines()
    if done.returncode != 0 or not lines:
        raise RuntimeError(
            f"the fresh process failed (exit {done.returncode}):\n{done.stderr[-3000:]}"
        )
    return json.loads(lines[-1])  # pyPLNmodels may print a line of its own first


def _fit(job: dict, answer: dict) -> FreshFit:
    arrays = np.load(job["out"])
    trace = answer.get("trace_elbo")
    return FreshFit(
        times_s=tuple(answer["times_s"]),
        n_steps=answer["n_steps"],
        variational=(arrays["latent_mean"], arrays["latent_sqrt_var"]),
        trace_elbo=None if trace is None else np.asarray(trace),
        trace_times_s=None if trace is None else np.asarray(answer["trace_times_s"]),
    )
