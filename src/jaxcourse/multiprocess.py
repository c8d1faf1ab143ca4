"""Beyond one process: the FSDP step of `model_parallel` on JAX's multi-controller runtime,
two (or more) Python processes on this machine joined by `jax.distributed.initialize` over
127.0.0.1, with the gloo CPU collectives.

Run one process per terminal (the same command, each with its own `--process-id`):

    python -m jaxcourse.multiprocess worker --process-id 0 --processes 2 --port 12355
    python -m jaxcourse.multiprocess worker --process-id 1 --processes 2 --port 12355

or let the launcher start them and wait for both, for at most `--timeout` seconds:

    python -m jaxcourse.multiprocess launch --processes 2

Each worker prints one JSON line: its losses, and how far its result is from the same steps
run on one device. On a cluster the same worker runs once per host, with the coordinator's
address instead of 127.0.0.1 (or none at all under Slurm, Open MPI or Cloud TPU, which
`jax.distributed.initialize` detects).
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
import time

HOST = "127.0.0.1"
"""The only address the launcher uses: the processes talk over loopback, never a network."""

N_SAMPLES, N_IN, N_HIDDEN, N_OUT = 64, 8, 16, 8
"""The problem each worker trains on: small, and divisible by up to 8 devices."""


# --- The worker: one process of the multi-process job ---------------------------------------


def run_worker(
    process_id: int,
    num_processes: int,
    port: int,
    *,
    devices_per_process: int = 2,
    n_steps: int = 3,
    initialization_timeout: int = 60,
) -> dict:
    """Joins the job as process `process_id` of `num_processes`, trains the FSDP MLP for
    `n_steps` on a mesh over every process's devices, and returns what it saw (a dict).

    Must run in a fresh process: the CPU device count and `jax.distributed.initialize` both
    have to come before any JAX computation.
    """
    import jax

    jax.config.update("jax_num_cpu_devices", devices_per_process)
    jax.config.update("jax_cpu_collectives_implementation", "gloo")
    jax.distributed.initialize(
        f"{HOST}:{port}", num_processes, process_id, initialization_timeout=initialization_timeout
    )
    import numpy as np
    from jax.sharding import NamedSharding
    from jax.sharding import PartitionSpec as P

    from . import model_parallel as mp
    from .mesh import DATA, MODEL

    plan = mp.PLANS["FSDP"]
    mesh = jax.make_mesh((jax.device_count(), 1), (DATA, MODEL))  # every process's devices
    # Every process draws the same data and start (same keys) on its own CPU, and keeps its rows.
    x, y = mp.make_data(N_SAMPLES, N_IN, N_OUT, key=jax.random.key(0))
    params = mp.init_mlp(N_IN, N_HIDDEN, N_OUT, key=jax.random.key(1))
    rows = slice(
        process_id * N_SAMPLES // num_processes, (process_id + 1) * N_SAMPLES // num_processes
    )
    row_sharding = NamedSharding(mesh, P(DATA))
    x_global = jax.make_array_from_process_local_data(row_sharding, np.asarray(x[rows]), x.shape)
    y_global = jax.make_array_from_process_local_data(row_sharding, np.asarray(y[rows]), y.shape)

    def global_array(value, spec):  # each process fills in the blocks its own devices hold
        value = np.asarray(value)
        return jax.make_array_from_callback(
            value.shape, NamedSharding(mesh, spec), lambda index: value[index]
        )

    with jax.set_mesh(mesh):
        sharded_params = jax.tree.map(
            global_array, params, mp.stored_specs(plan), is_leaf=lambda v: isinstance(v, jax.Array)
        )
        sharded_params, losses = mp.train(
            mp.sharded_step,
            sharded_params,
            mp.OPTIMIZER.init(sharded_params),
            x_global,
            y_global,
            n_steps,
            plan=plan,
        )
        replicated = jax.jit(lambda tree: tree, out_shardings=NamedSharding(mesh, P()))(
            sharded_params
        )
    final = jax.tree.map(lambda leaf: np.asarray(leaf.addressable_data(0)), replicated)

    reference, reference_losses = mp.train(
        jax.jit(mp.train_step), params, mp.OPTIMIZER.init(params), x, y, n_steps
    )
    gaps = jax.tree.map(lambda a, b: float(np.max(np.abs(a - np.asarray(b)))), final, reference)
    report = {
        "process_id": jax.process_index(),
        "process_count": jax.process_count(),
        "global_devices": jax.device_count(),
        "local_devices": jax.local_device_count(),
        "mesh": dict(mesh.shape),
        "losses": losses,
        "max_abs_difference": max(
            jax.tree.leaves(gaps) + [float(np.max(np.abs(np.subtract(losses, reference_losses))))]
        ),
    }
    jax.distributed.shutdown()
    return report


# --- The launcher: start the workers on loopback and wait, for a bounded time -----------------


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now (the system picks it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind((HOST, 0))
        return probe.getsockname()[1]


def check_port_free(port: int) -> int:
    """Returns `port` if the coordinator could listen on it at 127.0.0.1.

    Raises:
        TypeError: `port` is not an int.
        ValueError: `port` is outside 1-65535.
        RuntimeError: something already listens on it.
    """
    if isinstance(port, bool) or not isinstance(port, int):
        raise TypeError(f"port must be an int, got {type(port).__name__}.")
    if not 1 <= port <= 65535:
        raise ValueError(f"port must be between 1 and 65535, got {port}.")
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        try:
            probe.bind((HOST, port))
        except OSError as error:
            raise RuntimeError(
                f"port {port} on {HOST} is already in use ({error.strerror}); the coordinator of "
                "jax.distributed.initialize must listen there. Choose another port, or none to "
                "let the launcher pick a free one."
            ) from None
    return port


def worker_command(
    process_id: int,
    num_processes: int,
    port: int,
    *,
    devices_per_process: int,
    n_steps: int,
    initialization_timeout: int,
) -> list[str]:
    """The command line that starts one worker (what you would type in its terminal)."""
    return [
        sys.executable,
        "-m",
        "jaxcourse.multiprocess",
        "worker",
        "--process-id",
        str(process_id),
        "--processes",
        str(num_processes),
        "--port",
        str(port),
        "--devices-per-process",
        str(devices_per_process),
        "--steps",
        str(n_steps),
        "--initialization-timeout",
        str(initialization_timeout),
    ]


def _stop(processes) -> None:
    for process in processes:
        if process.poll() is None:
            process.kill()
    for process in processes:
        process.wait()


def launch(
    num_processes: int = 2,
    *,
    devices_per_process: int = 2,
    n_steps: int = 3,
    port: int | None = None,
    timeout: float = 60.0,
    start: list[int] | None = None,
) -> list[dict]:
    """Starts `num_processes` workers on 127.0.0.1 and returns their reports, in process order.

    Args:
        num_processes: how many processes the job has (at least 2).
        devices_per_process: simulated CPU devices in each.
        n_steps: training steps.
        port: the coordinator's port; a free one by default.
        timeout: the most seconds to wait for all of them; then every worker is stopped.
        start: the process ids to start (all by default). Starting fewer than
            `num_processes` shows what happens when a process never arrives.

    Raises:
        RuntimeError: the port is taken, or a worker failed (its error output is quoted).
        TimeoutError: the workers did not all finish within `timeout` seconds (for example
            because a process never arrived, and the others waited for it).
    """
    if isinstance(num_processes, bool) or not isinstance(num_processes, int) or num_processes < 2:
        raise ValueError(f"num_processes must be an int of at least 2, got {num_processes!r}.")
    port = free_port() if port is None else check_port_free(port)
    start = list(range(num_processes)) if start is None else list(start)
    # Each worker waits for the others in jax.distributed.initialize for at most this long.
    initialization_timeout = max(int(timeout) - 5, 1)
    env = {**os.environ, "JAX_PLATFORMS": "cpu"}
    for name in ("XLA_FLAGS", "JAX_NUM_CPU_DEVICES"):  # the worker sets its own device count
        env.pop(name, None)
    processes = {
        process_id: subprocess.Popen(
            worker_command(
                process_id,
                num_processes,
                port,
                devices_per_process=devices_per_process,
                n_steps=n_steps,
                initialization_timeout=initialization_timeout,
            ),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        for process_id in start
    }
    deadline = time.monotonic() + timeout
    outputs = {}
    try:
        for process_id, process in processes.items():
            try:
                outputs[process_id] = process.communicate(
                    timeout=max(deadline - time.monotonic(), 0.1)
                )
            except subprocess.TimeoutExpired:
                missing = sorted(set(range(num_processes)) - set(start))
                why = (
                    f" Process(es) {missing} were never started, and the others wait for them."
                    if missing
                    else " A process that never reaches jax.distributed.initialize, "
                    "or a collective that one process skips, keeps the others waiting."
                )
                raise TimeoutError(
                    f"process {process_id} of {num_processes} did not finish within {timeout:g} s on "
                    f"{HOST}:{port}; all workers were stopped.{why}"
                ) from None
    finally:
        _stop(processes.values())
    reports = []
    for process_id, (stdout, stderr) in outputs.items():
        if processes[process_id].returncode != 0:
            tail = "\n".join(stderr.strip().splitlines()[-6:])
            raise RuntimeError(
                f"process {process_id} failed (exit {processes[process_id].returncode}):\n{tail}"
            )
        reports.append(json.loads(stdout.strip().splitlines()[-1]))
    return reports


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="python -m jaxcourse.multiprocess", description=__doc__.split("\n\n")[0]
    )
    commands = parser.add_subparsers(dest="command", required=True)
    for name in ("worker", "launch"):
        command = commands.add_parser(name)
        command.add_argument("--processes", type=int, default=2)
        command.add_argument("--port", type=int, default=None)
        command.add_argument("--devices-per-process", type=int, default=2)
        command.add_argument("--steps", type=int, default=3)
        if name == "worker":
            command.add_argument("--process-id", type=int, required=True)
            command.add_argument("--initialization-timeout", type=int, default=60)
        else:
            command.add_argument("--timeout", type=float, default=60.0)
    args = parser.parse_args(argv)
    if args.command == "worker":
        if args.port is None:
            parser.error("a worker needs --port (the same for every process)")
        report = run_worker(
            args.process_id,
            args.processes,
            args.port,
            devices_per_process=args.devices_per_process,
            n_steps=args.steps,
            initialization_timeout=args.initialization_timeout,
        )
        print(json.dumps(report), flush=True)
    else:
        for report in launch(
            args.processes,
            devices_per_process=args.devices_per_process,
            n_steps=args.steps,
            port=args.port,
            timeout=args.timeout,
        ):
            print(json.dumps(report))


if __name__ == "__main__":
    main()
