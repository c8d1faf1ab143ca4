"""The generated notebooks read like the website: no Quarto syntax is left in them, cross-references
carry Quarto's numbers and link to the published book, citations are author-year text with a
reference list, and every place that names the repository agrees with `_quarto.yml`."""

import re
from pathlib import Path

import nbformat
import pytest

from tools import book, chapter_notebooks, colab
from tools.book import load_book
from tools.crossref import all_targets, number_book
from tools.quarto_leftovers import LEFTOVER_PATTERNS, leftover_syntax
from tools.quarto_markdown import SOLUTION_ELSEWHERE

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb")) + sorted(
    (ROOT / "notebooks" / "student").glob("*.ipynb")
)


@pytest.fixture(scope="module")
def course_book():
    return load_book(ROOT)


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: str(p.relative_to(ROOT / "notebooks")))
def test_no_quarto_syntax_is_left_in_a_generated_notebook(path, course_book):
    notebook = nbformat.read(path, as_version=4)
    assert leftover_syntax(notebook, set(course_book.references)) == []


def test_every_chapter_has_its_two_notebooks_checked():
    assert len(NOTEBOOKS) == 2 * len(chapter_notebooks.chapter_paths(ROOT)) > 0


LEFTOVERS = {
    "cross-reference": "As @fig-jit-fusion shows.",
    "citation brackets": "Fusion [@unknownkey2020].",
    ".qmd link": "See [the tracing chapter](tracing.qmd).",
    "::: fence": '::: {.callout-tip collapse="true"}',
    "{#...} anchor": "## Section {#sec-demo}",
    "{.class} attribute": "A [small]{.smallcaps} span.",
    "{-} attribute": "## Unnumbered {-}",
    "shortcode": "{{< include _partial.qmd >}}",
    "executable code fence": "```{python}\nx = 1\n```",
    "inline footnote": "A claim.^[A footnote.]",
    "citation key": "As @gangloff2023jit shows.",
}


def test_the_fixture_covers_every_pattern():
    assert set(LEFTOVERS) == set(LEFTOVER_PATTERNS) - {"cell option"} | {"citation key"}


@pytest.mark.parametrize("name", sorted(LEFTOVERS))
def test_each_leftover_pattern_is_detected(name, course_book):
    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell(LEFTOVERS[name])])
    assert f"cell 0: {name}" in leftover_syntax(notebook, set(course_book.references))


def test_cell_options_and_shortcodes_in_code_are_detected():
    notebook = nbformat.v4.new_notebook(
        cells=[nbformat.v4.new_code_cell("#| echo: false\nx = 1  # {{< var x >}}")]
    )
    assert leftover_syntax(notebook, set()) == ["cell 0: cell option", "cell 0: shortcode"]


def test_syntax_shown_as_code_is_not_a_leftover(course_book):
    text = "Write `#| error: true` or `@jax.jit`:\n\n```yaml\n#| label: fig-x\n```\n\nMail a@b.org."
    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell(text)])
    assert leftover_syntax(notebook, set(course_book.references)) == []


# --- Quarto's numbering ---------------------------------------------------------------------

BOOK_CONFIG = """\
project: {type: book}
book:
  repo-url: https://github.com/Someone/demo-course
  chapters:
    - index.qmd
    - part: "Part one"
      chapters: [chapters/a.qmd, chapters/b.qmd]
  appendices: [extra.qmd]
bibliography: refs.bib
"""
PAGES = {
    "index.qmd": '---\ntitle: "Welcome {.unnumbered}"\n---\n\n## Who {#sec-who}\n',
    "chapters/a.qmd": (
        '---\ntitle: "A"\n---\n\n## First {#sec-a-first}\n\n### Deeper {#sec-a-deeper}\n\n'
        "## Not counted {.unnumbered}\n\n## Second {#sec-a-second}\n\n"
        "::: {.callout-note}\n## A callout title, not a section\n:::\n\n"
        "```{python}\n#| label: fig-a-one\n#| fig-cap: One.\nx = 1\n```\n\n"
        "$$\nx^2\n$$ {#eq-a-square}\n\n"
        "```{python}\n#| label: tbl-a-one\n#| tbl-cap: A table.\nx\n```\n\n"
        "![Two](img/two.png){#fig-a-two}\n"
    ),
    "chapters/b.qmd": (
        '---\ntitle: "B"\n---\n\n## Only {#sec-b-only}\n\n'
        "@fig-a-two and [-@sec-a-deeper] and [@sec-a-second]; see [the A chapter](a.qmd#sec-a-first).\n\n"
        "Cited by @smith2020, in brackets [see @smith2020, p. 3; @doe2021], year only [-@doe2021].\n\n"
        "$$\ny = 1\n$$ {#eq-b-one}\n\n"
        "::: {.callout-warning}\n## Mind the gap\nText with @eq-b-one.\n:::\n\n"
        "```{python}\n#| label: setup\n#| echo: false\nprint('hidden')\n```\n\n"
        "```{python}\n#| error: true\nraise ValueError\n```\n\n"
        '::: {.callout-tip collapse="true"}\n## Solution\n```{python}\nanswer = 42\n```\n:::\n'
    ),
    "extra.qmd": '---\ntitle: "Extra"\n---\n\n## Appendix section {#sec-extra}\n\n![Three](three.png){#fig-extra}\n',
}
BIB = """@article{smith2020, author = {Smith, Ann and Lee, Bo}, title = {A {JAX} paper}, journal = {J}, year = {2020},
  doi = {10.1/x}}
@misc{doe2021, author = {Doe, Jo and Roe, Al and Poe, Ed}, title = {Notes}, year = {2021}}
"""


