"""Does `jax.jit` compute what eager JAX computes? A check, and a miscompilation it still finds.

From jax 0.10.2 to at least 0.12.0.1, XLA:CPU miscompiles `jnp.sum(jnp.log(2 * x) + x * jnp.log(x))`
for float32 `x` with 4096 entries or more: the jitted sum is about 1.7 times the true one. The
wrong value equals, to float32 rounding, the sum of `log(2x) + x log(2x)`, as if the second `log`
read `2 * x`. From 4096 entries on, XLA:CPU compiles the sum into a YNNPACK fusion (`__ynn_fusion`
in the compiled HLO); with that fusion off (`XLA_FLAGS=--xla_cpu_experimental_ynn_fusion_type=`)
every result is right. notes/upstream/README.md is the report.

This file needs only jax and numpy, so it is also the stand-alone reproducer for that report:

    python src/jaxcourse/jit_parity.py          # a table; exit status 1 if any result is wrong
    python src/jaxcourse/jit_parity.py --json   # the same as JSON
    python -m jaxcourse.jit_parity              # the same, from the installed package
"""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import numpy.typing as npt

SHAPES = [(1_000,), (4_095,), (4_096,), (64, 64), (116, 114), (11_600, 114)]
"""Below and from 4096 entries; (116, 114) is the oaks data's shape, (11_600, 114) oaks x 100."""

RTOL = 1e-4
"""Float32 sums of up to a few million such terms agree with float64 far better than this."""

NO_YNN_FUSION = "--xla_cpu_experimental_ynn_fusion_type="
"""An XLA flag that turns XLA:CPU's YNNPACK fusions off; it must be set before JAX starts."""


def log_reduction(x):
    """sum(log(2x) + x log x): elementwise work feeding a sum, one fused loop under `jit`."""
    return jnp.sum(jnp.log(2 * x) + x * jnp.log(x))


def log_reduction_in_parts(x):
    """The same sum as two sums, one per term, added afterwards."""
    return jnp.sum(jnp.log(2 * x)) + jnp.sum(x * jnp.log(x))


def sample(shape: tuple[int, ...], seed: int = 0) -> np.ndarray:
    """Float32 entries drawn from U(0.5, 2), the inputs of the report."""
    return np.random.default_rng(seed).uniform(0.5, 2.0, size=shape).astype(np.float32)


def float64_sum(x: npt.ArrayLike, *, second_log_of_2x: bool = False) -> float:
    """`log_reduction(x)` in NumPy float64; with `second_log_of_2x`, what the bug computes."""
    x = np.asarray(x, dtype=np.float64)
    second_log = np.log(2 * x) if second_log_of_2x else np.log(x)
    return float(np.sum(np.log(2 * x) + x * second_log))


def is_close(value: float, reference: float, rtol: float = RTOL) -> bool:
    return abs(value - reference) <= rtol * abs(reference)


def uses_ynn_fusion(fn, *args) -> bool:
    """Whether XLA compiles `jit(fn)(*args)` into a YNNPACK fusion (`__ynn_fusion` in its HLO)."""
    text = jax.jit(fn).lower(*args).compile().as_text()
    return text is not None and "__ynn_fusion" in text


def check(shape: tuple[int, ...], seed: int = 0) -> dict[str, Any]:
    """`log_reduction` on one sample of `shape`: jit, eager, jit of the parts, float64, verdict."""
    x = sample(shape, seed)
    exact = float64_sum(x)
    with jax.disable_jit():
        eager = float(log_reduction(x))
    jitted = float(jax.jit(log_reduction)(x))
    return {
        "shape": list(shape),
        "float64": exact,
        "eager": eager,
        "jit": jitted,
        "jit_of_parts": float(jax.jit(log_reduction_in_parts)(x)),
        "jit_ratio": jitted / exact,
        "if_log_x_read_2x": float64_sum(x, second_log_of_2x=True),
        "ynn_fusion": uses_ynn_fusion(log_reduction, x),
        "wrong": not is_close(jitted, exact),
    }


def cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as cpuinfo:
            for line in cpuinfo:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def report(shapes=SHAPES) -> dict[str, Any]:
    """Versions, backend, CPU model, XLA_FLAGS and one `check` per shape."""
    import jaxlib

    return {
        "jax": jax.__version__,
        "jaxlib": jaxlib.__version__,
        "numpy": np.__version__,
        "python": platform.python_version(),
        "backend": jax.default_backend(),
        "cpu": cpu_model(),
        "xla_flags": os.environ.get("XLA_FLAGS", ""),
        "results": [check(shape) for shape in shapes],
    }


def report_in_new_process(xla_flags: str = "") -> dict[str, Any]:
    """`report()` run by a fresh Python with `XLA_FLAGS=xla_flags`: XLA reads its flags only
    when JAX starts, so trying a flag needs a new process."""
    env = {**os.environ, "XLA_FLAGS": xla_flags}
    completed = subprocess.run(
        [sys.executable, "-m", "jaxcourse.jit_parity", "--json"],
        env=env,
        capture_output=True,
        text=True,
    )
    if completed.returncode not in (0, 1):
        raise RuntimeError(f"jaxcourse.jit_parity failed:\n{completed.stderr}")
    return json.loads(completed.stdout)


def format_report(result: dict[str, Any]) -> str:
    """A plain-text table of a `report()`."""
    lines = [
        " ".join(f"{key} {result[key]}" for key in ("jax", "jaxlib", "numpy", "python", "backend")),
        f"cpu {result['cpu']}; XLA_FLAGS={result['xla_flags']!r}",
        f"{'shape':>13} {'float64':>11} {'eager':>11} {'jit':>11} {'jit, parts':>11} "
        f"{'jit/f64':>7} {'log(x)->log(2x)':>15} {'ynn':>5}",
    ]
    for row in result["results"]:
        lines.append(
            f"{str(tuple(row['shape'])):>13} {row['float64']:11.1f} {row['eager']:11.1f} {row['jit']:11.1f} "
            f"{row['jit_of_parts']:11.1f} {row['jit_ratio']:7.4f} {row['if_log_x_read_2x']:15.1f} "
            f"{str(row['ynn_fusion']):>5}" + ("  WRONG" if row["wrong"] else "")
        )
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    result = report()
    print(json.dumps(result) if "--json" in argv else format_report(result))
    return 1 if any(row["wrong"] for row in result["results"]) else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
