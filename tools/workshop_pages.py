"""The workshop pages' generated parts (`workshop.qmd`, `instructors.qmd`, `prepare.qmd` call these
functions in cells with `output: asis`): the plans, the notebooks, the timings and the hand-outs."""

from __future__ import annotations

import functools
import re
from pathlib import Path

from tools import colab
from tools.block_notebooks import notebook_blocks
from tools.block_timings import load_timings
from tools.book import Book, load_book, page_url
from tools.chapter_structure import load_chapter, section_text
from tools.qmd import cell_options, option_value
from tools.workshop_plan import ROOT, arithmetic_text, blocks, days, schedule


def _clock(minutes: int) -> str:
    return f"{minutes // 60}:{minutes % 60:02d}"


@functools.lru_cache(maxsize=8)
def _book(root: Path) -> Book:
    """The book, read once per page rendering (the pages' cells run in one process)."""
    return load_book(root)


def _duration(minutes: int) -> str:
    return f"{minutes // 60} h" + (f" {minutes % 60:02d} min" if minutes % 60 else "")


def _chapter_link(chapter: str, root: Path = ROOT) -> str:
    page = _book(root).pages.get(f"chapters/{chapter}.qmd")
    title = page.title if page else chapter
    return f"[{title}](chapters/{chapter}.qmd)"


def _refs(ids) -> str:
    return ", ".join(f"@{section_id}" for section_id in ids) or "none"


def segments_text(segments) -> str:
    """A slot's minutes in order, exercises in bold: "talk 5, demo 5, **exercises 10**"."""
    return ", ".join(
        f"**{kind} {minutes}**" if kind == "exercises" else f"{kind} {minutes}"
        for kind, minutes in segments
    )


def plan_markdown(name: str, root: Path = ROOT) -> str:
    """A plan as one Markdown table per day: clock times, each slot's minutes in the order it runs
    them (talk, demo and exercises interleaved), the exercise sections and the notebook; then the
    day's arithmetic (`workshop_plan.arithmetic_text`)."""
    timings = load_timings(root)["blocks"]
    out = []
    sums = arithmetic_text(name, root).split("\n\n")
    for number, day in enumerate(days(schedule(name, root)), start=1):
        if name != "one_day":
            out.append(f"**Day {number}**\n")
        out.append(
            "| Time | Block | Minutes, in order | Exercise sections | Notebook |\n|---|---|---|---|---|"
        )
        clock = 0
        for slot in day:
            when = f"{_clock(clock)}\u2013{_clock(clock + slot.minutes)}"
            clock += slot.minutes
            if slot.kind == "break":
                out.append(f"| {when} | *{slot.title}* | {slot.minutes} | | |")
            elif slot.kind == "slack":
                out.append(f"| {when} | *{slot.title}* | {slot.minutes} | | |")
            elif slot.kind == "session":
                out.append(f"| {when} | {slot.title} | {segments_text(slot.segments)} | | |")
            elif slot.kind == "chapter":
                chapter = load_chapter(slot.chapter, root)
                exercises = [s.id for s in chapter.sections if s.title.startswith("Exercise")]
                numbered = [s for s in exercises if chapter.section(s).level > 2][:2]
                out.append(
                    f"| {when} | {slot.title}, from {_chapter_link(slot.chapter, root)} | "
                    f"{slot.minutes} (talk, demonstration and exercises, not split) | "
                    f"{_refs(numbered or exercises)} | `student/{slot.chapter}.ipynb` |"
                )
            else:
                block = slot.block
                more = " (the last: the chapter's other exercises)" if slot.extra else ""
                ran = timings.get(block.id, {}).get("student_notebook_s")
                notebook = "shown from the website" if block.shown else f"`{block.notebook(True)}`"
                if ran is not None:
                    notebook += f", runs in {ran:.0f} s"
                out.append(
                    f"| {when} | {block.title} ({_chapter_link(block.chapter, root)}) | "
                    f"{segments_text(slot.segments)}{more} | "
                    f"{_refs(block.exercises)} | {notebook} |"
                )
        out.append(f"\n{sums[number - 1]}\n")
    return "\n".join(out)


def exercise_count(name: str, root: Path = ROOT) -> int:
    """How many exercises a plan's blocks assign (a chapter slot's exercises not counted)."""
    return sum(len(s.block.exercises) for s in schedule(name, root) if s.kind == "block")


