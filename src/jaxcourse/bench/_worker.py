"""The child side of a fresh-process run: `python -m jaxcourse.bench._worker REQUEST.json`.

`_fresh.run_fresh` writes the data sets and a request; this process imports only what the
request needs, times the first call (JAX's compilation, or torch's first fit, included) and
`repeat - 1` more calls of the same fit, writes each fit's final (M, S) as .npz and prints
what it measured as one JSON line. Nothing here is meant to be imported by a page.
"""

from __future__ import annotations

import json
import os
import sys
import time

from ..optional import require_compare


def _data(path: str):
    import numpy as np

    from ..pln import make_data

    arrays = np.load(path)
    return make_data(arrays["counts"], arrays["offsets"], arrays["covariates"])


def _save(path: str, variational) -> None:
    import numpy as np

    np.savez(
        path, latent_mean=np.asarray(variational[0]), latent_sqrt_var=np.asarray(variational[1])
    )


def _timed(call):
    start = time.perf_counter()
    result = call()
    return time.perf_counter() - start, result


def _jax_jobs(request: dict) -> dict:
    import jax

    if request.get("cache_dir"):
        from ..compilation_cache import enable

        enable(request["cache_dir"])
    from ._methods import select_methods

    (method,) = select_methods([request["method"]])
    imported = time.time() - request["started_at"]
    jobs = []
    for job in request["jobs"]:
        data = _data(job["data"])
        options = {**method.options, **(method.adapt(data)[0] if method.adapt else {})}

        def fit():
            return jax.block_until_ready(method.fit(data, request["n_iter"], **options))  # noqa: B023

        times, result = zip(*(_timed(fit) for _ in range(request["repeat"])))
        _save(job["out"], result[-1].variational)
        jobs.append({"times_s": list(times), "n_steps": int(result[-1].n_steps)})
    device = jax.devices()[0]
    return {
        "import_s": imported,
        "device": f"jax {jax.default_backend()} ({getattr(device, 'device_kind', str(device))})",
        "jobs": jobs,
        "xla_flags": os.environ.get("XLA_FLAGS", ""),
    }


def _reference_jobs(request: dict) -> dict:
    require_compare()
    import torch

    if request.get("torch_threads"):
        torch.set_num_threads(request["torch_threads"])
    from ..pln._reference import trace_pyplnmodels

    imported = time.time() - request["started_at"]
    jobs, device = [], "cpu"
    for job in request["jobs"]:
        data = _data(job["data"])
        maxiter = job.get("maxiter") or request["n_iter"]
        # End to end: building the model (moving the data to its device) and fitting it.
        times, traces = zip(
            *(
                _timed(lambda: trace_pyplnmodels(data, maxiter=maxiter))  # noqa: B023
                for _ in range(request["repeat"])
            )
        )
        trace = traces[-1]
        device = trace.device
        _save(job["out"], trace.variational)
        jobs.append(
            {
                "times_s": list(times),
                "n_steps": len(trace.elbo),
                "trace_elbo": [float(e) for e in trace.elbo],
                "trace_times_s": [float(t) for t in trace.times_s],
                "optimizer": trace.optimizer,
            }
        )
    return {
        "import_s": imported,
        "device": f"torch {device}, {torch.get_num_threads()} thread(s)",
        "torch_threads": torch.get_num_threads(),
        "torch_device": device,
        "jobs": jobs,
    }


def main(argv: list[str]) -> int:
    with open(argv[0]) as handle:
        request = json.load(handle)
    run = _reference_jobs if request["kind"] == "reference" else _jax_jobs
    result = run(request)
    result["pid"] = os.getpid()
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
