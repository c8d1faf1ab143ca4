"""What a learner receives, checked as it is generated (issue 33.3): every notebook, chapter and
block, with and without solutions, and every hint and checker message of the package.

- No Quarto syntax reaches a learner: not in a Markdown cell, not in a code cell (a stub's comment,
  a string a hidden cell shows as Markdown), not in a hint, a stored solution or a checker message.
- Every name a code cell reads is defined by a cell above it, imported, or a builtin; a name that
  only a solution defines counts as undefined in every cell that is not a solution. A Markdown
  cell that names a function of the chapter (`power_unrolled`) finds it defined in the notebook.
- A block names each exercise by its chapter's numbers ("Exercise 1.3"), as its checker does.
- A block's exercise needs only what the plan has shown by then: each exercise declares, in
  `workshop/plan.yml`, the JAX functions its reference solution calls; the declaration matches the
  solution's code, and each one appears in a cell of that block or of an earlier one; the sections
  its prompt points to are shown by then, or declared as reading.
- A reference solution runs without a warning: a checker records the warnings an answer raises,
  and CI's run of every solution notebook fails on one; a quoted error is cut at a word.
"""

from __future__ import annotations

import ast
import builtins
import re
import warnings
from pathlib import Path

import nbformat
import pytest

from jaxcourse import checks, ladder
from jaxcourse.exercises import all_checkers
from tools import blocks, chapter_notebooks
from tools.book import load_book
from tools.quarto_leftovers import LEFTOVER_PATTERNS, leftover_syntax

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "src" / "jaxcourse"
CHAPTERS = [path.stem for path in chapter_notebooks.chapter_paths(ROOT)]
BLOCKS = blocks.notebook_blocks(ROOT)
NAMES = [
    *[f"{chapter}.ipynb" for chapter in CHAPTERS],
    *[f"student/{chapter}.ipynb" for chapter in CHAPTERS],
    *[block.notebook(False) for block in BLOCKS],
    *[block.notebook(True) for block in BLOCKS],
]
"""Every notebook the course generates, by its path below `notebooks/`."""

pytestmark = pytest.mark.slow  # generating every notebook takes a few seconds


@pytest.fixture(scope="module")
def book():
    return load_book(ROOT)


@pytest.fixture(scope="module")
def generated() -> dict[str, nbformat.NotebookNode]:
    """{path below notebooks/: the notebook as `python -m tools.notebooks` writes it now}."""
    texts = {**chapter_notebooks._expected(ROOT), **blocks.expected(ROOT)}
    folder = ROOT / "notebooks"
    return {
        path.relative_to(folder).as_posix(): nbformat.reads(text, as_version=4)
        for path, text in texts.items()
    }


def test_every_generated_notebook_is_checked(generated):
    assert sorted(generated) == sorted(NAMES)


def student_of(name: str) -> str:
    """The exercise notebook that goes with a notebook (itself, for an exercise notebook)."""
    if "student/" in name:
        return name
    folder, _, file = name.rpartition("/")
    return f"{folder + '/' if folder else ''}student/{file}"


def chapter_of(name: str) -> str:
    stem = Path(name).stem
    if name.startswith(f"{blocks.BLOCKS_DIR}/"):
        return next(block.chapter for block in BLOCKS if block.id == stem)
    return stem


# --- Quarto syntax ----------------------------------------------------------------------------


@pytest.mark.parametrize("name", NAMES)
def test_no_quarto_syntax_in_any_cell(name, generated, book):
    """Markdown cells and code cells alike: a stub's comment, a string shown as Markdown."""
    assert leftover_syntax(generated[name], set(book.references)) == []


