"""The workshop (issue 28): the plan in `workshop/plan.yml` fits its days and names sections that
exist; each block notebook, generated from its chapter, runs on its own (every name a cell reads
is defined above it); the sync check catches a stale block notebook; the pages' generated lists
point at real sections and notebooks. Executing the block notebooks is nbmake's job (they sit
under `notebooks/`)."""

from __future__ import annotations

import builtins
import re
import shutil
from pathlib import Path

import pytest
import yaml

from tools import blocks, colab
from tools.book import load_book
from tools.quarto_markdown import leftover_syntax

ROOT = Path(__file__).resolve().parents[1]
BLOCKS = blocks.blocks(ROOT)
NOTEBOOK_BLOCKS = blocks.notebook_blocks(ROOT)


@pytest.fixture(scope="module")
def book():
    return load_book(ROOT)


@pytest.fixture(scope="module")
def notebooks(book):
    """{(block id, student): the block's notebook, generated now}."""
    return {
        (block.id, student): blocks.block_notebook(block, student=student, book=book, root=ROOT)
        for block in NOTEBOOK_BLOCKS
        for student in (False, True)
    }


# --- the plan -------------------------------------------------------------------------------


@pytest.mark.parametrize("block", BLOCKS, ids=lambda b: b.id)
def test_every_section_cell_and_exercise_the_plan_names_exists(block):
    chapter = blocks.load_chapter(block.chapter, ROOT)
    labels = {chunk.label for chunk in chapter.chunks}
    for item in block.demonstrate:
        assert item in labels or chapter.section(item), item
    for exercise in block.exercises:
        section = chapter.section(exercise)
        assert section.title.startswith("Exercise "), f"{exercise} is not an exercise section"
        assert blocks._checker_of(chapter, exercise), f"{exercise} calls no checker"


def test_the_one_day_plan_fits_six_hours_with_breaks_every_90_minutes():
    (day,) = blocks.days(blocks.schedule("one_day", ROOT))
    assert sum(slot.minutes for slot in day) == 6 * 60
    assert max(blocks.stretches(day)) <= 90
    assert 8 <= blocks.exercise_count("one_day", ROOT) <= 12
    chapters = {slot.chapter for slot in day if slot.kind == "block"}
    assert "autodiff" in chapters, "later blocks use jax.grad: the day teaches it"
    shown = [slot.block for slot in day if slot.kind == "block" and slot.block.shown]
    assert [block.chapter for block in shown] == ["pln-levels"], "the case study is shown, not run"


def test_the_two_day_plan_has_two_days_with_breaks_every_90_minutes():
    days = blocks.days(blocks.schedule("two_day", ROOT))
    assert len(days) == 2
    for day in days:
        assert max(blocks.stretches(day)) <= 90
        assert sum(slot.minutes for slot in day) <= 7.5 * 60


# --- reading code ---------------------------------------------------------------------------


def test_names_reads_statements_in_order():
    """A name assigned from itself is read; loop targets, parameters and locals are not."""
    free, defined = blocks.names(
        "key, subkey = jax.random.split(key)\n"
        "def f(x):\n    y = x + offset\n    return y\n"
        "for i in range(3):\n    total = i\n"
        "%timeit f(1)\n"
    )
    assert free == {"key", "jax", "offset"}
    assert defined == {"key", "subkey", "f", "i", "total"}


def test_unused_imports_are_left_out_and_the_rest_kept():
    code = "import time\nimport jax\nimport torch\nfrom jaxcourse.bench import time_call\n\nx = time.time()"
    assert blocks.used_imports(code, {"jax"}) == "import time\n\nimport jax\n\nx = time.time()"


# --- the notebooks --------------------------------------------------------------------------


