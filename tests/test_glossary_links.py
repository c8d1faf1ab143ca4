"""A chapter that uses a glossary term before the chapter that teaches it links the glossary entry
(issue 26, point 1).

The glossary (`chapters/glossary.qmd`) gives each entry an anchor `gloss-<slug>` and the section
that teaches it (its first `@sec-` reference); the book's order is `_quarto.yml`'s. A page that comes
before the teaching chapter and uses the term in its prose (not in code cells; in inline code only
when the term itself is code) must link `glossary.qmd#gloss-<slug>` at or before the line of the
first use. `PYTHONPATH=. python tests/test_glossary_links.py` prints every violation.
"""

from __future__ import annotations

import functools
import posixpath
import re
from dataclasses import dataclass
from pathlib import Path

import pytest

from tools import qmd
from tools.crossref import all_targets, number_book

ROOT = Path(__file__).resolve().parents[1]
GLOSSARY = "chapters/glossary.qmd"
ENTRY = re.compile(
    r"^\[(?P<term>[^\n]+)\]\{#(?P<slug>gloss-[\w-]+)\}\n:   (?P<text>.*?)(?=\n\n|\Z)",
    re.MULTILINE | re.DOTALL,
)
SEC_KEY = re.compile(r"(?:^|(?<=[\s\[;(\-]))@(sec-[\w-]+)")
PAGE_LINK = re.compile(r"\[([^\[\]]*)\]\(\s*([^)\s#]+\.qmd)[^)]*\)")
"""A link to a page: a use of a term in the text of a link to the page that teaches it is linked."""
GLOSSARY_LINK = re.compile(r"glossary\.qmd#(gloss-[\w-]+)")
HTML_COMMENT = re.compile(r"<!--.*?-->", re.DOTALL)
LINK_TARGET = re.compile(r"\]\([^)]*\)|\]\{[^}]*\}|\{[#.][^}]*\}|(?<![\w])@[\w:.-]+")

FORMS: dict[str, list[str]] = {
    # Terms whose name is also an everyday word: the forms that mean the glossary's sense.
    "gloss-key": [r"\b(?:PRNG|random)\s+keys?\b", r"code:(?<![\w])jax\.random\.key(?![\w])"],
    "gloss-carry": [r"\b(?:loop|the|a|its|scan's|loop's)\s+carry\b"],
    "gloss-leaf": [r"\bleaf\b", r"\b(?:its|the|tree's|pytree's|a pytree's|array)\s+leaves\b"],
    "gloss-lowered-compiled": [r"code:\b(?:Lowered|Compiled)\b"],
    "gloss-replicated-varying": [r"\breplicated\b", r"\bvarying\b"],
    "gloss-transpose": [r"\btranspos(?:e|es|ed|ing)\b(?!\s*\()"],
    "gloss-residual": [r"\bresiduals?\b"],
    "gloss-primitive": [r"\bprimitives?\b"],
    "gloss-collective": [r"\bcollectives?\b"],
    "gloss-static-argument": [r"\bstatic\s+arguments?\b", r"code:\bstatic_arg(?:nums|names)\b"],
    "gloss-tangent": [r"\btangents?\b"],
    "gloss-sharding": [r"\bshardings?\b", r"\bsharded\b"],
    "gloss-mesh": [r"\bmesh(?:es)?\b"],
    "gloss-partitionspec": [r"\bPartitionSpecs?\b", r"code:(?<![\w])PartitionSpec(?![\w])"],
    "gloss-functools-partial": [r"code:(?<![\w])partial(?![\w])"],
    "gloss-jax-make-mesh": [r"code:(?<![\w])make_mesh(?![\w])"],
    "gloss-jax-enable-x64": [r"code:(?<![\w])(?:jax_)?enable_x64(?![\w])", r"\bx64\b"],
    # 'asynchronous dispatch' is a use of its own entry, whose link covers it.
    "gloss-dispatch": [r"(?i)(?<!asynchronous )(?<!asynchronous\n)\bdispatch(?:es)?\b"],
}
"""Overrides of the default forms (the term and its plural, each name of 'A, B' or 'A (B)').
A form that starts with 'code:' is looked for in inline code, the others in the words."""


