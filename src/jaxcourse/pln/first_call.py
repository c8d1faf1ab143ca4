"""A level-5 fit's first call in a fresh Python process, timed: what a script pays to compile,
with and without JAX's persistent compilation cache.

`time_first_call` starts `python -m jaxcourse.pln.first_call` on data saved to a file; the new
process times the first fit (tracing and compiling included) and a second one, counts the
persistent cache's hits and writes, and prints them as one line of JSON.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import NamedTuple

import numpy as np

from ..compilation_cache import environment
from ._data import PLNData

_CACHE_VARIABLES = ("JAX_COMPILATION_CACHE_DIR",)


class FirstCall(NamedTuple):
    """What one fresh process measured, in seconds.

    Attributes:
        first_call_s: the first `level5.fit`: tracing, compiling (or reading the cache) and
            running.
        second_call_s: the same fit again, compiled already: running only.
        cache_hits: compiled programs the process read from the persistent cache.
        cache_writes: compiled programs it wrote there.
        n_steps: the steps the fit took.
    """

    first_call_s: float
    second_call_s: float
    cache_hits: int
    cache_writes: int
    n_steps: int

    @property
    def compile_s(self) -> float:
        """The first call's extra time over the second: about what compiling (or reading the
        cache) cost."""
        return self.first_call_s - self.second_call_s


def time_first_call(
    data: PLNData,
    n_iter: int,
    *,
    optimizer: str = "NEWTON_MOMENTUM",
    cache_dir=None,
    timeout_s: float = 300.0,
) -> FirstCall:
    """Times `level5.fit(data, n_iter, optimizer=level5.<optimizer>)` in a new Python process.

    Args:
        data: the data, written to a temporary file for the new process.
        n_iter: the fit's `n_iter`.
        optimizer: the name of one of level 5's optimizers (`RPROP`, `NEWTON_RPROP`,
            `NEWTON_MOMENTUM`).
        cache_dir: a folder for JAX's persistent compilation cache, turned on in the new
            process only (`compilation_cache.environment`); None runs without it, even if
            this process's environment names one.
        timeout_s: how long the new process may take.

    Raises:
        RuntimeError: the new process failed (its error output is in the message).
    """
    with tempfile.TemporaryDirectory(prefix="jaxcourse-first-call-") as folder:
        data_file = Path(folder) / "data.npz"
        np.savez(data_file, counts=data.counts, offsets=data.offsets, covariates=data.covariates)
        env = {name: value for name, value in os.environ.items() if name not in _CACHE_VARIABLES}
        if cache_dir is not None:
            env.update(environment(cache_dir))
        command = [
            sys.executable,
            "-m",
            "jaxcourse.pln.first_call",
            str(data_file),
            str(n_iter),
            optimizer,
        ]
        done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=timeout_s)
    if done.returncode != 0:
        raise RuntimeError(
            f"the fresh process failed (exit {done.returncode}):\n{done.stderr[-2000:]}"
        )
    return FirstCall(**json.loads(done.stdout.strip().splitlines()[-1]))


def main(argv: list[str] | None = None) -> None:
    """The new process: load the data, fit twice, print one JSON line."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("data", help="an .npz file with counts, offsets and covariates")
    parser.add_argument("n_iter", type=int)
    parser.add_argument("optimizer", help="the name of a level-5 optimizer, e.g. NEWTON_MOMENTUM")
    args = parser.parse_args(argv)

    import jax

    counter = {"/jax/compilation_cache/cache_hits": 0, "/jax/compilation_cache/cache_misses": 0}

    def count(event: str, **_) -> None:
        if event in counter:
            counter[event] += 1

    jax.monitoring.register_event_listener(count)
    from . import level5
    from ._data import make_data

    arrays = np.load(args.data)
    data = make_data(arrays["counts"], arrays["offsets"], arrays["covariates"])
    optimizer = getattr(level5, args.optimizer)
    times = []
    for _ in range(2):
        start = time.perf_counter()
        result = level5.fit(data, args.n_iter, optimizer=optimizer)  # waits for its result
        times.append(time.perf_counter() - start)
    print(
        json.dumps(
            {
                "first_call_s": times[0],
                "second_call_s": times[1],
                "cache_hits": counter["/jax/compilation_cache/cache_hits"],
                "cache_writes": counter[
                    "/jax/compilation_cache/cache_misses"
                ],  # JAX counts a write as a miss
                "n_steps": int(result.n_steps),
            }
        )
    )


if __name__ == "__main__":
    main()