def test_a_cross_reference_in_code_becomes_the_number_and_the_address(book):
    """In a comment, plain words and the address; in a string (Markdown a hidden cell shows), a link."""
    from tools.quarto_markdown import ChapterConverter

    converter = ChapterConverter(book, book.pages["chapters/profiling.qmd"])
    url = f"{book.site}chapters/jit.html#sec-jit-async"
    words = book.targets["sec-jit-async"].text  # "Section 2.8", numbered as the book is
    assert re.fullmatch(r"Section \d+\.\d+", words)
    code = 'x = 1  # see @sec-jit-async\nMarkdown(f"dispatch (@sec-jit-async) took {x} s")'
    assert converter.code(code) == (
        f'x = 1  # see {words} ({url})\nMarkdown(f"dispatch ([{words}]({url})) took {{x}} s")'
    )
    assert converter.code("%%timeit\n# @sec-jit-async") == f"%%timeit\n# {words} ({url})"


CROSS_REFERENCE = re.compile(r"(?<![\w/.])-?@(?:sec|fig|tbl|eq|lst)-[\w-]|\{\{<|>\}\}|^:::", re.M)


def _package_strings() -> list[tuple[str, str]]:
    """(where, text) for every string literal in the package's source, f-strings' parts included."""
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                found.append((f"{path.relative_to(ROOT)}:{node.lineno}", node.value))
    return found


def test_no_hint_solution_or_message_carries_quarto_syntax():
    """What the checkers say (hints, stored solutions, the strings their messages are made of)
    reaches the learner as it is written: it cannot hold a cross-reference."""
    said = []
    for name, checker in sorted(all_checkers().items()):
        said += [(f"{name}.hint({n})", str(ladder.hint(checker, n))) for n in (1, 2, 3)]
        said.append((f"{name}.solution()", str(ladder.solution(checker))))
    said += _package_strings()
    assert len(said) > 1000
    leftovers = [(where, text[:80]) for where, text in said if CROSS_REFERENCE.search(text)]
    assert leftovers == []


# --- names: defined before they are read ------------------------------------------------------


def _solution_only(name: str, generated) -> set[str]:
    """Sources of the code cells of a solution notebook that its exercise notebook lacks."""
    student = {c.source for c in generated[student_of(name)].cells if c.cell_type == "code"}
    return {
        c.source for c in generated[name].cells if c.cell_type == "code" and c.source not in student
    }


@pytest.mark.parametrize("name", NAMES)
def test_every_name_a_cell_reads_is_defined_above_it(name, generated):
    """Top to bottom, each code cell reads only names that cells above it (or itself) define,
    imports or builtins; a solution's definitions do not count for the cells that are not
    solutions (a learner without the solution would meet an undefined name)."""
    solutions = _solution_only(name, generated)
    everyone = set(dir(builtins)) | blocks.IGNORED
    with_solutions = set(everyone)
    undefined = []
    for number, cell in enumerate(generated[name].cells):
        if cell.cell_type != "code":
            continue
        free, defined = blocks.names(cell.source)
        is_solution = cell.source in solutions
        missing = free - (with_solutions if is_solution else everyone)
        undefined += [f"cell {number}: {sorted(missing)}"] if missing else []
        with_solutions |= defined
        if not is_solution:
            everyone |= defined
    assert undefined == []


INLINE_NAME = re.compile(r"`([A-Za-z_]\w*)(?:\([^`]*\))?`")


@pytest.fixture(scope="module")
def chapter_functions() -> dict[str, set[str]]:
    """{chapter: the functions and classes its code cells define at the top level}."""
    found = {}
    for chapter in CHAPTERS:
        names = set()
        for chunk in blocks.load_chapter(chapter, ROOT).chunks:
            try:
                tree = ast.parse(chunk.code)
            except SyntaxError:
                continue
            names |= {
                node.name
                for node in tree.body
                if isinstance(node, (ast.FunctionDef, ast.ClassDef, ast.AsyncFunctionDef))
            }
        found[chapter] = names
    return found


def _parameters(code: str) -> set[str]:
    try:
        tree = ast.parse(code)
    except SyntaxError:
        return set()
    return {
        a.arg
        for node in ast.walk(tree)
        if isinstance(node, ast.arguments)
        for a in (*node.posonlyargs, *node.args, *node.kwonlyargs)
    }


