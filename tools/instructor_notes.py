"""Instructor notes per block, generated with the block: the plan's hand-written notes (key
points, a "predict the output" question, what to cut when late, an extension, the debrief) and what
is derived (the live-coding script from the block's demonstrated cells, the two mistakes from the
checkers' wrong-answer tests, the clock checkpoints from the one-day schedule); then what to
demonstrate and skip, the measured timings, and every wrong answer the tests pin."""

from __future__ import annotations

from pathlib import Path

from tools.block_timings import load_timings
from tools.chapter_structure import Chapter, load_chapter
from tools.workshop_pages import _chapter_link, _clock, _refs, segments_text
from tools.workshop_plan import ROOT, Block, blocks, days, schedule
from tools.wrong_answers import WrongAnswer, _checker_of, wrong_answers

START = 9 * 60
"""The clock time the checkpoints assume the day starts at (9:00)."""


def demo_cells(block: Block, chapter: Chapter) -> list[str]:
    """The code of the cells the block demonstrates, in chapter order: the live-coding script
    (solutions, hints and the cells brought along to define names are not typed live)."""
    ranges = []
    for item in block.demonstrate:
        if item.startswith("sec-"):
            section = chapter.section(item)
            ranges.append((section.start, section.end))
        else:
            ranges += [(c.start, c.end + 1) for c in chapter.chunks if c.label == item]
    return [
        chunk.code
        for chunk in chapter.chunks
        if not chunk.in_div and chunk.code and any(a <= chunk.start < b for a, b in ranges)
    ]


def chosen_mistakes(block: Block, chapter: Chapter, root: Path = ROOT) -> list[WrongAnswer]:
    """The two mistakes to warn about: the wrong answers whose hints the plan's `notes: mistakes`
    name (a fragment each), else the first two the tests describe in words."""
    found = [
        w
        for exercise in block.exercises
        for w in wrong_answers(_checker_of(chapter, exercise) or "", root)
    ]
    wanted = block.notes.get("mistakes") or []
    if wanted:
        return [
            next(w for w in found if w.hint == hint)
            for hint in wanted
            if any(w.hint == hint for w in found)
        ]
    return [w for w in found if w.doc][:2]


def checkpoints(block: Block, root: Path = ROOT, plan: str = "one_day") -> str:
    """The block's clock in the one-day plan: when it starts, when each exercise starts, when it
    ends and what follows (on a 9:00 start)."""
    (day,) = days(schedule(plan, root))[:1]
    clock = 0
    for index, slot in enumerate(day):
        if slot.block is not None and slot.block.id == block.id:
            times, minute = [], clock
            for kind, minutes in slot.segments:
                if kind == "exercises":
                    times.append(_clock(START + minute))
                minute += minutes
            after = (
                f"\u201c{day[index + 1].title}\u201d" if index + 1 < len(day) else "the day's end"
            )
            typing = f"; the room types at {', '.join(times)}" if times else ""
            return (
                f"starts at {_clock(START + clock)}{typing}; by {_clock(START + clock + slot.minutes)} "
                f"it is over and {after} begins"
            )
        clock += slot.minutes
    return "not in the one-day plan"


def _fence(code: str, language: str = "python") -> list[str]:
    """A code block indented into a list item."""
    lines = code.strip("\n").split("\n")
    return [f"    ```{language}", *(f"    {line}" if line else "" for line in lines), "    ```"]


def notes_markdown(block: Block, chapter: Chapter, root: Path = ROOT) -> list[str]:
    """A block's teaching notes, as Markdown lines."""
    notes = block.notes
    out = [f"- **Clock** (one-day plan, 9:00 start): {checkpoints(block, root)}."]
    out.append(f"- **Minutes, in order**: {segments_text(block.segments)}.")
    out.append("- **Key points**:")
    out += [f"    {n}. {point}" for n, point in enumerate(notes.get("key_points") or [], 1)]
    script = [] if block.shown else demo_cells(block, chapter)  # a shown block is not typed
    if script:
        out.append(
            f"- **Live-coding script**: the {len(script)} cells the block demonstrates, in the "
            "callout below; type them, do not paste, and run each before the next."
        )
    predict = notes.get("predict") or {}
    if predict:
        out += [f"- **Predict the output** (ask the room): {predict['question']}", ""]
        out += _fence(predict["code"])
        printed = str(predict["output"]).strip()
        if "\n" in printed:
            out += ["", "    It prints", "", *_fence(printed, "text")]
            out += ["", f"    {predict['why'][0].upper()}{predict['why'][1:]}", ""]
        else:
            out += ["", f"    It prints `{printed}`: {predict['why']}", ""]
    mistakes = chosen_mistakes(block, chapter, root)
    if mistakes:
        out.append("- **The two mistakes to expect** (from the checkers' wrong-answer tests):")
        out += [f"    - {w.markdown()}" for w in mistakes]
    if notes.get("cut"):
        out.append(f"- **When late, cut**: {notes['cut']}")
    if notes.get("extension"):
        out.append(f"- **For those who finish early**: @{notes['extension']}.")
    if notes.get("debrief"):
        out.append(f"- **Debrief**: {notes['debrief']}")
        shown = next((w for w in mistakes if w.code), None)
        if shown:
            out += ["", "    The wrong answer to show the room:", "", *_fence(shown.code), ""]
    if script:
        out += [
            "",
            '::: {.callout-note collapse="true"}',
            f"## Live-coding script: {block.title}",
            "",
        ]
        for n, code in enumerate(script, 1):
            out += [f"Cell {n}:", "", "```python", code, "```", ""]
        out += [":::", ""]
    return out


