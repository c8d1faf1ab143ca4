"""The course on a GPU in one prepared command: every chapter's notebook, the PLN benchmark at the
seed tutorial's size, and a report in `reports/gpu/`.

    python -m tools.gpu_check                # on a GPU machine: the whole check, done in 9 minutes
    python -m tools.gpu_check --dry-run      # anywhere: JAX on the CPU, a tiny size, one notebook
    python -m tools.gpu_check --download-wheels gpu-wheels   # here: what the GPU machine lacks
    python -m tools.gpu_check --wheels gpu-wheels            # there: install them, then check

Order: the environment; the benchmark (`python -m jaxcourse.bench pln` at oaks x 100, 1000
iterations, levels 1 to 6, as the seed tutorial timed levels 0 to 4 on a GPU); level 5 with its
Pallas kernel, compiled on a GPU (`pallas_kernels.COMPILE_ENV`); then the notebooks, several at a
time, for what is left of `--budget-s`. Nothing starts once the budget is spent: it is marked
"not run (budget)", and a running step is stopped at the budget. The report is written either way.

Notebooks run as plain Python in fresh processes (`tools.notebook_runner`), so the GPU machine
needs no Jupyter. Problem sizes come from the notebooks themselves (`config.by_device`).

The JAX used is the machine's: the report gives its version beside the course's pin, since a
machine that cannot fetch packages may hold another release.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

SEED_SECONDS = {"level 0": 120.0, "level 1": 4.1, "level 2": 2.8, "level 3": 2.9, "level 4": 4.3}
"""The seed tutorial's timings (s) for 1000 iterations at oaks x 100 on a GPU: no jit, jax.jit,
lax.scan, NamedTuple, pytree class (H. Gangloff, "JIT with JAX", finistR 2023)."""

SEED_SIZE, SEED_ITERATIONS = "oaks100", 1000
LEVELS = [f"level {k}" for k in range(1, 7)]
BUDGET_S = 540.0
"""The whole check's default budget: 9 minutes, inside the 10 the device allows a command."""

BENCHMARK_SHARE = 0.4
"""The most of the budget the benchmark may take, so that notebooks still run."""

REPORT_MARGIN_S = 15.0
"""Kept back at the end to write the report."""

WHEELS = ["pyPLNmodels==1.0.10", "setuptools<81"]
"""What the course's notebooks need beyond the GPU machine's image, whose package list is known:
pyPLNmodels (its dependencies are in the image) and a setuptools that still has `pkg_resources`,
which it imports. IPython is not carried (it needs nine packages the image lacks):
`tools.notebook_runner` stands in for its display."""

NOT_RUN = "not run (budget)"


# --- running a notebook's cells ---------------------------------------------------------------


def _child_env(dry_run: bool) -> dict[str, str]:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT / "src"), str(ROOT)]))
    env["XLA_PYTHON_CLIENT_PREALLOCATE"] = "false"  # several processes share the GPU
    if dry_run:
        env["JAX_PLATFORMS"] = "cpu"
    return env


def _run(command: list[str], timeout_s: float, env: dict[str, str]) -> dict:
    """Runs `command` from the repository root: its status ("passed", "failed" or "timed out"),
    seconds, standard output, and the last lines of its errors where it did not pass."""
    start = time.perf_counter()
    try:
        done = subprocess.run(
            command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=max(timeout_s, 1)
        )
        status, out, err = (
            ("passed" if done.returncode == 0 else "failed"),
            done.stdout,
            done.stderr,
        )
    except subprocess.TimeoutExpired as stopped:
        status, out, err = "timed out", "", stopped.stderr or b""
        err = err.decode(errors="replace") if isinstance(err, bytes) else err
    row = {"status": status, "seconds": round(time.perf_counter() - start, 1), "stdout": out}
    if status != "passed":
        row["tail"] = "\n".join((err or out).splitlines()[-8:])
    return row