@pytest.fixture
def demo_book(tmp_path):
    (tmp_path / "chapters").mkdir()
    (tmp_path / "_quarto.yml").write_text(BOOK_CONFIG)
    (tmp_path / "refs.bib").write_text(BIB)
    for name, text in PAGES.items():
        (tmp_path / name).write_text(text)
    return tmp_path


def test_numbering_follows_quarto(demo_book):
    pages = number_book(demo_book)
    assert [(p.path, p.prefix) for p in pages] == [
        ("index.qmd", None),
        ("chapters/a.qmd", "1"),
        ("chapters/b.qmd", "2"),
        ("extra.qmd", "A"),
    ]
    words = {label: target.text for label, target in all_targets(pages).items()}
    assert words == {
        "sec-who": "Who",  # an unnumbered page's section is named by its heading
        "sec-a-first": "Section 1.1",
        "sec-a-deeper": "Section 1.1.1",
        "sec-a-second": "Section 1.2",  # the unnumbered heading and the callout title do not count
        "fig-a-one": "Figure 1.1",
        "fig-a-two": "Figure 1.2",
        "eq-a-square": "Equation 1.1",
        "tbl-a-one": "Table 1.1",
        "sec-b-only": "Section 2.1",
        "eq-b-one": "Equation 2.1",
        "sec-extra": "Section A.1",
        "fig-extra": "Figure A.1",
    }


def test_a_label_defined_twice_is_an_error(demo_book):
    (demo_book / "extra.qmd").write_text('---\ntitle: "Extra"\n---\n\n## Again {#sec-a-first}\n')
    with pytest.raises(
        ValueError, match="@sec-a-first is defined in chapters/a.qmd and in extra.qmd"
    ):
        all_targets(number_book(demo_book))


def demo_notebook(root, *, student=False):
    text = (root / "chapters" / "b.qmd").read_text()
    name = ("student/" if student else "") + "b.ipynb"
    return chapter_notebooks.chapter_to_notebook(
        text, name, student=student, book=load_book(root), page="chapters/b.qmd"
    )


def markdown_of(notebook):
    return "\n\n".join(cell.source for cell in notebook.cells if cell.cell_type == "markdown")


def test_cross_references_carry_the_number_and_link_to_the_published_page(demo_book):
    text = markdown_of(demo_notebook(demo_book))
    site = "https://someone.github.io/demo-course/"
    assert f"[Figure 1.2]({site}chapters/a.html#fig-a-two)" in text
    assert f"[1.1.1]({site}chapters/a.html#sec-a-deeper)" in text  # [-@...] drops the word
    assert f"[Section 1.2]({site}chapters/a.html#sec-a-second)" in text
    assert f"[the A chapter]({site}chapters/a.html#sec-a-first)" in text
    assert "## 2.1 Only" in text and text.startswith("# 2 B\n")


def test_citations_become_author_year_links_and_a_reference_list(demo_book):
    notebook = demo_notebook(demo_book)
    text = markdown_of(notebook)
    assert "Cited by [Smith and Lee (2020)](https://doi.org/10.1/x), in brackets" in text
    assert "([see Smith and Lee 2020](https://doi.org/10.1/x), p. 3;" not in text
    assert "(see [Smith and Lee 2020](https://doi.org/10.1/x), p. 3; " in text
    doe = "https://someone.github.io/demo-course/chapters/b.html#ref-doe2021"  # no URL: the page's list
    assert f"[Doe et al. 2021]({doe}))" in text and f"year only ([2021]({doe}))" in text
    references = notebook.cells[-3].source
    assert references.startswith("## References\n\n- Doe, Jo; Roe, Al; Poe, Ed. 2021. *Notes*.")
    assert "- Smith, Ann; Lee, Bo. 2020. *A JAX paper*. J. <https://doi.org/10.1/x>" in references


