"""Command line: `python -m jaxcourse.bench pln --size oaks --repeat 1 --n-iter 400 --out results.json`.

Runs the PLN benchmark, shows progress on stderr, writes JSON (and a CSV of the curves next
to it), and prints a table and a one-line summary of the ratios P1-P3.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path


def _pln(args) -> int:
    if args.devices:
        import jax

        jax.config.update("jax_num_cpu_devices", args.devices)
    from . import run_pln_benchmark, runs_table, summary_line, write_csv

    start = time.perf_counter()

    def progress(message: str) -> None:
        print(f"[{time.perf_counter() - start:7.1f} s] {message} ...", file=sys.stderr, flush=True)

    methods = args.methods.split(",") if args.methods else None
    results = run_pln_benchmark(
        args.size,
        n_iter=args.n_iter,
        repeat=args.repeat,
        methods=methods,
        blas_threads=args.blas_threads or None,
        progress=progress,
        cold_repeat=args.cold_repeat,
        cold_methods=args.cold_methods.split(",") if args.cold_methods else None,
        reference_repeat=args.reference_repeat,
        first_call_cache=not args.no_cache,
    )
    if args.out:
        out = Path(args.out)
        out.write_text(json.dumps({k: v for k, v in results.items() if k != "fits"}, indent=1))
        write_csv(results, out.with_suffix(".csv"))
        print(f"wrote {out} and {out.with_suffix('.csv')}", file=sys.stderr)
    with __import__("pandas").option_context("display.width", 200, "display.max_columns", 20):
        table = runs_table(results).drop(columns="note")
        print(
            table.to_string(
                formatters={"final ELBO (Stirling)": "{:.2f}".format},
                float_format=lambda v: f"{v:.4g}",
            )
        )
    floor = results["floor"]
    print(
        f"floor (2 matmuls + 1 exp pass): median {1e3 * floor['median_s']:.3g} ms, best {1e3 * floor['min_s']:.3g} ms"
    )
    for run in results["runs"]:
        if run["note"]:
            print(f"note: {run['name']}: {run['note']}")
    env = results["environment"]
    print(
        f"device: {env['device']} ({env['backend']}), jax {env['jax']}, "
        + ", ".join(f"{k} {v}" for k, v in results["versions"].items() if k != "jax")
    )
    print(
        "BLAS/LAPACK threads: "
        + ", ".join(f"{name} {n}" for name, n in results["blas_threads"].items())
    )
    print("computed on: " + "; ".join(dict.fromkeys(f"{run['device']}" for run in results["runs"])))
    cached = results.get("first_call_cached_s")
    if cached:
        print(
            f"plain first call with a persistent cache: {cached['fill_s']:.3g} s filling it, {cached['hit_s']:.3g} s reading it"
        )
    print(summary_line(results))
    return 0


def main(argv: list[str] | None = None) -> int:
    from . import SIZES, method_names

    parser = argparse.ArgumentParser(
        prog="python -m jaxcourse.bench", description=__doc__.splitlines()[0]
    )
    commands = parser.add_subparsers(dest="command", required=True)
    pln = commands.add_parser("pln", help="PLN levels 0-6 and pyPLNmodels on one data set")
    pln.add_argument("--size", choices=sorted(SIZES), default="oaks")
    pln.add_argument("--repeat", type=int, default=1, help="timed fits per method after a warm-up")
    pln.add_argument(
        "--n-iter",
        type=int,
        default=600,
        help="iteration budget of levels 0-6 (pyPLNmodels runs its default 400)",
    )
    pln.add_argument("--out", help="JSON file to write (a .csv of the curves goes next to it)")
    pln.add_argument("--methods", help="comma-separated subset of: " + ", ".join(method_names()))
    pln.add_argument(
        "--blas-threads",
        type=int,
        default=1,
        help="most threads for BLAS/LAPACK (default 1; 0 leaves them as they are)",
    )
    pln.add_argument(
        "--cold-repeat", type=int, default=1, help="fresh processes timing each method's first call"
    )
    pln.add_argument("--cold-methods", help="comma-separated methods timed cold (default: all)")
    pln.add_argument(
        "--reference-repeat",
        type=int,
        help="warm fits of pyPLNmodels after its cold one (default: --repeat)",
    )
    pln.add_argument(
        "--no-cache",
        action="store_true",
        help="skip the first calls with a persistent compilation cache",
    )
    pln.add_argument(
        "--devices", type=int, help="simulated CPU devices for level 6 (set before JAX starts)"
    )
    args = parser.parse_args(argv)
    return _pln(args)


if __name__ == "__main__":
    sys.exit(main())
