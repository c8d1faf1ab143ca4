"""The workshop's plan (`workshop/plan.yml`): its blocks, and the one-day and two-day schedules
built from them."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import yaml

from tools.chapter_notebooks import STUDENT_DIR

ROOT = Path(__file__).resolve().parents[1]
PLAN_FILE = Path("workshop/plan.yml")
BLOCKS_DIR = "blocks"
"""Where the block notebooks go, below `notebooks/` (the student variants in `student/` below it)."""


LISTENING = ("talk", "demo")
"""Segment kinds in which the room listens; "exercises" is a challenge (the participants type)."""
KINDS = (*LISTENING, "exercises")


@dataclass(frozen=True)
class Block:
    """One block of the workshop: a chapter's few demonstrated cells and one or two exercises."""

    id: str
    title: str
    chapter: str
    demonstrate: tuple[str, ...]
    exercises: tuple[str, ...]
    segments: tuple[tuple[str, int], ...]
    """(kind, minutes) in the order the block runs them: talk and demo interleaved with exercises."""
    note: str = ""
    uses: dict[str, tuple[str, ...]] = field(default_factory=dict)
    """{exercise: the JAX functions its reference solution calls}, as the plan declares them
    (`jax_calls` reads them from the solution; the tests hold the two equal)."""
    shown: bool = False
    """True for a block shown from the executed chapter on the website: it has no notebook."""
    notes: dict = field(default_factory=dict, compare=False, hash=False)
    """The instructor's hand-written notes (`tools.instructor_notes` reads them)."""

    @property
    def page(self) -> str:
        return f"chapters/{self.chapter}.qmd"

    @property
    def minutes(self) -> dict[str, int]:
        """Minutes of talk, demo and exercises in all."""
        return {kind: sum(m for k, m in self.segments if k == kind) for kind in KINDS}

    @property
    def total(self) -> int:
        return sum(minutes for _, minutes in self.segments)

    def notebook(self, student: bool = False) -> str:
        """Its notebook's path below `notebooks/`."""
        return f"{BLOCKS_DIR}/{STUDENT_DIR + '/' if student else ''}{self.id}.ipynb"


@dataclass(frozen=True)
class Slot:
    """One line of a day's plan: a block, a chapter taught from its own notebook, a session
    (welcome, set-up check, wrap-up), slack (minutes no one has planned, the instructor's to spend
    on a room that is behind) or a break."""

    kind: str  # "block", "chapter", "session", "slack", "break" or "day"
    title: str
    minutes: int
    block: Block | None = None
    chapter: str | None = None
    extra: int = 0
    """Minutes a slower plan adds to a block's exercises (the chapter's other exercises)."""
    hands_on: bool = False
    """A session in which the participants type (the set-up check): a challenge, not listening."""

    @property
    def segments(self) -> tuple[tuple[str, int], ...]:
        """(kind, minutes) in order. Slack is spent on exercises the room is behind on; a chapter
        taught from its notebook is not split, so all its minutes count as listening."""
        if self.block is not None:
            return self.block.segments + ((("exercises", self.extra),) if self.extra else ())
        if self.kind == "slack" or self.hands_on:
            return (("exercises", self.minutes),)
        if self.kind == "break":
            return ()
        return (("talk", self.minutes),)


def load_plan(root: Path = ROOT) -> dict:
    """The plan; a course without `workshop/plan.yml` has no blocks and empty plans."""
    path = root / PLAN_FILE
    if not path.exists():
        return {"blocks": [], "one_day": [], "two_day": []}
    return yaml.safe_load(path.read_text())


