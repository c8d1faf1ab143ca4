"""The room server with a workshop block's exercises as its columns.

    python -m tools.room --block jit --port 8765 --data room.json [--codes codes.txt]

The block's exercises come from workshop/plan.yml (`tools.blocks`), named as their checkers'
verdicts name them; every other option goes to `python -m jaxcourse.room serve`.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from pathlib import Path

from jaxcourse import ladder, room

from . import blocks

ROOT = Path(__file__).resolve().parent.parent


def exercise_names(block_id: str, root: Path = ROOT) -> list[str]:
    """The names a block's exercises have in their checkers' verdicts, in the plan's order."""
    found = {block.id: block for block in blocks.blocks(root)}
    if block_id not in found:
        raise SystemExit(f"no block {block_id!r}; the plan's blocks: {', '.join(found)}")
    block = found[block_id]
    chapter = blocks.load_chapter(block.chapter, root)
    module = importlib.import_module(f"jaxcourse.exercises.{block.chapter.replace('-', '_')}")
    names = []
    for section in block.exercises:
        checker = blocks._checker_of(chapter, section)
        if checker is None:
            raise SystemExit(f"{section} of {block.chapter} calls no checker")
        names.append(ladder.exercise_name(getattr(module, checker)))
    return names


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--block", required=True, help="a block id of workshop/plan.yml")
    return parser


def main(argv: list[str] | None = None) -> int:
    args, rest = build_parser().parse_known_args(argv)
    columns = [f"--exercise={name}" for name in exercise_names(args.block)]
    return room.main(["serve", f"--title=Room: the {args.block} block", *columns, *rest])


if __name__ == "__main__":
    sys.exit(main())