def test_callouts_become_a_bold_title_and_a_block_quote(demo_book):
    text = markdown_of(demo_notebook(demo_book))
    assert "> **Mind the gap**\n>\n> Text with [Equation 2.1](" in text
    assert "y = 1\n\\tag{2.1} $$" in text
    assert "> **Solution**" in text


def test_student_notebooks_drop_solution_callouts(demo_book):
    notebook = demo_notebook(demo_book, student=True)
    text = markdown_of(notebook)
    assert SOLUTION_ELSEWHERE in text and "**Solution**" not in text  # no checker: no ladder
    assert not any("answer = 42" in cell.source for cell in notebook.cells)
    assert notebook.cells[0].source.startswith("# 2 B (exercises)")


def test_hidden_cells_are_collapsed_for_jupyter_and_colab_and_errors_keep_their_tag(demo_book):
    code = [cell for cell in demo_notebook(demo_book).cells if cell.cell_type == "code"][1:-1]
    hidden, error = code[0], code[1]
    assert hidden.source == "# @title Setup\nprint('hidden')"
    assert hidden.metadata == {"cellView": "form", "jupyter": {"source_hidden": True}}
    assert error.source == "raise ValueError" and error.metadata == {"tags": ["raises-exception"]}


def test_figure_captions_follow_their_cell_with_the_number(demo_book):
    text = (demo_book / "chapters" / "a.qmd").read_text()
    notebook = chapter_notebooks.chapter_to_notebook(
        text, "a.ipynb", book=load_book(demo_book), page="chapters/a.qmd"
    )
    sources = [cell.source for cell in notebook.cells]
    assert sources[sources.index("x = 1") + 1] == "*Figure 1.1: One.*"
    assert sources[sources.index("x") - 1] == "*Table 1.1: A table.*"
    site = "https://someone.github.io/demo-course/"
    assert (
        f"![Two]({site}chapters/img/two.png)\n\n*[Figure 1.2]({site}chapters/a.html#fig-a-two): Two*"
        in markdown_of(notebook)
    )


def test_an_unknown_cross_reference_is_an_error(demo_book):
    page = demo_book / "chapters" / "b.qmd"
    page.write_text(page.read_text() + "\nSee @fig-nowhere.\n")
    with pytest.raises(ValueError, match="@fig-nowhere has no target"):
        demo_notebook(demo_book)


# --- one configured place for the repository -----------------------------------------------


def test_the_site_url_is_derived_from_the_repository():
    config = book.load_config(ROOT)["book"]
    assert config["repo-url"] == f"https://github.com/{book.repository(ROOT)}"
    assert config["site-url"].rstrip("/") + "/" == book.site_url(ROOT)


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: str(p.relative_to(ROOT / "notebooks")))
def test_badge_and_setup_cell_point_to_the_configured_repository(path):
    cells = nbformat.read(path, as_version=4).cells
    name = path.relative_to(ROOT / "notebooks").as_posix()
    assert colab.badge_markdown(name, book.repository(ROOT)) in cells[0].source
    assert cells[1].source == colab.setup_source(book.repository(ROOT))


@pytest.mark.parametrize("guide", ["README.md", "CONTRIBUTING.md"])
def test_readme_links_point_to_the_configured_repository(guide):
    readme = (ROOT / guide).read_text()
    named = set(re.findall(r"github\.com/([\w.-]+/[\w.-]+?)(?:/|\)|\s|$)", readme))
    named |= set(re.findall(r"colab\.research\.google\.com/github/([\w.-]+/[\w.-]+)/", readme))
    course = {
        repo
        for repo in named
        if not repo.startswith(("jax-ml/", "google", "OpenMathLib/", "PLN-team/"))
    }
    assert course <= {book.repository(ROOT)}
    if guide == "README.md":
        assert course == {book.repository(ROOT)}
        assert book.site_url(ROOT) in readme


def test_a_repo_url_that_is_not_github_is_refused(tmp_path):
    (tmp_path / "_quarto.yml").write_text("book:\n  repo-url: https://gitlab.com/a/b\n")
    with pytest.raises(ValueError, match="book.repo-url must be https://github.com/OWNER/NAME"):
        book.repository(tmp_path)
