"""Instructor notes per block: what to demonstrate and skip, timings, and where people get stuck,
read from the checkers' wrong-answer tests."""

from __future__ import annotations

import ast
import functools
import re
from pathlib import Path

from tools.block_timings import load_timings
from tools.chapter_structure import Chapter, load_chapter
from tools.workshop_pages import _chapter_link, _refs
from tools.workshop_plan import ROOT, blocks


def _checker_of(chapter: Chapter, section_id: str) -> str | None:
    """The checker an exercise section calls (its last call)."""
    section = chapter.section(section_id)
    calls = []
    for chunk in chapter.chunks:
        if section.start < chunk.start < section.end:
            calls += re.findall(r"(?<![\w.])(?:\w+\.)?(check_\w+)\(", chunk.code)
    return calls[-1] if calls else None


def _what(node: ast.AST | None, fallback: str) -> str:
    """The first paragraph of a function's docstring, or its name in words."""
    doc = ast.get_docstring(node) if node is not None else None
    text = (doc or fallback.removeprefix("test_").replace("_", " ")).split("\n\n")[0]
    return " ".join(text.split()).rstrip(".")


def _strings(node: ast.AST) -> list[str]:
    return [
        n.value
        for n in ast.walk(node)
        if isinstance(n, ast.Constant) and isinstance(n.value, str) and n.value.strip()
    ]


def _fragments(node: ast.AST) -> list[str]:
    """Hint fragments a test asserts: `"..." in verdict.message`, or the last string argument
    of an `assert...` helper."""
    found = []
    for n in ast.walk(node):
        if (
            isinstance(n, ast.Compare)
            and isinstance(n.ops[0], ast.In)
            and isinstance(n.left, ast.Constant)
            and isinstance(n.left.value, str)
        ):
            found.append(n.left.value)
        elif isinstance(n, ast.Call) and getattr(n.func, "id", "").startswith("assert"):
            strings = [
                a.value for a in n.args if isinstance(a, ast.Constant) and isinstance(a.value, str)
            ]
            found += strings[-1:]
    return [f for f in found if f.strip() and "no answer yet" not in f]


def _parametrized(node: ast.FunctionDef, functions: dict) -> list[tuple[str, str]]:
    """(wrong answer, hint) pairs of a test parametrised over wrong answers and hints."""
    pairs = []
    for decorator in node.decorator_list:
        if not (isinstance(decorator, ast.Call) and "parametrize" in ast.unparse(decorator.func)):
            continue
        if len(decorator.args) < 2 or not isinstance(decorator.args[1], (ast.List, ast.Tuple)):
            continue
        ids = next((k.value for k in decorator.keywords if k.arg == "ids"), None)
        labels = [i.value for i in ids.elts] if isinstance(ids, ast.List) else []
        for index, case in enumerate(decorator.args[1].elts):
            items = case.elts if isinstance(case, ast.Tuple) else getattr(case, "args", [])
            hints = [
                i.value for i in items if isinstance(i, ast.Constant) and isinstance(i.value, str)
            ]
            answer = next((i for i in items if isinstance(i, (ast.Name, ast.Lambda))), None)
            if answer is None or not hints:
                continue
            if isinstance(answer, ast.Name):
                what = _what(functions.get(answer.id), answer.id)
            else:
                label = labels[index] if index < len(labels) else ""
                what = f"{label.replace('-', ' ')}: `{ast.unparse(answer.body)}`".lstrip(": ")
            pairs.append((what, hints[-1]))
    return pairs


@functools.lru_cache(maxsize=64)
def _parsed(path: Path) -> ast.Module:
    return ast.parse(path.read_text())


def stuck_points(checker: str, root: Path = ROOT) -> list[tuple[str, str]]:
    """(the wrong answer, the fragment its hint must contain) for each wrong-answer test of
    `checker` in tests/test_*exercises*.py: where people get stuck, as the tests pin it.

    A test parametrised over (wrong answer, hint) pairs gives one pair per case, described by the
    wrong answer's docstring (or the case's id and code); any other test that calls the checker
    and asserts a hint fragment gives one pair, described by its docstring (or its name)."""
    found: list[tuple[str, str]] = []
    for path in sorted((root / "tests").glob("test_*exercises*.py")):
        tree = _parsed(path)
        functions = {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef)}
        for node in functions.values():
            if not node.name.startswith("test_") or not re.search(
                rf"\b{checker}\b", ast.unparse(node)
            ):
                continue
            pairs = _parametrized(node, functions)
            if not pairs and _fragments(node):
                pairs = [(_what(node, node.name), _fragments(node)[0])]
            found += [
                pair for pair in pairs if "no answer yet" not in pair[1] and pair not in found
            ]
    return found


def instructor_blocks_markdown(root: Path = ROOT) -> str:
    """Per block: what to demonstrate and what to skip, the plan's note, the measured timings,
    and where people get stuck (from the checkers' wrong-answer tests)."""
    timings = load_timings(root)
    tests_here = (root / "tests").is_dir()
    out = []
    for block in blocks(root):
        chapter = load_chapter(block.chapter, root)
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
        minutes = block.minutes
        out.append(f"### {block.title}\n")
        out.append(
            f"From {_chapter_link(block.chapter, root)}; {block.total} minutes: "
            f"{minutes['talk']} talk, {minutes['demo']} demonstration, "
            f"{minutes['exercises']} exercises. {block.note}\n"
        )
        out.append(f"- **Demonstrate**: {_refs(block.demonstrate)}.")
        out.append(f"- **Skip** (reading for later): {_refs(skip)}.")
        if others:
            out.append(f"- **The chapter's other exercises** (homework): {_refs(others)}.")
        measured = timings["blocks"].get(block.id)
        if block.shown:
            out.append("- **Timings**: none; nothing runs live.")
        elif measured:
            solutions = ", ".join(
                f"@{exercise} {measured['solutions_s'][exercise]:.1f} s"
                for exercise in block.exercises
                if exercise in measured["solutions_s"]
            )
            out.append(
                f"- **Timings** (measured with {timings['machine']}): the exercise notebook runs top to bottom "
                f"in {measured['student_notebook_s']:.0f} s, the solution notebook in "
                f"{measured['solution_notebook_s']:.0f} s (warmed: "
                f"{measured.get('warm_cache_solution_notebook_s', float('nan')):.0f} s); reference "
                f"solutions, checker included: {solutions}."
            )
        for exercise in block.exercises:
            checker = _checker_of(chapter, exercise)
            uses = ", ".join(f"`{name}`" for name in block.uses.get(exercise, ()))
            out.append(f"- **What @{exercise} uses**: {uses or 'no JAX function'}.")
            out.append(f"- **Where people get stuck in @{exercise}** (`{checker}`):")
            points = stuck_points(checker, root) if tests_here and checker else []
            if not points:
                out.append("    - (the course's tests, which list them, are not in this copy)")
            for what, hint in points:
                out.append(f"    - {what}: the hint says \u201c{hint}\u201d.")
        out.append("")
    return "\n".join(out)