def run_notebooks(notebooks: list[Path], deadline: float, parallel: int, env) -> list[dict]:
    """Each notebook in a fresh process, `parallel` at a time, none started after `deadline`
    (`time.monotonic()`), each stopped there."""

    def one(notebook: Path) -> dict:
        row = {"notebook": str(notebook.relative_to(ROOT)), "status": NOT_RUN, "seconds": None}
        left = deadline - time.monotonic()
        if left > 5:
            command = [sys.executable, "-m", "tools.notebook_runner", str(notebook)]
            row.update(_run(command, left, env))
            del row["stdout"]
        return row

    with ThreadPoolExecutor(max_workers=parallel) as pool:
        return list(pool.map(one, notebooks))


# --- the benchmark ----------------------------------------------------------------------------


def run_benchmark(size: str, n_iter: int, timeout_s: float, folder: Path, env) -> dict:
    """`python -m jaxcourse.bench pln` on levels 1 to 6, warm (no fresh processes); its JSON, or
    the status and output tail of a run that did not finish."""
    out = folder / "benchmark.json"
    options = f"pln --size {size} --n-iter {n_iter} --cold-repeat 0 --no-cache --out {out}"
    command = [
        sys.executable,
        "-m",
        "jaxcourse.bench",
        *options.split(),
        "--methods",
        ",".join(LEVELS),
    ]
    row = _run(command, timeout_s, env)
    del row["stdout"]
    return row if row["status"] != "passed" else {**row, **json.loads(out.read_text())}


PALLAS_SCRIPT = """
import json, sys
from jaxcourse.bench import load_size
from jaxcourse.pln import level5
from jaxcourse.pallas_kernels import interpret_mode
from jaxcourse.timing import time_call
data, n_iter = load_size(sys.argv[1]), int(sys.argv[2])
timing = time_call(level5.fit, data, n_iter, kernel="pallas", tol=0.0, repeat=1, warmup=1)
print(json.dumps({"interpret": interpret_mode(), "per_iteration_s": min(timing.times_s) / n_iter}))
"""


def run_pallas(size: str, n_iter: int, timeout_s: float, env) -> dict:
    """Level 5 with its Pallas kernel, compiled where the device allows (interpreted on a CPU)."""
    env = dict(env, JAXCOURSE_PALLAS_COMPILE="1")
    row = _run([sys.executable, "-c", PALLAS_SCRIPT, size, str(n_iter)], timeout_s, env)
    out = row.pop("stdout")
    return row if row["status"] != "passed" else {**row, **json.loads(out.splitlines()[-1])}


# --- the environment and the report -----------------------------------------------------------


def environment(env: dict[str, str]) -> dict:
    """The device and versions, read in a fresh process with the children's environment."""
    script = (
        "import jax, json, platform\nfrom importlib import metadata\n"
        "plugins = {d.metadata['Name']: d.version for d in metadata.distributions()"
        " if (d.metadata['Name'] or '').lower().startswith(('jax-cuda', 'jax_cuda'))}\n"
        "d = jax.devices()[0]\n"
        "print(json.dumps({'backend': jax.default_backend(), 'device': d.device_kind,"
        " 'device_count': jax.device_count(), 'jax': jax.__version__,"
        " 'jaxlib': metadata.version('jaxlib'), 'cuda_plugins': plugins,"
        " 'python': platform.python_version()}))"
    )
    row = _run([sys.executable, "-c", script], 120, env)
    if row["status"] != "passed":
        return {"error": row["tail"]}
    info = json.loads(row["stdout"].splitlines()[-1])
    with contextlib.suppress(OSError, subprocess.SubprocessError):
        smi = subprocess.run(
            ["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader"],
            capture_output=True,
            text=True,
            timeout=30,
        )
        info["nvidia_smi"] = smi.stdout.strip()
    pins = (ROOT / "requirements.txt").read_text().splitlines()
    info["jax_pinned"] = next((p.split("==")[1] for p in pins if p.startswith("jax==")), None)
    return info


def level_rows(benchmark: dict) -> list[dict]:
    """One row per level: the course's fit and its time for 1000 iterations, beside the seed's."""
    runs = {run["name"]: run for run in benchmark.get("runs", [])}
    rows = []
    for name in ["level 0", *LEVELS]:
        run = runs.get(name, {})
        per_iteration = run.get("per_iteration_s")
        rows.append(
            {
                "level": name,
                "n_steps": run.get("n_steps"),
                "fit_s": run.get("run_s"),
                "per_1000_s": None if per_iteration is None else 1e3 * per_iteration,
                "seed_1000_s": SEED_SECONDS.get(name),
            }
        )
    return rows