def notebooks_markdown(root: Path = ROOT) -> str:
    """Each block's notebooks: the exercise notebook on Colab, and both in the repository."""
    book = _book(root)
    out = []
    for block in blocks(root):
        if block.shown:
            url = page_url(block.page, site=book.site)
            out.append(f"- **{block.title}**: no notebook; shown from [the website]({url}).")
            continue
        out.append(
            f"- **{block.title}**: "
            f"{colab.colab_link(block.notebook(), f'open `{block.notebook(True)}` in Colab', book.repository)}. "
            f"On a laptop: `notebooks/{block.notebook(True)}` (exercises) and "
            f"`notebooks/{block.notebook(False)}` (with solutions). "
            f"Exercises: {_refs(block.exercises)}."
        )
    return "\n".join(out)


def exercise_sections_markdown(root: Path = ROOT) -> str:
    """Every chapter's exercise section, in book order, as cross-references."""
    from tools.qmd import listed_pages

    found = []
    for page in listed_pages(root):
        if not page.startswith("chapters/"):
            continue
        chapter = load_chapter(Path(page).stem, root)
        found += [s.id for s in chapter.sections if s.level == 2 and s.title.startswith("Exercise")]
    return _refs(found)


def cache_markdown(root: Path = ROOT) -> str:
    """The measured effect of a warmed compilation cache: each solution notebook's time from
    top to bottom with an empty cache, and again once the first run has filled it."""
    timings = load_timings(root)
    rows = [
        f"| {block.title} | {entry['cold_cache_solution_notebook_s']:.1f} s | "
        f"{entry['warm_cache_solution_notebook_s']:.1f} s |"
        for block in notebook_blocks(root)
        if "warm_cache_solution_notebook_s" in (entry := timings["blocks"].get(block.id, {}))
    ]
    if not rows:
        return "(No timings yet: run `python -m tools.blocks --measure`.)"
    return "\n".join(
        [
            f"Measured with {timings['machine']}:\n",
            "| Block notebook (with solutions) | Empty cache | Warmed cache |",
            "|---|---|---|",
            *rows,
        ]
    )


def _lead_and_list(text: str) -> str:
    """A section's first paragraph and the list after it ("After this chapter you can: - ...")."""
    kept, in_list = [], False
    for line in text.split("\n"):
        item = line.lstrip().startswith(("- ", "* ", "1. "))
        in_list = in_list or item
        if in_list and not line.strip():
            break
        if in_list and not (item or line.startswith(" ")):
            break
        kept.append(line)
    return "\n".join(kept).strip("\n")


def summaries_markdown(root: Path = ROOT) -> str:
    """One printable page per block: its chapter's learning objectives and summary."""
    out = []
    for block in blocks(root):
        chapter = load_chapter(block.chapter, root)
        ids = {s.id for s in chapter.sections}
        objectives = next((i for i in ids if i.endswith("-objectives")), None)
        summary = next((i for i in ids if i.endswith("-summary")), None)
        out.append('<div style="page-break-before: always;"></div>\n')
        out.append(f"### {block.title} {{.unnumbered}}\n")
        out.append(f"*From {_chapter_link(block.chapter, root)}.*\n")
        if objectives:
            text = _lead_and_list(section_text(block.chapter, objectives, root))
            out.append("**Learning objectives.** " + text)
        if summary:
            out.append("\n**Summary.**\n\n" + section_text(block.chapter, summary, root))
        out.append("")
    return "\n".join(out)


ASIS_CHUNK = re.compile(
    r"^```\{python\}\n((?:#\|[^\n]*\n)*)(.*?)^```[ \t]*$", re.MULTILINE | re.DOTALL
)


def render_asis(text: str) -> str:
    """A page's text with each Python chunk marked `output: asis` replaced by what it prints, as
    Quarto does when it renders the page: the local site (`tools.site`) shows pages that are not
    notebooks without running them, so their generated lists are made here. The chunks must
    only print Markdown (they call the functions of this module); they run in one namespace,
    in order, as in the page's kernel."""
    import contextlib
    import io

    namespace = {"__name__": "__asis__"}

    def run(match: re.Match) -> str:
        options = cell_options(match.group(1).split("\n"))
        if option_value(options, "output").lower() != "asis":
            return match.group(0)
        printed = io.StringIO()
        with contextlib.redirect_stdout(printed):
            exec(compile(match.group(2), "<asis cell>", "exec"), namespace)
        return printed.getvalue().rstrip("\n")

    return ASIS_CHUNK.sub(run, text)