@dataclass(frozen=True)
class Term:
    slug: str
    term: str
    page: str
    """The page that teaches it: where its first `@sec-` reference points."""
    patterns: tuple[tuple[re.Pattern, bool], ...]
    """Each form with True when it is looked for in inline code rather than in the words."""


def _names(term: str) -> list[str]:
    """'Ahead-of-time (AOT) compilation' -> ['Ahead-of-time compilation', 'AOT']; 'A, B' -> A, B."""
    inside = re.search(r"\(([^)]*)\)", term)
    if inside:
        outside = re.sub(r"\s*\([^)]*\)\s*", " ", term).strip()
        return [outside, inside.group(1)]
    return [name.strip() for name in term.split(", ")]


def _pattern(name: str) -> str:
    words = r"[\s-]+".join(re.escape(word) for word in re.split(r"[\s-]+", name))
    words = words.replace("isation", "i[sz]ation")
    return rf"(?<![\w`]){words}(?:s|es)?(?![\w])"


def glossary_terms(root: Path = ROOT) -> list[Term]:
    """Every glossary entry with the page that teaches it and the forms that count as a use."""
    text = (root / GLOSSARY).read_text()
    targets = all_targets(number_book(root))
    terms = []
    for entry in ENTRY.finditer(text):
        term, slug, definition = entry.group("term", "slug", "text")
        key, link = SEC_KEY.search(definition), qmd.QMD_LINK.search(definition)
        if key is not None and key.group(1) in targets:
            page = targets[key.group(1)].page
        elif link is not None:  # '[The automatic differentiation chapter](autodiff.qmd)'
            page = (Path(GLOSSARY).parent / link.group(1)).as_posix()
        else:
            raise AssertionError(f"{GLOSSARY}: {term!r} has no @sec- reference or page link")
        code = term.startswith("`")
        names = [name.strip("`") for name in _names(term)]
        if slug in FORMS:  # as written: case matters
            forms = [
                (form.removeprefix("code:"), form.startswith("code:"), 0) for form in FORMS[slug]
            ]
        elif code:
            forms = [(rf"(?<![\w]){re.escape(name)}(?![\w])", True, 0) for name in names]
        else:
            flag = 0 if any(name.isupper() for name in names) else re.I  # HLO, not 'hlo'
            forms = [(_pattern(name), False, flag) for name in names]
        patterns = tuple((re.compile(form, flag), in_code) for form, in_code, flag in forms)
        terms.append(Term(slug, term, page, patterns))
    return terms


def _blank(match: re.Match) -> str:
    return re.sub(r"[^\n]", " ", match.group(0))


def without_cells(text: str) -> str:
    """The page with its front matter and code cells blanked, lines kept."""
    front = re.match(r"^---[ \t]*\n.*?\n---[ \t]*\n", text, re.DOTALL)
    if front:
        text = _blank(front) + text[front.end() :]
    return qmd.split_blocks(text)[0]


def prose_and_code(text: str) -> tuple[str, str]:
    """(the words of a page, its inline code), each the page's length with everything else blanked,
    so that an offset gives the line. Code cells, front matter, comments and link targets go."""
    prose = without_cells(text)
    prose = HTML_COMMENT.sub(_blank, prose)
    prose = LINK_TARGET.sub(_blank, prose)
    spans = list(qmd.INLINE_CODE.finditer(prose))
    code = [" " if ch != "\n" else "\n" for ch in prose]
    for span in spans:
        code[span.start() : span.end()] = prose[span.start() : span.end()]
    words = qmd.MATH.sub(_blank, qmd.INLINE_CODE.sub(_blank, prose))
    return words, "".join(code)


def _start(match: re.Match) -> int:
    return match.start()


def _line(text: str, offset: int) -> int:
    return text.count("\n", 0, offset) + 1