@pytest.mark.parametrize("block", NOTEBOOK_BLOCKS, ids=lambda b: b.id)
def test_a_block_notebook_defines_every_name_before_a_cell_reads_it(block, notebooks):
    """Run top to bottom, each cell only reads names that the cells above it (or itself) define:
    constants and helpers the chapter defines elsewhere came along."""
    for student in (False, True):
        notebook = notebooks[(block.id, student)]
        defined = set(dir(builtins)) | blocks.IGNORED
        for cell in notebook.cells:
            if cell.cell_type != "code":
                continue
            free, names = blocks.names(cell.source)
            missing = free - defined
            assert not missing, f"{block.id} (student={student}): {missing} read before defined"
            defined |= names


@pytest.mark.parametrize("block", NOTEBOOK_BLOCKS, ids=lambda b: b.id)
def test_a_block_notebook_has_the_colab_setup_its_exercises_and_the_right_verdicts(
    block, notebooks, book
):
    solution, student = notebooks[(block.id, False)], notebooks[(block.id, True)]
    for notebook in (solution, student):
        assert notebook.cells[1].source == colab.setup_source(book.repository)
        assert blocks.colab_url(block, book.repository) in notebook.cells[0].source
    assert "expect='passed'" in solution.cells[-1].source
    assert "expect='not yet'" in student.cells[-1].source
    chapter = blocks.load_chapter(block.chapter, ROOT)
    solution_code = "\n".join(c.source for c in solution.cells if c.cell_type == "code")
    student_code = "\n".join(c.source for c in student.cells if c.cell_type == "code")
    for exercise, codes in blocks.solution_sources(block, ROOT).items():
        checker = blocks._checker_of(chapter, exercise)
        assert f"{checker}(" in student_code
        assert codes and all(code in solution_code for code in codes)
        assert not any(code in student_code for code in codes), "a solution in the student notebook"
    assert "torch" not in solution_code, "a block never imports the case study's comparison"


@pytest.mark.parametrize("block", NOTEBOOK_BLOCKS, ids=lambda b: b.id)
def test_no_quarto_syntax_is_left_in_a_block_notebook(block, notebooks, book):
    for student in (False, True):
        assert leftover_syntax(notebooks[(block.id, student)], set(book.references)) == []


def test_copies_for_the_learner_are_made_once_and_never_overwritten(tmp_path):
    source = tmp_path / "notebooks" / blocks.BLOCKS_DIR / "student"
    source.mkdir(parents=True)
    (source / "jit.ipynb").write_text("generated")
    copied, kept = blocks.copy_for_learner(tmp_path)
    (tmp_path / "my-work" / "blocks" / "jit.ipynb").write_text("my answer")
    copied_again, kept_again = blocks.copy_for_learner(tmp_path)
    assert len(copied) == 1 and kept == [] and copied_again == [] and len(kept_again) == 1
    assert (tmp_path / "my-work" / "blocks" / "jit.ipynb").read_text() == "my answer"


def test_the_cache_variables_are_those_of_the_course_cache(capsys):
    from jaxcourse import compilation_cache

    assert blocks.main(["--cache-env"]) == 0
    printed = capsys.readouterr().out
    folder = compilation_cache.default_directory()
    assert f"export JAX_COMPILATION_CACHE_DIR={folder}" in printed.splitlines()


def test_the_sync_check_reports_a_stale_or_orphan_block_notebook(tmp_path):
    """In a copy of the course whose plan has one block (two notebooks, to stay quick)."""
    pages = ("index.qmd", "workshop.qmd", "instructors.qmd", "prepare.qmd")
    for name in ("chapters", "resources", *pages):
        (tmp_path / name).symlink_to(ROOT / name)
    for name in ("_quarto.yml", "requirements.txt", "pyproject.toml"):
        shutil.copy(ROOT / name, tmp_path / name)
    plan = blocks.load_plan(ROOT)
    plan["blocks"] = [entry for entry in plan["blocks"] if entry["id"] == "tracing"]
    (tmp_path / "workshop").mkdir()
    (tmp_path / blocks.PLAN_FILE).write_text(yaml.safe_dump(plan))
    written, kept = blocks.write(tmp_path)
    assert len(written) == 2 and kept == []
    first = written[0]
    first.write_text(first.read_text().replace("Workshop block", "Workshop blok"))
    orphan = tmp_path / "notebooks" / blocks.BLOCKS_DIR / "gone.ipynb"
    orphan.write_text("{}")
    assert blocks.stale(tmp_path) == sorted(
        [str(first.relative_to(tmp_path / "notebooks")), "blocks/gone.ipynb"]
    ), "every other notebook is in sync, these two are not"