def _cell(value, digits: int = 3) -> str:
    return (
        "–" if value is None else f"{value:.{digits}g}" if isinstance(value, float) else str(value)
    )


def report_markdown(report: dict) -> str:
    """The report as Markdown: headline, environment, the level table, the notebooks."""
    env, bench = report["environment"], report["benchmark"]
    lines = [
        "# The course on a GPU: one check",
        "",
        f"Run {report['started']} with `{report['command']}`, {report['seconds']:.0f} s of a "
        f"{report['budget_s']:.0f} s budget. Headline: {report['headline']}",
        "",
        "## Environment",
        "",
        *(f"- {key}: {value}" for key, value in env.items()),
        f"- wheels installed first: {report['wheels']}",
        "",
        f"## Levels at {report['size']}, {report['n_iter']} iterations (benchmark: {bench['status']})",
        "",
        "Per-iteration times after compilation, through `jaxcourse.bench`; the seed's column is "
        "the tutorial's own figure for 1000 iterations on its GPU (a citation, not a run).",
        "",
        "| level | steps | fit (s) | 1000 iterations (s) | seed, 1000 iterations (s) |",
        "|---|---|---|---|---|",
    ]
    for row in report["levels"]:
        values = [row[k] for k in ("n_steps", "fit_s", "per_1000_s", "seed_1000_s")]
        lines.append(f"| {row['level']} | " + " | ".join(_cell(v) for v in values) + " |")
    if bench.get("tail"):
        lines += ["", "```", bench["tail"], "```"]
    pallas = report["pallas"]
    lines += [
        "",
        f"Level 5 with its Pallas kernel: {pallas['status']}"
        + (
            f", {_cell(1e3 * pallas['per_iteration_s'])} ms per iteration"
            f" ({'interpreted' if pallas['interpret'] else 'compiled'})"
            if "per_iteration_s" in pallas
            else ""
        ),
    ]
    lines += ["", "## Notebooks", "", "| notebook | status | seconds |", "|---|---|---|"]
    lines += [
        f"| {r['notebook']} | {r['status']} | {_cell(r['seconds'])} |" for r in report["notebooks"]
    ]
    failed = [r for r in report["notebooks"] if r.get("tail")]
    for row in failed:
        lines += ["", f"### {row['notebook']}: {row['status']}", "", "```", row["tail"], "```"]
    return "\n".join(lines) + "\n"


def headline(levels: list[dict]) -> str:
    """The seed problem's comparison in one line: level 2 (lax.scan) against the seed's 2.8 s."""
    row = next(r for r in levels if r["level"] == "level 2")
    if row["per_1000_s"] is None:
        return "level 2 did not run."
    fastest = min((r for r in levels if r["per_1000_s"] is not None), key=lambda r: r["per_1000_s"])
    return (
        f"level 2 (lax.scan) takes {row['per_1000_s']:.3g} s for 1000 iterations against the "
        f"seed's {row['seed_1000_s']} s; the fastest, {fastest['level']}, {fastest['per_1000_s']:.3g} s."
    )


def load_report(folder: Path) -> dict:
    """Reads a report back and checks its shape; raises `ValueError` naming what is missing."""
    report = json.loads((folder / "gpu-check.json").read_text())
    missing = {"environment", "benchmark", "levels", "pallas", "notebooks", "headline"} - set(
        report
    )
    if missing:
        raise ValueError(f"{folder / 'gpu-check.json'} lacks {sorted(missing)}")
    return report


# --- the command ------------------------------------------------------------------------------