def violations(root: Path = ROOT) -> list[str]:
    """'page:line: term ... (taught in ...)' for each first use before the teaching chapter, unlinked."""
    order = qmd.listed_pages(root)
    terms = glossary_terms(root)
    found = []
    for position, page in enumerate(order):
        if page == GLOSSARY:
            continue
        text = (root / page).read_text()
        words, code = prose_and_code(text)
        teaching_links: dict[str, list[tuple[int, int]]] = {}  # page: its links' text spans
        for link in PAGE_LINK.finditer(without_cells(text)):
            target = posixpath.normpath(posixpath.join(posixpath.dirname(page), link.group(2)))
            teaching_links.setdefault(target, []).append(link.span(1))
        links: dict[str, int] = {}
        for link in GLOSSARY_LINK.finditer(text):
            links.setdefault(link.group(1), _line(text, link.start()))
        for term in terms:
            if term.page not in order or order.index(term.page) <= position:
                continue
            uses = [
                match
                for pattern, in_code in term.patterns
                for match in pattern.finditer(code if in_code else words)
                if not any(a <= match.start() < b for a, b in teaching_links.get(term.page, []))
            ]
            if not uses:
                continue
            use = min(uses, key=_start)
            first = _line(words, use.start())  # words and code keep the page's lines
            linked = links.get(term.slug)
            if linked is None or linked > first:
                snippet = use.group(0).replace("\n", " ")
                found.append(
                    f"{page}:{first}: {term.term!r} is used before {term.page} teaches it, "
                    f"as {snippet!r}, with no link to glossary.qmd#{term.slug} at or before it"
                )
    return found


@functools.cache
def book_violations() -> tuple[str, ...]:
    return tuple(violations())


def test_every_glossary_entry_has_an_anchor_and_a_teaching_section():
    terms = glossary_terms()
    text = (ROOT / GLOSSARY).read_text()
    entries = re.findall(r"^(\S[^\n]*)\n:   ", qmd.split_blocks(text)[0], re.MULTILINE)
    assert len(terms) == len(entries) >= 50
    for term in terms:
        expected = "gloss-" + re.sub(r"[^a-z0-9]+", "-", term.term.lower()).strip("-")
        assert term.slug == expected, term.term


def test_every_link_to_a_glossary_entry_resolves():
    slugs = {term.slug for term in glossary_terms()}
    broken = []
    for path in qmd.qmd_files(ROOT):
        text = path.read_text()
        for link in GLOSSARY_LINK.finditer(text):
            if link.group(1) not in slugs:
                line = _line(text, link.start())
                broken.append(f"{path.relative_to(ROOT)}:{line}: {link.group(0)}")
    assert broken == []


def test_the_checker_finds_an_unlinked_early_use_and_accepts_a_linked_one(tmp_path):
    (tmp_path / "chapters").mkdir()
    (tmp_path / "_quarto.yml").write_text(
        "project:\n  type: book\nbook:\n  chapters:\n    - index.qmd\n    - chapters/a.qmd\n"
        "    - chapters/b.qmd\n  appendices:\n    - chapters/glossary.qmd\n"
    )
    (tmp_path / "index.qmd").write_text("# Welcome {.unnumbered}\n\nNo terms here.\n")
    (tmp_path / "chapters" / "a.qmd").write_text(
        "---\ntitle: A\n---\n\n```{python}\n# a tracer in code does not count\n```\n\n"
        "Its `psum` is code, its tracers are words.\n\n"
        "A [weak type](glossary.qmd#gloss-weak-type) is linked.\n"
    )
    (tmp_path / "chapters" / "b.qmd").write_text(
        "---\ntitle: B\n---\n\n## Tracers {#sec-b-tracer}\n\n## More {#sec-b-more}\n"
    )
    (tmp_path / "chapters" / "glossary.qmd").write_text(
        "---\ntitle: Glossary\n---\n\n"
        "[`psum`]{#gloss-psum}\n:   A sum. @sec-b-more\n\n"
        "[Tracer]{#gloss-tracer}\n:   A stand-in. @sec-b-tracer\n\n"
        "[Weak type]{#gloss-weak-type}\n:   A type. @sec-b-more\n"
    )
    found = violations(tmp_path)
    assert [line.split(" is used")[0] for line in found] == [
        "chapters/a.qmd:9: '`psum`'",
        "chapters/a.qmd:9: 'Tracer'",
    ]