# --- the pages ------------------------------------------------------------------------------

PAGES = ["workshop.qmd", "instructors.qmd", "prepare.qmd"]


@pytest.fixture(scope="module")
def rendered():
    return {page: blocks.render_asis((ROOT / page).read_text()) for page in PAGES}


@pytest.mark.parametrize("page", PAGES)
def test_a_page_is_in_the_book_and_its_generated_references_resolve(page, rendered, book):
    assert page in book.pages
    text = rendered[page]
    assert "output: asis" not in text
    references = set(re.findall(r"@((?:sec|fig|tbl)-[\w-]*\w)", text))
    assert references - set(book.targets) == set()


def test_the_workshop_page_links_every_block_notebook_on_colab(rendered, book):
    text = rendered["workshop.qmd"]
    for block in NOTEBOOK_BLOCKS:
        assert blocks.colab_url(block, book.repository) in text
        assert f"@{block.exercises[0]}" in text
    assert "Save a copy in Drive" in text
    for chapter_exercises in re.findall(r"@(sec-[\w-]+-exercises?)\b", text):
        assert chapter_exercises in book.targets


def test_the_instructor_page_lists_stuck_points_timings_and_summaries(rendered):
    text = rendered["instructors.qmd"]
    for block in NOTEBOOK_BLOCKS:
        for exercise in block.exercises:
            checker = blocks._checker_of(blocks.load_chapter(block.chapter, ROOT), exercise)
            assert blocks.stuck_points(checker, ROOT), f"no wrong-answer test found for {checker}"
    assert text.count("**Learning objectives.**") == len(BLOCKS)
    assert "| Trap | Symptom | Where |" in text, "the sharp-bits hand-out"
    assert "python -m jaxcourse.progress" in text


def test_timings_cover_every_block_notebook():
    timings = blocks.load_timings(ROOT)
    assert set(timings["blocks"]) == {block.id for block in NOTEBOOK_BLOCKS}
    for block in NOTEBOOK_BLOCKS:
        entry = timings["blocks"][block.id]
        assert set(entry["solutions_s"]) == set(block.exercises)


def test_the_notebooks_sync_check_covers_the_block_notebooks(tmp_path, capsys):
    """`python -m tools.notebooks --check`, the developers' and CI's sync check, fails on a block
    notebook that no block makes (a course of one chapter, no workshop plan)."""
    from tools import notebooks

    (tmp_path / "chapters").mkdir()
    (tmp_path / "_quarto.yml").write_text(
        "project: {type: book}\nbook:\n  repo-url: https://github.com/someone/fork\n"
        "  chapters: [chapters/demo.qmd]\n"
    )
    (tmp_path / "chapters" / "demo.qmd").write_text('---\ntitle: "Demo"\n---\n\nText.\n')
    notebooks.main(["--root", str(tmp_path)])
    assert notebooks.main(["--check", "--root", str(tmp_path)]) == 0
    orphan = tmp_path / "notebooks" / blocks.BLOCKS_DIR / "student" / "gone.ipynb"
    orphan.parent.mkdir(parents=True)
    orphan.write_text("{}")
    capsys.readouterr()
    assert notebooks.main(["--check", "--root", str(tmp_path)]) == 1
    assert "blocks/student/gone.ipynb" in capsys.readouterr().out
