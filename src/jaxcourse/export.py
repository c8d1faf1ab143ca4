"""Calling a serialized `jax.export` program in a fresh Python process that has only JAX.

`call_in_fresh_process(serialized, *args)` writes the bytes and the arguments to files, starts
`python -c FRESH_PROCESS_SCRIPT`, which imports `jax` and `numpy` and nothing else, deserializes
the bytes, calls them, and sends the outputs back. So it shows that the bytes alone carry the
program: the process never sees the Python function that was exported, nor this package.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

FRESH_PROCESS_SCRIPT = """\
import sys
import numpy as np
import jax
from jax import export

program, inputs, outputs = sys.argv[1:4]
exported = export.deserialize(bytearray(open(program, "rb").read()))
with np.load(inputs) as saved:
    args = [saved[f"arg{i}"] for i in range(len(saved.files))]
results = jax.tree.leaves(exported.call(*args))
imported = sorted(name for name in sys.modules if name.split(".")[0] == "jaxcourse")
np.savez(outputs, *[np.asarray(r) for r in results], imported=np.array(imported, dtype=str))
"""
"""The child's whole program: it imports `jax` and `numpy` only, and reports which `jaxcourse`
modules ended up imported (none, unless the bytes needed them)."""


class FreshCall(NamedTuple):
    """What the fresh process returned.

    Attributes:
        outputs: the exported program's outputs (its leaves, in order), as NumPy arrays.
        jaxcourse_modules: the `jaxcourse` modules the child had imported when it finished.
    """

    outputs: tuple[np.ndarray, ...]
    jaxcourse_modules: tuple[str, ...]


def call_in_fresh_process(
    serialized: bytes | bytearray, *args, timeout: float = 300, env: dict[str, str] | None = None
) -> FreshCall:
    """Calls the serialized `jax.export` program on `args` in a new Python process, whose
    environment is this one's updated with `env`.

    Raises:
        RuntimeError: the child failed; its standard error is in the message.
    """
    with tempfile.TemporaryDirectory(prefix="jaxcourse-export-") as folder:
        program, inputs, outputs = (Path(folder) / name for name in ("f.bin", "in.npz", "out.npz"))
        program.write_bytes(bytes(serialized))
        arrays: dict[str, Any] = {f"arg{i}": np.asarray(arg) for i, arg in enumerate(args)}
        np.savez(inputs, **arrays)
        done = subprocess.run(
            [sys.executable, "-c", FRESH_PROCESS_SCRIPT, str(program), str(inputs), str(outputs)],
            capture_output=True,
            text=True,
            timeout=timeout,
            cwd=folder,
            env={**os.environ, **(env or {})},
        )
        if done.returncode != 0:
            raise RuntimeError(f"the fresh process failed:\n{done.stderr[-2000:]}")
        with np.load(outputs) as saved:
            names = [name for name in saved.files if name != "imported"]
            results = tuple(saved[name] for name in sorted(names, key=lambda n: int(n[4:])))
            return FreshCall(results, tuple(str(m) for m in saved["imported"]))