@pytest.mark.parametrize("name", NAMES)
def test_the_text_names_no_function_of_the_chapter_that_the_notebook_lacks(
    name, generated, chapter_functions
):
    """A block that says "here is the power function again" above a cell that reads
    `power_unrolled` must have defined it: a function of the chapter named in a Markdown cell
    is defined by a code cell of the notebook (a solution's, only in a solution notebook)."""
    defined = set()  # what the code cells define, and their functions' parameters
    for cell in generated[name].cells:
        if cell.cell_type == "code":
            defined |= blocks.names(cell.source)[1] | _parameters(cell.source)
    named = set()
    for cell in generated[name].cells:
        if cell.cell_type == "markdown":
            text = re.sub(
                r"^\s*(?:>\s*)*```.*?^\s*(?:>\s*)*```", "", cell.source, flags=re.M | re.S
            )
            named |= set(INLINE_NAME.findall(text))
    assert sorted(named & chapter_functions[chapter_of(name)] - defined) == []


# --- a block's exercises: their names ---------------------------------------------------------

EXERCISE_HEADING = re.compile(r"^#+ (?:[\d.]+ )?(Exercise [\w.]+):", re.MULTILINE)


@pytest.mark.parametrize("block", BLOCKS, ids=lambda b: b.id)
def test_a_block_names_each_exercise_by_its_chapter_number(block, generated, book):
    """Exercise 3 of chapter 1 is "Exercise 1.3" in the block, wherever the block's exercises
    start: the numbers never have gaps to explain, and match the chapter and the checker."""
    prefix = book.pages[block.page].prefix
    chapter = blocks.load_chapter(block.chapter, ROOT)
    expected = [
        f"Exercise {prefix}.{chapter.section(e).title.split()[1].rstrip(':')}"
        for e in block.exercises
    ]
    for student in (False, True):
        notebook = generated[block.notebook(student)]
        text = "\n".join(c.source for c in notebook.cells if c.cell_type == "markdown")
        assert EXERCISE_HEADING.findall(text) == expected
    checkers = all_checkers()
    for exercise, label in zip(block.exercises, expected, strict=True):
        checker = blocks._checker_of(chapter, exercise)
        found = next(c for n, c in checkers.items() if n.endswith(f".{checker}"))
        said = ladder.exercise_name(found)  # "Exercise 3 (...)", from the chapter's heading
        assert said.startswith(f"Exercise {label.split('.')[-1]} ("), said


# --- a block's exercises: what they use -------------------------------------------------------


def _block_exercises():
    return [(block, exercise) for block in BLOCKS for exercise in block.exercises]


@pytest.mark.parametrize(
    "block,exercise",
    _block_exercises(),
    ids=lambda x: getattr(x, "id", x) if not isinstance(x, str) else x,
)
def test_an_exercise_declares_the_jax_functions_its_solution_calls(block, exercise):
    """The declaration in workshop/plan.yml is the reference solution's own calls, so it cannot
    go stale: change the solution and this test names the new function."""
    declared = block.uses.get(exercise)
    assert declared is not None, f"workshop/plan.yml: declare what {exercise} uses"
    calls = set()
    for code in blocks.solution_sources(block, ROOT)[exercise]:
        calls |= blocks.jax_calls(code)
    assert sorted(declared) == sorted(calls)


@pytest.mark.parametrize("plan", ["one_day", "two_day"])
def test_an_exercise_needs_only_what_its_block_or_an_earlier_one_shows(plan, generated):
    """Each JAX function an exercise's solution calls appears in a code cell of the block's
    exercise notebook or of a notebook the plan runs before it (a `jnp` function the plan lists
    as assumed NumPy excepted), and each section its prompt points to is shown by then or declared
    as reading (`tools.block_prerequisites`; tests/test_workshop.py shows it catches the review's
    three cases)."""
    assert [str(gap) for gap in blocks.untaught(plan, ROOT, generated)] == []


# --- reference solutions run without a warning -----------------------------------------------


