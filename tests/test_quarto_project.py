"""Static checks of the Quarto book (`tools.quarto_check`): the real project passes them all,
and each check catches its own deliberately broken fixture in `tests/fixtures/quarto/`."""

from pathlib import Path

import pytest

from tools import quarto_check as qc

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = Path(__file__).resolve().parent / "fixtures" / "quarto"


def test_the_course_book_has_no_problems():
    problems = qc.all_problems(ROOT)
    assert problems == [], "Quarto project problems:\n" + "\n".join(problems)


def test_the_good_fixture_passes_every_check():
    assert qc.all_problems(FIXTURES / "good") == []
    assert qc.main(["--root", str(FIXTURES / "good")]) == 0


@pytest.mark.parametrize(
    "fixture, check, expected",
    [
        ("bad-config", qc.check_config, ["_quarto.yml: project.type is not 'book'"]),
        (
            "bad-chapter-list",
            qc.check_chapter_list,
            [
                "_quarto.yml: lists chapters/missing.qmd, which does not exist",
                "chapters/unlisted.qmd: not listed in _quarto.yml",
            ],
        ),
        ("bad-crossref", qc.check_crossrefs, ["index.qmd:5: @fig-a-plto has no target"]),
        (
            "bad-cell-option",
            qc.check_cell_options,
            ["chapters/a.qmd:11: unknown cell option 'ecko'"],
        ),
        (
            "bad-figure",
            qc.check_figure_cells,
            ["chapters/a.qmd:11: figure fig-a-plot has no fig-alt"],
        ),
        ("bad-link", qc.check_links, ["index.qmd:5: link to chapters/b.qmd does not resolve"]),
        (
            "bad-title",
            qc.check_titles,
            ["chapters/a.qmd: no title (front matter, or a first heading '# ...')"],
        ),
        (
            "bad-citation",
            qc.check_citations,
            ["index.qmd:5: citation @knuth1985 is not in the bibliography"],
        ),
        (
            "bad-table",
            qc.check_tables,
            [
                "chapters/a.qmd:34: table rows without a header and separator row "
                "(a blank line inside a table?)"
            ],
        ),
    ],
)
def test_each_check_catches_its_broken_fixture(fixture, check, expected):
    root = FIXTURES / fixture
    assert check(FIXTURES / "good") == []
    assert check(root) == expected
    assert qc.all_problems(root) == expected  # and no other check complains
    assert qc.main(["--root", str(root)]) == 1


def test_every_check_has_a_fixture():
    broken = {p.name for p in FIXTURES.iterdir() if p.is_dir() and p.name.startswith("bad-")}
    assert len(broken) == len(qc.CHECKS)


def test_malformed_or_missing_config(tmp_path):
    assert qc.all_problems(tmp_path) == ["_quarto.yml: missing"]
    (tmp_path / "_quarto.yml").write_text("project: [unclosed\n")
    (problem,) = qc.all_problems(tmp_path)
    assert problem.startswith("_quarto.yml: does not parse")


def test_code_urls_and_math_are_not_citations():
    text = '---\ntitle: "T"\n---\n\nSee `@jax.jit`, a@b.org and $x@y$.\n\n```{python}\n@jax.jit\ndef f(x):\n    return x\n```\n\n[-@optax; @jaxdocs]\n'
    assert [key for key, _ in qc._at_keys(text)] == ["optax", "jaxdocs"]


def test_cell_options_used_by_the_chapters_are_known():
    used = set()
    for path in qc.qmd_files(ROOT):
        for info, body, _ in qc.split_blocks(path.read_text())[1]:
            if qc.is_python_cell(info):
                used |= set(qc.cell_options(body))
    assert used and used <= qc.KNOWN_CELL_OPTIONS


def test_every_page_shows_the_execution_banner():
    """Each page's first code cell calls start_chapter(), which prints 'Executed with jax X on DEVICE'."""
    pages = [ROOT / "index.qmd", ROOT / "workshop.qmd", *sorted((ROOT / "chapters").glob("*.qmd"))]
    missing = [p.name for p in pages if "start_chapter()" not in p.read_text()]
    assert missing == []


def test_a_first_level_one_heading_is_a_title(tmp_path):
    """`# Welcome {.unnumbered}`, how a book keeps its index unnumbered, gives the page its title,
    for the checks and for the numbering alike; a level-2 first heading does not."""
    from tools.qmd import page_title

    assert page_title("# Welcome {.unnumbered}\n\nText.\n") == "Welcome"
    assert page_title('---\ntitle: "Preface {.unnumbered}"\n---\n# Other\n') == "Preface"
    assert page_title("```{python}\n# a comment, not a heading\n```\n## Intro\n") == ""


def test_the_index_takes_the_jax_version_from_the_pin():
    """The welcome page names no JAX version by hand: a cell prints requirements.txt's pin at render
    time (an index that said 'updated for JAX 0.10' outlived two pin changes)."""
    import re

    from tools.book import pinned_jax_version

    text = (ROOT / "index.qmd").read_text()
    assert not re.findall(r"\b(?:JAX|jax)[ =]+\d+\.\d+", text)
    assert "pinned_jax_version()" in text
    assert re.fullmatch(r"\d+\.\d+\.\d+(\.\d+)?", pinned_jax_version())