def check(args) -> dict:
    start, clock = time.strftime("%Y-%m-%d %H:%M:%S %Z"), time.monotonic()
    deadline = clock + args.budget_s - REPORT_MARGIN_S
    env = _child_env(args.dry_run)
    folder = Path(args.out)
    folder.mkdir(parents=True, exist_ok=True)
    wheels = install_wheels(args.wheels) if args.wheels else None
    info = environment(env)
    left = deadline - time.monotonic()
    bench = run_benchmark(
        args.size, args.n_iter, min(BENCHMARK_SHARE * args.budget_s, left), folder, env
    )
    left = deadline - time.monotonic()
    pallas = (
        run_pallas(args.size, args.pallas_iter, min(60.0, left), env)
        if left > 5
        else {"status": NOT_RUN}
    )
    notebooks = run_notebooks([ROOT / n for n in args.notebooks], deadline, args.parallel, env)
    levels = level_rows(bench)
    return {
        "started": start,
        "command": " ".join(["python -m tools.gpu_check", *sys.argv[1:]]),
        "budget_s": args.budget_s,
        "seconds": time.monotonic() - clock,
        "size": args.size,
        "n_iter": args.n_iter,
        "environment": info,
        "wheels": wheels,
        "levels": levels,
        "headline": headline(levels),
        "benchmark": {
            k: v for k, v in bench.items() if k in ("status", "seconds", "tail", "floor", "metrics")
        },
        "pallas": pallas,
        "notebooks": notebooks,
    }


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m tools.gpu_check", description=__doc__.splitlines()[0]
    )
    parser.add_argument(
        "--dry-run", action="store_true", help="JAX on the CPU, a tiny size, one notebook"
    )
    parser.add_argument(
        "--budget-s", type=float, default=BUDGET_S, help="stop everything by then (s)"
    )
    parser.add_argument("--out", default=str(ROOT / "reports" / "gpu"), help="the report's folder")
    parser.add_argument(
        "--notebooks", nargs="*", help="notebooks to run (default: every chapter's)"
    )
    parser.add_argument("--wheels", metavar="FOLDER", help="pip install FOLDER's wheels first")
    parser.add_argument("--parallel", type=int, default=4, help="notebooks run at once")
    parser.add_argument(
        "--download-wheels", metavar="FOLDER", help="download WHEELS for Python 3.12"
    )
    return parser


def download_wheels(folder: str) -> int:
    """Downloads `WHEELS` for the GPU machine's Python 3.12 on x86-64 Linux, without dependencies."""
    command = [
        sys.executable,
        "-m",
        "pip",
        "download",
        "--no-deps",
        "--only-binary=:all:",
        "--python-version",
        "3.12",
        "--platform",
        "manylinux2014_x86_64",
        "-d",
        folder,
        *WHEELS,
    ]
    return subprocess.run(command).returncode


def install_wheels(folder: str) -> dict:
    """Installs the wheels in `folder` without an index (the GPU machine reaches none)."""
    wheels = sorted(str(p) for p in Path(folder).glob("*.whl"))
    command = [sys.executable, "-m", "pip", "install", "--no-index", "--no-deps", *wheels]
    row = _run(command, 300, dict(os.environ))
    del row["stdout"]
    return {**row, "wheels": [Path(w).name for w in wheels]}


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if args.download_wheels:
        return download_wheels(args.download_wheels)
    args.size, args.n_iter, args.pallas_iter = (
        ("tiny", 20, 5) if args.dry_run else (SEED_SIZE, SEED_ITERATIONS, 200)
    )
    if args.notebooks is None:
        chapters = sorted((ROOT / "notebooks").glob("*.ipynb"))
        args.notebooks = (  # a dry run checks the command, not the chapters: the quickest one
            [str((ROOT / "notebooks/glossary.ipynb").relative_to(ROOT))]
            if args.dry_run
            else [str(p.relative_to(ROOT)) for p in chapters]
        )
    report = check(args)
    folder = Path(args.out)
    (folder / "gpu-check.json").write_text(json.dumps(report, indent=1) + "\n")
    (folder / "gpu-check.md").write_text(report_markdown(report))
    print(report_markdown(report))
    passed = [
        report["benchmark"]["status"],
        report["pallas"]["status"],
        *(r["status"] for r in report["notebooks"]),
    ]
    return 0 if all(status == "passed" for status in passed) else 1


if __name__ == "__main__":
    sys.exit(main())