def test_a_warning_raised_while_an_answer_is_checked_is_recorded_and_said(monkeypatch):
    """A correct answer that warns still passes, and its verdict says the warning changes nothing;
    with verdicts enforced (CI runs every solution notebook so, chapters and blocks), a reference
    solution that warns fails its notebook's summary: warnings are errors around each solution."""

    @checks.exercise_checker()
    def check_demo(answer):
        checks.require(answer() == 1, "return 1")

    def warns():
        warnings.warn("a float64 value will be truncated", UserWarning, stacklevel=1)
        return 1

    def stub():
        raise NotImplementedError

    monkeypatch.setattr(checks, "_VERDICTS", [])  # this test's verdicts only
    assert not check_demo(stub)  # as in a notebook: the stub first, then the answer
    with pytest.warns(UserWarning, match="truncated"):  # the learner still sees it
        verdict = check_demo(warns)
    assert verdict and "does not change this verdict" in verdict.message
    assert verdict.warned == ("UserWarning: a float64 value will be truncated",)
    monkeypatch.setenv(checks.ENFORCE_ENV, "1")
    with pytest.raises(AssertionError, match="raised warnings"):
        checks.exercise_summary(expect="passed")
    assert check_demo(lambda: 1) and checks.exercise_summary(expect="passed")


# --- quoted errors are cut at a word ----------------------------------------------------------

LONG_ERROR = (
    "Argument types differ from the types for which this computation was compiled. Perhaps you "
    "are calling the compiled executable with a different enable_x64 mode than when it was "
    "compiled? The mismatches are: Argument 'x' compiled with float32[4] and called with int32[4]"
)


@pytest.mark.parametrize("limit", [40, 100, 101, 150, 200])
def test_a_quoted_error_is_cut_at_a_sentence_or_a_word_with_an_ellipsis(limit):
    short = checks.shorten(LONG_ERROR, limit)
    assert short.endswith("\u2026") and len(short) <= limit + 1
    kept = short.removesuffix("\u2026")
    assert LONG_ERROR.startswith(kept)
    assert LONG_ERROR[len(kept)] in " ,;:", f"cut inside a word: {short!r}"


def test_a_short_error_is_kept_whole_and_a_sentence_end_is_preferred():
    assert checks.shorten("Boom.", 100) == "Boom."
    assert checks.shorten("A first sentence. And a much longer second one follows here", 30) == (
        "A first sentence.\u2026"
    )
    assert checks.shorten("x" * 50, 10) == "x" * 10 + "\u2026", "one long word is cut in it"


def test_the_jit_aot_checker_quotes_jax_error_without_cutting_a_word():
    """The newcomer's answer, a dict keyed on the shape alone, met JAX's TypeError for int32."""
    import jax
    import jax.numpy as jnp

    from jaxcourse.exercises.jit import check_precompile

    def precompile(fn, shapes, dtype):
        compiled = {
            tuple(s): jax.jit(fn).lower(jax.ShapeDtypeStruct(s, dtype)).compile() for s in shapes
        }

        def serve(x):
            if tuple(x.shape) not in compiled:
                raise ValueError(f"no executable for shape {x.shape}")
            return compiled[tuple(x.shape)](x)

        return serve

    verdict = check_precompile(precompile)
    assert not verdict and "Argument types differ" in verdict.message, verdict.message
    assert "callin." not in verdict.message and "\u2026" in verdict.message
    del jnp


def test_no_checker_cuts_a_message_by_slicing():
    """Every quoted error goes through `checks.shorten`: no `str(error)[:n]` or `message[:n]`."""
    sliced = []
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if (
                isinstance(node, ast.Subscript)
                and isinstance(node.slice, ast.Slice)
                and node.slice.lower is None
                and isinstance(node.slice.upper, ast.Constant)
                and re.search(r"str\(|message|error", ast.unparse(node.value))
            ):
                sliced.append(f"{path.relative_to(ROOT)}:{node.lineno}: {ast.unparse(node)}")
    assert sliced == []


def test_leftover_patterns_in_code_include_cross_references():
    notebook = nbformat.v4.new_notebook(
        cells=[nbformat.v4.new_code_cell("raise NotImplementedError  # your code (@sec-x-y)")]
    )
    assert "cell 0: cross-reference" in leftover_syntax(notebook, set())
    assert "cross-reference" in LEFTOVER_PATTERNS