def skipped(block: Block, chapter: Chapter) -> tuple[list[str], list[str]]:
    """(the chapter's sections the block skips, the chapter's other exercises)."""
    shown = [s for s in block.demonstrate if s.startswith("sec-")]
    tops = {chapter.top_section(chapter.section(s)).id for s in (*shown, *block.exercises)}
    chosen = {*shown, *block.exercises}
    exercise_tops = {
        s.id for s in chapter.sections if s.level == 2 and s.title.startswith("Exercise")
    }
    skip, others = [], []
    for s in chapter.sections:
        top = chapter.top_section(s).id
        if s.id in chosen or s.id.endswith(
            ("-objectives", "-summary", "-further-reading", "-further", "-reading")
        ):
            continue
        if top in exercise_tops:
            if s.level > 2:
                others.append(s.id)
        elif s.level == 2 and s.id not in tops:
            skip.append(s.id)
        elif s.level > 2 and top in tops and s.id not in tops:
            skip.append(s.id)  # a part of a section the block shows only in part
    return skip, others


def _timings(block: Block, timings: dict) -> str:
    measured = timings["blocks"].get(block.id)
    if block.shown:
        return "- **Timings**: none; nothing runs live."
    if not measured:
        return "- **Timings**: not measured yet (`python -m tools.blocks --measure`)."
    solutions = ", ".join(
        f"@{exercise} {measured['solutions_s'][exercise]:.1f} s"
        for exercise in block.exercises
        if exercise in measured["solutions_s"]
    )
    return (
        f"- **Timings** (measured with {timings['machine']}): the exercise notebook runs top to "
        f"bottom in {measured['student_notebook_s']:.0f} s, the solution notebook in "
        f"{measured['solution_notebook_s']:.0f} s (warmed: "
        f"{measured.get('warm_cache_solution_notebook_s', float('nan')):.0f} s); reference "
        f"solutions, checker included: {solutions}."
    )


def instructor_blocks_markdown(root: Path = ROOT) -> str:
    """Per block: the teaching notes (`notes_markdown`), what to demonstrate and what to skip,
    the measured timings, and every wrong answer the checkers' tests pin, in words."""
    timings = load_timings(root)
    tests_here = (root / "tests").is_dir()
    out = []
    for block in blocks(root):
        chapter = load_chapter(block.chapter, root)
        skip, others = skipped(block, chapter)
        minutes = block.minutes
        out.append(f"### {block.title}\n")
        out.append(
            f"From {_chapter_link(block.chapter, root)}; {block.total} minutes: "
            f"{minutes['talk']} talk, {minutes['demo']} demonstration, "
            f"{minutes['exercises']} exercises. {block.note}\n"
        )
        out += notes_markdown(block, chapter, root) if tests_here else []
        out.append(f"- **Demonstrate**: {_refs(block.demonstrate)}.")
        out.append(f"- **Skip** (reading for later): {_refs(skip)}.")
        if others:
            out.append(f"- **The chapter's other exercises** (homework): {_refs(others)}.")
        out.append(_timings(block, timings))
        for exercise in block.exercises:
            checker = _checker_of(chapter, exercise)
            uses = ", ".join(f"`{name}`" for name in block.uses.get(exercise, ()))
            out.append(f"- **What @{exercise} uses**: {uses or 'no JAX function'}.")
            out.append(f"- **Every wrong answer the tests feed @{exercise}** (`{checker}`):")
            found = wrong_answers(checker, root) if tests_here and checker else []
            if not found:
                out.append("    - (the course's tests, which list them, are not in this copy)")
            out += [f"    - {w.markdown()}" for w in found]
        out.append("")
    return "\n".join(out)
