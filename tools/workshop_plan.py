"""The workshop's plan (`workshop/plan.yml`): its blocks, and the one-day and two-day schedules
built from them."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import yaml

from tools.notebooks import STUDENT_DIR

ROOT = Path(__file__).resolve().parents[1]
PLAN_FILE = Path("workshop/plan.yml")
BLOCKS_DIR = "blocks"
"""Where the block notebooks go, below `notebooks/` (the student variants in `student/` below it)."""


@dataclass(frozen=True)
class Block:
    """One block of the workshop: a chapter's few demonstrated cells and one or two exercises."""

    id: str
    title: str
    chapter: str
    demonstrate: tuple[str, ...]
    exercises: tuple[str, ...]
    minutes: dict[str, int]
    note: str = ""
    uses: dict[str, tuple[str, ...]] = field(default_factory=dict)
    """{exercise: the JAX functions its reference solution calls}, as the plan declares them
    (`jax_calls` reads them from the solution; the tests hold the two equal)."""
    shown: bool = False
    """True for a block shown from the executed chapter on the website: it has no notebook."""

    @property
    def page(self) -> str:
        return f"chapters/{self.chapter}.qmd"

    @property
    def total(self) -> int:
        return sum(self.minutes.values())

    def notebook(self, student: bool = False) -> str:
        """Its notebook's path below `notebooks/`."""
        return f"{BLOCKS_DIR}/{STUDENT_DIR + '/' if student else ''}{self.id}.ipynb"


@dataclass(frozen=True)
class Slot:
    """One line of a day's plan: a block, a chapter taught from its own notebook, a session
    (welcome, wrap-up) or a break."""

    kind: str  # "block", "chapter", "session", "break" or "day"
    title: str
    minutes: int
    block: Block | None = None
    chapter: str | None = None
    extra: int = 0
    """Minutes a slower plan adds to a block's exercises (the chapter's other exercises)."""


def load_plan(root: Path = ROOT) -> dict:
    """The plan; a course without `workshop/plan.yml` has no blocks and empty plans."""
    path = root / PLAN_FILE
    if not path.exists():
        return {"blocks": [], "one_day": [], "two_day": []}
    return yaml.safe_load(path.read_text())


def blocks(root: Path = ROOT) -> list[Block]:
    """The plan's blocks, in its order."""
    return [
        Block(
            id=str(entry["id"]),
            title=str(entry["title"]),
            chapter=str(entry["chapter"]),
            demonstrate=tuple(entry.get("demonstrate") or ()),
            exercises=tuple(entry.get("exercises") or ()),
            uses=_uses(entry.get("exercises")),
            minutes={key: int(value) for key, value in entry["minutes"].items()},
            note=str(entry.get("note", "")),
            shown=bool(entry.get("shown", False)),
        )
        for entry in load_plan(root)["blocks"]
    ]


def _uses(exercises) -> dict[str, tuple[str, ...]]:
    """The plan's `exercises:` mapping (exercise: [functions it uses]); a plain list declares none."""
    if not isinstance(exercises, dict):
        return {}
    return {str(key): tuple(value or ()) for key, value in exercises.items()}


def schedule(name: str, root: Path = ROOT) -> list[Slot]:
    """A plan ("one_day" or "two_day") as slots, in order; a "day" slot starts each day."""
    by_id = {block.id: block for block in blocks(root)}
    slots = []
    for entry in load_plan(root)[name]:
        if "day" in entry:
            slots.append(Slot("day", f"Day {entry['day']}", 0))
        elif "break" in entry:
            slots.append(Slot("break", str(entry.get("name", "Break")), int(entry["break"])))
        elif "block" in entry:
            block = by_id[entry["block"]]
            extra = int(entry.get("extra", 0))
            slots.append(
                Slot("block", block.title, block.total + extra, block, block.chapter, extra)
            )
        elif "chapter" in entry:
            slots.append(
                Slot("chapter", str(entry["title"]), int(entry["minutes"]), None, entry["chapter"])
            )
        else:
            slots.append(Slot("session", str(entry["session"]), int(entry["minutes"])))
    return slots


def days(slots: list[Slot]) -> list[list[Slot]]:
    """The slots of each day (a plan without "day" slots is one day)."""
    result: list[list[Slot]] = [[]]
    for slot in slots:
        if slot.kind == "day":
            if result[-1]:
                result.append([])
        else:
            result[-1].append(slot)
    return result


def stretches(day: list[Slot]) -> list[int]:
    """Minutes of each stretch of teaching between two breaks."""
    lengths, current = [], 0
    for slot in day:
        if slot.kind == "break":
            lengths.append(current)
            current = 0
        else:
            current += slot.minutes
    return [*lengths, current]