def _segments(entry: dict) -> tuple[tuple[str, int], ...]:
    """A block's `segments: [{talk: 5}, {exercises: 10}, ...]`, or the older `minutes: {talk,
    demo, exercises}` read as talk, then demo, then exercises."""
    if "segments" in entry:
        found = tuple((str(k), int(v)) for item in entry["segments"] for k, v in item.items())
    else:
        found = tuple((k, int(entry["minutes"].get(k, 0))) for k in KINDS)
    unknown = {kind for kind, _ in found} - set(KINDS)
    if unknown:
        raise ValueError(f"block {entry.get('id')}: unknown segment kinds {sorted(unknown)}")
    return found


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
            segments=_segments(entry),
            note=str(entry.get("note", "")),
            shown=bool(entry.get("shown", False)),
            notes=dict(entry.get("notes") or {}),
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
        elif "slack" in entry:
            title = str(entry.get("name", "Slack: unplanned, to catch up"))
            slots.append(Slot("slack", title, int(entry["slack"])))
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
            slots.append(
                Slot(
                    "session",
                    str(entry["session"]),
                    int(entry["minutes"]),
                    hands_on=bool(entry.get("hands_on", False)),
                )
            )
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


def listening_stretches(day: list[Slot]) -> list[tuple[int, str]]:
    """(minutes, where it ends) of each stretch of talk and demonstration without a challenge:
    an exercise, a hands-on session, slack (spent on exercises) or a break ends one; a stretch runs
    on across slots (a block's demo and the next block's talk add up)."""
    found, current, start = [], 0, ""
    for slot in day:
        if slot.kind == "break":
            segments: tuple[tuple[str, int], ...] = (("break", 0),)
        else:
            segments = slot.segments
        for kind, minutes in segments:
            if kind in LISTENING:
                start = start or slot.title
                current += minutes
            elif current:
                found.append((current, start))
                current, start = 0, ""
    if current:
        found.append((current, start))
    return found


@dataclass(frozen=True)
class Arithmetic:
    """A day's sums, as `python -m tools.blocks --time` prints them and the tests check them."""

    total: int
    teaching: int
    slack: int
    breaks: tuple[int, ...]
    """Minutes of each break that is not lunch."""
    lunch: int
    longest_between_breaks: int
    longest_listening: int
    longest_listening_at: str
    shown: int
    """Minutes of the blocks shown from the website (the case study)."""


def arithmetic(day: list[Slot]) -> Arithmetic:
    listening = listening_stretches(day) or [(0, "")]
    longest = max(listening, key=lambda item: item[0])
    breaks = [slot for slot in day if slot.kind == "break"]
    return Arithmetic(
        total=sum(slot.minutes for slot in day),
        teaching=sum(slot.minutes for slot in day if slot.kind not in ("break", "slack")),
        slack=sum(slot.minutes for slot in day if slot.kind == "slack"),
        breaks=tuple(s.minutes for s in breaks if s.title.lower() != "lunch"),
        lunch=sum(s.minutes for s in breaks if s.title.lower() == "lunch"),
        longest_between_breaks=max(stretches(day)),
        longest_listening=longest[0],
        longest_listening_at=longest[1],
        shown=sum(s.minutes for s in day if s.block is not None and s.block.shown),
    )


def arithmetic_text(name: str, root: Path = ROOT) -> str:
    """Each day's arithmetic in sentences (what `--time` prints and the pages show)."""
    out = []
    plan_days = days(schedule(name, root))
    for number, day in enumerate(plan_days, start=1):
        sums = arithmetic(day)
        label = f"Day {number}: " if len(plan_days) > 1 else ""
        breaks = ", ".join(f"{m}" for m in sums.breaks) or "none"
        out.append(
            f"{label}{sums.total} minutes in all: {sums.teaching} of teaching, {sums.slack} of "
            f"slack, breaks of {breaks} minutes and a lunch of {sums.lunch}. The longest stretch "
            f"without a break is {sums.longest_between_breaks} minutes; the longest stretch of talk "
            f"and demonstration without a challenge is {sums.longest_listening} minutes (from "
            f"{sums.longest_listening_at})."
            + (f" The case study, shown, takes {sums.shown} minutes." if sums.shown else "")
        )
    return "\n\n".join(out)