ISSUE_42_USES = [
    # (glossary slug, a use as the jit chapter writes it, True when the use is inline code)
    ("gloss-namedsharding", "NamedSharding(mesh, PartitionSpec('batch'))", True),
    ("gloss-partitionspec", "PartitionSpec('batch')", True),
    ("gloss-partitionspec", "a PartitionSpec", False),
    ("gloss-jax-make-mesh", "jax.make_mesh((1,), ('batch',))", True),
    ("gloss-jax-tree-map", "jax.tree.map(lambda leaf: 2 * leaf, tree)", True),
    ("gloss-key", "jax.random.key(0)", True),
    ("gloss-functools-partial", "@partial(jax.jit, static_argnames='k')", True),
    ("gloss-functools-partial", "functools.partial", True),
    ("gloss-dispatch", "a single dispatch", False),
    ("gloss-buffer", "writes the next update into the same buffer", False),
    ("gloss-jax-enable-x64", "jax_enable_x64", True),
    ("gloss-jax-enable-x64", "jax.enable_x64(True)", True),
]
"""The terms the newcomer met in the jit chapter before any explanation (issue 42)."""


@pytest.mark.parametrize("slug, use, in_code", ISSUE_42_USES)
def test_the_terms_of_issue_42_have_entries_that_recognise_their_uses(slug, use, in_code):
    terms = {term.slug: term for term in glossary_terms()}
    assert slug in terms, f"no glossary entry {slug}"
    assert any(pattern.search(use) for pattern, code in terms[slug].patterns if code == in_code), (
        f"{slug} does not recognise {use!r}"
    )


def test_terms_the_tour_teaches_count_as_taught_for_every_later_chapter():
    """The tour comes first, so a term whose first section is the tour's needs no link after it;
    and the tour itself is checked, for the terms later chapters teach."""
    order = qmd.listed_pages(ROOT)
    assert order.index("chapters/tour.qmd") < order.index("chapters/jit.qmd")
    taught_by_tour = {term.slug for term in glossary_terms() if term.page == "chapters/tour.qmd"}
    assert {
        "gloss-buffer",
        "gloss-dispatch",
        "gloss-functools-partial",
        "gloss-jax-enable-x64",
        "gloss-jax-tree-map",
        "gloss-key",
        "gloss-pytree",
    } <= taught_by_tour


def first_use_and_link(page: str, term: Term, root: Path = ROOT) -> tuple[int | None, int | None]:
    """(line of the term's first use in the page's words or inline code, line of its first
    glossary link), each None when absent."""
    text = (root / page).read_text()
    words, code = prose_and_code(text)
    uses = [  # words and code keep the page's lines, not its offsets
        _line(words, match.start())
        for pattern, in_code in term.patterns
        for match in pattern.finditer(code if in_code else words)
    ]
    links = [
        _line(text, link.start())
        for link in GLOSSARY_LINK.finditer(text)
        if link.group(1) == term.slug
    ]
    return min(uses, default=None), min(links, default=None)


def test_the_jit_chapter_links_or_follows_the_teaching_of_each_term_of_issue_42():
    """Each term the newcomer met unexplained in jit is, where jit uses it, taught by a page before
    jit (the tour) or linked at or before its first use; the sharding terms, which only the later
    sharding chapter teaches, are used in jit and linked."""
    order = qmd.listed_pages(ROOT)
    jit = order.index("chapters/jit.qmd")
    terms = {term.slug: term for term in glossary_terms()}
    linked_in_jit = set()
    for slug in sorted({slug for slug, _, _ in ISSUE_42_USES}):
        term = terms[slug]
        use, link = first_use_and_link("chapters/jit.qmd", term)
        if use is None or order.index(term.page) < jit:
            continue
        assert link is not None and link <= use, f"jit.qmd:{use}: {term.term} is not linked"
        linked_in_jit.add(slug)
    assert {"gloss-namedsharding", "gloss-partitionspec", "gloss-jax-make-mesh"} <= linked_in_jit


@pytest.mark.parametrize("page", [p for p in qmd.listed_pages(ROOT) if p != GLOSSARY])
def test_terms_are_linked_where_used_before_the_chapter_that_teaches_them(page):
    found = [line for line in book_violations() if line.startswith(f"{page}:")]
    assert not found, "\n".join(found)


if __name__ == "__main__":
    print("\n".join(violations()) or "no violations")
