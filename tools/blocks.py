"""Workshop blocks: one short notebook per block of the workshop plan, generated from the chapters.

Usage, from the repository root:

    python -m tools.blocks            # write notebooks/blocks/<block>.ipynb and .../student/
                                      # (only those whose text changed; it prints which)
    python -m tools.blocks --check    # report block notebooks that are out of date (exit 1)
    python -m tools.blocks --time     # print each plan's arithmetic: slack, breaks, and the
                                      # longest stretch of talk and demonstration without a challenge
    python -m tools.blocks --measure [BLOCK ...]  # execute each block notebook (or those named),
                                      # time it and each reference solution, write
                                      # workshop/timings.json
    python -m tools.blocks --warm     # run every block notebook once, so that JAX's persistent
                                      # compilation cache holds their programs the next day
    python -m tools.blocks --cache-env  # the variables that turn that cache on (for Jupyter)
    python -m tools.blocks --copy     # copy the exercise notebooks to my-work/blocks/

`workshop/plan.yml` is the one source: each block names its chapter, the sections or labelled cells
it demonstrates and its exercise sections. This module is the command and the one name the pages
and tests import; the work is done by, from the bottom up:

- `tools.workshop_plan`: the plan, its schedules and their arithmetic;
- `tools.chapter_structure`: a chapter's chunks and sections;
- `tools.cell_names`: what a cell reads, defines and calls;
- `tools.block_notebooks`: the block notebooks, written from the chapters;
- `tools.block_timings`: their measured run times and the compilation cache;
- `tools.workshop_pages`: the pages' generated tables and lists;
- `tools.wrong_answers`: the wrong answers the tests feed each checker;
- `tools.block_prerequisites`: what each exercise needs against what the day showed before it;
- `tools.instructor_notes`: the per-block instructor notes.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from tools.block_notebooks import (  # noqa: F401 (the names the pages and tests use)
    block_notebook,
    colab_url,
    copy_for_learner,
    exercise_name,
    expected,
    notebook_blocks,
    select,
    stale,
    used_imports,
    write,
)
from tools.block_prerequisites import Gap, untaught  # noqa: F401
from tools.block_timings import (  # noqa: F401
    TIMINGS_FILE,
    cache_env,
    load_timings,
    measure,
    solution_sources,
    warm,
)
from tools.cell_names import (  # noqa: F401
    IGNORED,
    jax_calls,
    jax_references,
    names,
    names_uncached,
    numpy_has,
)
from tools.chapter_structure import load_chapter, parse_chapter, section_text  # noqa: F401
from tools.instructor_notes import (  # noqa: F401
    checkpoints,
    chosen_mistakes,
    demo_cells,
    instructor_blocks_markdown,
)
from tools.workshop_pages import (  # noqa: F401
    cache_markdown,
    exercise_count,
    exercise_sections_markdown,
    notebooks_markdown,
    plan_markdown,
    render_asis,
    summaries_markdown,
)
from tools.workshop_plan import (  # noqa: F401
    BLOCKS_DIR,
    PLAN_FILE,
    ROOT,
    Block,
    Slot,
    arithmetic,
    arithmetic_text,
    blocks,
    days,
    listening_stretches,
    load_plan,
    schedule,
    stretches,
)
from tools.wrong_answers import _checker_of, stuck_points, wrong_answers  # noqa: F401


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    group = parser.add_mutually_exclusive_group()
    group.add_argument("--check", action="store_true", help="only report stale block notebooks")
    group.add_argument("--time", action="store_true", help="print each plan's arithmetic")
    group.add_argument(
        "--measure",
        nargs="*",
        metavar="BLOCK",
        help=f"measure (every block, or those named) and write {TIMINGS_FILE}",
    )
    group.add_argument("--warm", action="store_true", help="fill the compilation cache")
    group.add_argument("--cache-env", action="store_true", help="print the cache's variables")
    group.add_argument("--copy", action="store_true", help="copy the exercises to my-work/blocks/")
    parser.add_argument("--root", type=Path, default=Path.cwd(), help="the repository root")
    args = parser.parse_args(argv)
    root = args.root
    if args.copy:
        copied, kept = copy_for_learner(root)
        print(
            f"Copied {len(copied)} block notebooks into my-work/{BLOCKS_DIR}/ (kept {len(kept)} "
            "already there): work there, nothing overwrites them."
        )
        return 0
    if args.cache_env:
        print(cache_env())
        return 0
    if args.warm:
        return warm(root)
    if args.time:
        for name, title in (("one_day", "One-day plan"), ("two_day", "Two-day plan")):
            print(f"{title}:\n{arithmetic_text(name, root)}\n")
        return 0
    if args.measure is not None:
        timings = measure(root, args.measure or None)
        if args.measure:  # the other blocks keep their timings, if taken on the same machine
            kept = load_timings(root)
            if kept.get("machine") != timings["machine"]:
                print(
                    f"refused: {TIMINGS_FILE} was measured on {kept.get('machine')!r}; measure all"
                )
                return 1
            timings = {**kept, "blocks": {**kept["blocks"], **timings["blocks"]}}
        (root / TIMINGS_FILE).write_text(json.dumps(timings, indent=1, sort_keys=True) + "\n")
        print("wrote", TIMINGS_FILE)
        return 0
    if args.check:
        old = stale(root)
        if old:
            print("Out of date (run python -m tools.blocks):", ", ".join(old))
            return 1
        print(f"All {2 * len(notebook_blocks(root))} block notebooks are in sync.")
        return 0
    written, kept = write(root)
    for path in written:
        print("wrote", path.relative_to(root))
    if not written:
        print(
            f"All {2 * len(notebook_blocks(root))} block notebooks were up to date; none written."
        )
    for copy in kept:
        print("kept a copy of your saved work:", copy.relative_to(root))
    return 0


if __name__ == "__main__":
    sys.exit(main())
