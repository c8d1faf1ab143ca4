"""The block notebooks' measured run times (`workshop/timings.json`), and JAX's persistent
compilation cache filled with their programs."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import nbformat

from tools.block_notebooks import notebook_blocks
from tools.chapter_structure import load_chapter
from tools.workshop_plan import ROOT, Block

TIMINGS_FILE = Path("workshop/timings.json")

# --- timings ----------------------------------------------------------------------------------


def solution_sources(block: Block, root: Path = ROOT) -> dict[str, list[str]]:
    """{exercise section id: the code of its solution cells, as the notebook holds it}."""
    chapter = load_chapter(block.chapter, root)
    found = {}
    for exercise in block.exercises:
        section = chapter.section(exercise)
        found[exercise] = [
            c.code for c in chapter.chunks if c.in_div and section.start < c.start < section.end
        ]
    return found


def _seconds(cell) -> float | None:
    timing = cell.get("metadata", {}).get("execution", {})
    start, end = timing.get("iopub.execute_input"), timing.get("shell.execute_reply")
    if not (start and end):
        return None
    from datetime import datetime

    return (datetime.fromisoformat(end) - datetime.fromisoformat(start)).total_seconds()


def execute(path: Path, env: dict[str, str] | None = None) -> tuple[float, nbformat.NotebookNode]:
    """Executes a notebook in a fresh kernel (the notebook's folder as working directory);
    returns (wall seconds, the executed notebook)."""
    import nbclient

    notebook = nbformat.read(path, as_version=4)
    saved = dict(os.environ)
    os.environ.update(env or {})
    try:
        client = nbclient.NotebookClient(
            notebook,
            timeout=600,
            kernel_name="python3",
            record_timing=True,
            allow_errors=False,
            resources={"metadata": {"path": str(path.parent)}},
        )
        start = time.perf_counter()
        client.execute()
        return time.perf_counter() - start, notebook
    finally:
        os.environ.clear()
        os.environ.update(saved)


def measure(root: Path = ROOT, only: list[str] | None = None) -> dict:
    """Runs every block notebook and times it: the solution notebook (and each reference
    solution's cells, checker included) and the exercise notebook without the persistent
    compilation cache, as CI runs them; then the solution notebook with a new, empty cache
    folder, once filling it and once reading it (what `--warm` buys on the day), twice over.
    With `only`, just those blocks."""
    import tempfile

    from jaxcourse import compilation_cache
    from jaxcourse.environment import environment_line

    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    machine = environment_line().removeprefix("Executed with ").rstrip(".")
    result = {"machine": f"{machine}, {cores} CPU cores", "blocks": {}}
    for block in notebook_blocks(root):
        if only and block.id not in only:
            continue
        solution = root / "notebooks" / block.notebook(False)
        entry = {}
        wall, executed = execute(solution)
        entry["solution_notebook_s"] = round(wall, 2)
        cells = {cell.source: _seconds(cell) for cell in executed.cells if cell.cell_type == "code"}
        entry["solutions_s"] = {
            exercise: round(sum(cells.get(code) or 0.0 for code in codes), 2)
            for exercise, codes in solution_sources(block, root).items()
        }
        entry["student_notebook_s"] = round(
            execute(root / "notebooks" / block.notebook(True))[0], 2
        )
        cold, warm = [], []
        for _ in range(2):  # the faster of two tries each: the cache's effect, less the noise
            with tempfile.TemporaryDirectory() as folder:
                env = compilation_cache.environment(folder)
                cold.append(execute(solution, env)[0])
                warm.append(execute(solution, env)[0])
        entry["cold_cache_solution_notebook_s"] = round(min(cold), 2)
        entry["warm_cache_solution_notebook_s"] = round(min(warm), 2)
        result["blocks"][block.id] = entry
        print(block.id, entry, flush=True)
    return result


def load_timings(root: Path = ROOT) -> dict:
    path = root / TIMINGS_FILE
    return json.loads(path.read_text()) if path.exists() else {"machine": "", "blocks": {}}


def warm(root: Path = ROOT) -> int:
    """Runs every block's notebook with JAX's persistent compilation cache on, in the course's
    cache folder, so that the same programs load from it instead of compiling on the day."""
    from jaxcourse import compilation_cache

    folder = compilation_cache.default_directory()
    before = len(compilation_cache.entries(folder))
    env = compilation_cache.environment(folder)
    for block in notebook_blocks(root):
        for student in (False, True):
            wall, _ = execute(root / "notebooks" / block.notebook(student), env)
            print(f"{block.notebook(student)}: ran in {wall:.1f} s", flush=True)
    after = len(compilation_cache.entries(folder))
    print(f"{folder}: {after} compiled programs ({after - before} new).")
    print("On the day, start Jupyter with the cache on (the same folder):")
    print('    eval "$(python -m tools.blocks --cache-env)" && python -m jupyter lab')
    return 0


def cache_env() -> str:
    """`export` lines that turn the course's persistent compilation cache on in a shell."""
    from jaxcourse import compilation_cache

    variables = compilation_cache.environment(compilation_cache.default_directory())
    return "\n".join(f"export {name}={value}" for name, value in variables.items())


# --- the pages: lists and tables from the plan and the chapters ------------------------------
