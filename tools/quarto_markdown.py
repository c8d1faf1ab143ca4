"""Quarto Markdown to the Markdown that Jupyter and Colab render, one chapter at a time.

- `@fig-x`, `@sec-x`, `[-@tbl-x]`: the words Quarto would print ("Figure 2.1"), linked to the
  page and anchor of the published book;
- `[@key]`, `@key`, `[-@key]`: author-year text ("(Gangloff 2023)", "Gangloff (2023)") linked to
  the reference; the notebook then ends with a list of what it cites;
- links to `.qmd` pages and relative images: addresses on the published book;
- headings: Quarto's number in front, attributes (`{#sec-x}`, `{.unnumbered}`) removed;
- callouts: a bold title and a block quote (solution callouts dropped from student notebooks), or,
  for the local book (`boxes=True`), the callouts each piece of Markdown lies in
  (`markdown_pieces`), so that `tools.site` draws each callout as one box around all its cells;
  other `:::` divs: their content;
- `$$ ... $$ {#eq-x}`: `\\tag{2.1}` inside the display math; spans, footnotes, table captions
  made plain, except that a span that is only an anchor (`[term]{#gloss-term}`, the glossary's)
  keeps its id as an empty HTML span before its text.

`tools.quarto_leftovers.leftover_syntax` finds what a conversion left behind; the tests run it on
every notebook.
"""

from __future__ import annotations

import posixpath
import re

from tools.book import Book, page_url
from tools.crossref import Page
from tools.qmd import AT_KEY, CODE_FENCE, DIV_FENCE, HEADING, INLINE_CODE, MATH

STUDENT_NOTE = (
    "*Stuck? The checker gives help one step at a time: `CHECKER.hint(1)`, then `CHECKER.hint(2)`, "
    "then `CHECKER.solution()`. The solution is also in the solution notebook (`notebooks/` rather "
    "than `notebooks/student/`) and, folded, on the course website.*"
)
"""`CHECKER` is replaced by the checker the exercise calls (tools/chapter_notebooks.py)."""
SOLUTION_ELSEWHERE = (
    "*Solution: in the solution notebook (`notebooks/` rather than `notebooks/student/`) "
    "and, folded, on the course website.*"
)
KEY = r"[A-Za-z0-9_][\w-]*(?:[:.#$%&+?<>~/][\w-]+)*"
PROTECTED = re.compile(
    rf"{INLINE_CODE.pattern}|{MATH.pattern}|<https?://[^>\s]*>|\]\([^)\s]*(?:\s+\"[^\"]*\")?\)",
    re.DOTALL,
)
BRACKET = re.compile(r"\[([^\[\]]*@[^\[\]]*)\](?![(\[{])")
BRACKET_ITEM = re.compile(rf"^\s*(.*?)(-?)@({KEY})(.*?)\s*$", re.DOTALL)
LINK_TARGET = re.compile(r"^\]\(\s*<?([^)\s>#]*)(#[^)\s>]*)?>?(\s+\"[^\"]*\")?\s*\)$")
IMAGE = re.compile(r"!\[([^\]]*)\]\(([^)\s]+)\)(?:\{([^}]*)\})?")
EQUATION_LABEL = re.compile(r"\$\$[ \t]*\{#(eq-[\w-]+)\}")
TABLE_CAPTION = re.compile(r"^:\s+(.*?)\s*\{#(tbl-[\w-]+)\}\s*$", re.MULTILINE)
SPAN = re.compile(r"(?<![!\]])\[([^\[\]]*)\]\{[^}]*\}")
ANCHOR_SPAN = re.compile(r"(?<![!\]])\[((?:[^\[\]`\n]|`[^`\n]*`)*)\]\{#([\w-]+)\}")
"""A span that is only an anchor (`[term]{#gloss-term}`): its id is kept, even around code."""
LINK_ATTRIBUTES = re.compile(r"(\]\([^)]*\))\{[^}]*\}")
FOOTNOTE = re.compile(r"\^\[([^\[\]]*)\]")
CROSSREF_PREFIXES = ("fig", "tbl", "eq", "sec", "lst")
CALLOUT = re.compile(r"\.callout-(\w+)")


class ChapterConverter:
    """Converts the Markdown cells of one chapter in order, keeping state across cells.

    Callouts can enclose code cells, so whether a code cell is kept (`keeps_code`) depends on
    the Markdown before it; numbered headings are matched to `page.headings` by their text.
    With `boxes=True` a callout is not a block quote: `markdown_pieces` says which callouts each
    piece of a cell lies in, and `open_callouts` which ones a code cell at this point lies in.
    """

    def __init__(self, book: Book, page: Page, *, student: bool = False, boxes: bool = False):
        self.book, self.page, self.student, self.boxes = book, page, student, boxes
        self.cited: list[str] = []
        self._headings = list(page.headings)
        self._divs: list[dict] = []  # open ::: blocks, innermost last
        self._callouts = 0  # how many callouts have opened: each one's number

    # --- inline syntax ------------------------------------------------------------------

    def _target_link(self, label: str, *, bare_number: bool = False) -> str:
        target = self.book.targets.get(label) or self.page.targets.get(label)
        if target is None:
            raise ValueError(f"{self.page.path}: @{label} has no target in the book")
        words = target.text.split(" ", 1)[-1] if bare_number else target.text
        return f"[{words}]({page_url(target.page, site=self.book.site)}#{label})"

    def _citation(self, key: str, *, narrative: bool, year_only: bool = False) -> str:
        reference = self.book.references[key]
        if key not in self.cited:
            self.cited.append(key)
        url = reference.url or f"{page_url(self.page.path, site=self.book.site)}#ref-{key}"
        if year_only:
            words = reference.year
        elif narrative:
            words = f"{reference.names} ({reference.year})"
        else:
            words = f"{reference.names} {reference.year}"
        return f"[{words}]({url})"

    def _kind(self, key: str) -> str | None:
        """'crossref', 'citation' or None (not Quarto syntax, e.g. an e-mail or a decorator)."""
        prefix = key.split("-", 1)[0].lower()
        if "-" in key and prefix in CROSSREF_PREFIXES:
            return "crossref"
        return "citation" if key in self.book.references else None

    def _bracket(self, match: re.Match) -> str:
        items = [BRACKET_ITEM.match(item) for item in match.group(1).split(";")]
        if any(item is None or self._kind(item.group(3)) is None for item in items):
            return match.group(0)  # not a citation: e.g. "[see the @ sign]"
        rendered, parenthesised = [], False
        for item in items:
            prefix, suppress, key, suffix = item.groups()
            if self._kind(key) == "crossref":
                text = self._target_link(key[0].lower() + key[1:], bare_number=bool(suppress))
            else:
                parenthesised = True
                text = self._citation(key, narrative=False, year_only=bool(suppress))
            rendered.append(f"{prefix.strip() + ' ' if prefix.strip() else ''}{text}{suffix}")
        joined = "; ".join(rendered)
        return f"({joined})" if parenthesised else joined

    def _bare(self, match: re.Match) -> str:
        key = match.group(1)
        kind = self._kind(key)
        if (
            kind == "crossref"
        ):  # @Fig-x and @fig-x both print "Figure": the word starts a sentence or not
            return self._target_link(key[0].lower() + key[1:])
        if kind == "citation":
            return self._citation(key, narrative=True)
        return match.group(0)

    def _link_target(self, target: str) -> str:
        match = LINK_TARGET.match(target)
        if match is None or not match.group(1).endswith(".qmd") or "://" in match.group(1):
            return target
        page = posixpath.normpath(posixpath.join(posixpath.dirname(self.page.path), match.group(1)))
        return (
            f"]({page_url(page, site=self.book.site)}{match.group(2) or ''}{match.group(3) or ''})"
        )

    def _image(self, match: re.Match) -> str:
        alt, path, attributes = match.groups()
        if "://" not in path and not path.startswith(("#", "data:")):
            path = self.book.site + posixpath.normpath(
                posixpath.join(posixpath.dirname(self.page.path), path)
            )
        label = re.search(r"#(fig-[\w-]+)", attributes or "")
        caption = f"\n\n*{self._target_link(label.group(1))}: {alt}*" if label else ""
        return f"![{alt}]({path}){caption}"

    def _plain(self, text: str) -> str:
        text = BRACKET.sub(self._bracket, text)
        text = AT_KEY.sub(self._bare, text)
        text = SPAN.sub(r"\1", text)
        return FOOTNOTE.sub(r" (\1)", text)

    def inline(self, text: str) -> str:
        """One paragraph (or caption) with Quarto's inline syntax made plain Markdown."""
        text = EQUATION_LABEL.sub(lambda m: f"\\tag{{{self._target_number(m.group(1))}}} $$", text)
        text = TABLE_CAPTION.sub(lambda m: f"*{self._target_link(m.group(2))}: {m.group(1)}*", text)
        text = LINK_ATTRIBUTES.sub(r"\1", IMAGE.sub(self._image, text))
        text = ANCHOR_SPAN.sub(r'<span id="\2"></span>\1', text)
        pieces, position = [], 0
        for match in PROTECTED.finditer(text):
            pieces.append(self._plain(text[position : match.start()]))
            pieces.append(
                self._link_target(match.group(0))
                if match.group(0).startswith("](")
                else match.group(0)
            )
            position = match.end()
        pieces.append(self._plain(text[position:]))
        return "".join(pieces)

    def code(self, source: str) -> str:
        """A code cell with its cross-references made readable where Jupyter shows them as
        written: in a comment, "Section 2.1 (address)"; in a string (a hidden cell that builds
        Markdown), the Markdown link that Quarto's output would hold."""
        comments = _comment_spans(source)

        def replace(match: re.Match) -> str:
            label = match.group(1)
            if any(start <= match.start() < end for start, end in comments):
                target = self.book.targets.get(label) or self.page.targets.get(label)
                if target is None:
                    raise ValueError(f"{self.page.path}: @{label} has no target in the book")
                return f"{target.text} ({page_url(target.page, site=self.book.site)}#{label})"
            return self._target_link(label)

        return CODE_CROSS_REFERENCE.sub(replace, source)

    def _target_number(self, label: str) -> str:
        return self.page.targets[label].text.split(" ", 1)[-1]

    # --- blocks -------------------------------------------------------------------------

    def _heading(self, level: str, text: str) -> str:
        number = None
        for index, (heading, heading_number) in enumerate(self._headings):
            if heading == text:
                number = heading_number
                del self._headings[: index + 1]
                break
        return f"{level} {number + ' ' if number else ''}{self.inline(text)}"

    def _dropping(self) -> bool:
        return any(div.get("dropped") for div in self._divs)

    def _quote_depth(self) -> int:
        return sum(1 for div in self._divs if div["callout"])

    def _callout_header(self, div: dict, title: str | None) -> tuple[list[str], int]:
        """The bold title that opens a callout's block quote (or the student's note), and its quote depth."""
        div["pending"] = False
        title = title or div["title"] or div["callout"].capitalize()
        if self.student and div["collapse"] and title.strip().lower() == "solution":
            div["dropped"] = True
            return ["", STUDENT_NOTE, ""], self._quote_depth() - 1
        if self.boxes:  # the box shows its title
            div["title"] = self.inline(title)
            return [], self._quote_depth()
        return [f"**{self.inline(title)}**", ""], self._quote_depth()

    def _open_div(self, attributes: str) -> None:
        callout = CALLOUT.search(attributes)
        title = re.search(r'title="([^"]*)"', attributes)
        self._callouts += callout is not None
        self._divs.append(
            {
                "callout": callout.group(1) if callout else None,
                "number": self._callouts,
                "title": title.group(1) if title else None,
                "collapse": 'collapse="true"' in attributes,
                "pending": callout is not None,
                "dropped": False,
            }
        )

    def _pending_callout(self) -> dict | None:
        return self._divs[-1] if self._divs and self._divs[-1].get("pending") else None

    def keeps_code(self) -> bool:
        """Whether a code cell at this point belongs in the notebook (not inside a dropped solution)."""
        return not self._dropping()

    def open_callouts(self) -> tuple[dict, ...]:
        """The callouts open at this point, outermost first: number, kind, title, collapsed."""
        return tuple(
            {
                "number": div["number"],
                "kind": div["callout"],
                "title": div["title"] or div["callout"].capitalize(),
                "collapse": div["collapse"],
            }
            for div in self._divs
            if div["callout"]
        )

    def markdown(self, source: str) -> str:
        """One Markdown cell, converted; '' when nothing of it is left."""
        return _tidy([line for _, line in self._convert(source)])

    def markdown_pieces(self, source: str) -> list[tuple[tuple[dict, ...], str]]:
        """One Markdown cell (with `boxes=True`), converted and cut where a callout opens or
        closes: each non-empty piece with the callouts it lies in (`open_callouts`)."""
        pieces: list[tuple[tuple[dict, ...], list[str]]] = []
        for callouts, line in self._convert(source):
            if pieces and pieces[-1][0] == callouts:
                pieces[-1][1].append(line)
            else:
                pieces.append((callouts, [line]))
        return [(callouts, _tidy(lines)) for callouts, lines in pieces if _tidy(lines)]

    def _convert(self, source: str) -> list[tuple[tuple[dict, ...], str]]:
        """One Markdown cell's lines, each with the callouts it lies in (none unless `boxes`)."""
        out: list[tuple[tuple[dict, ...], str]] = []
        paragraph: list[str] = []
        fence: str | None = None

        def emit(lines: list[str], depth: int | None = None) -> None:
            if self.boxes:
                callouts = self.open_callouts()
                out.extend((callouts, line) for line in lines)
                return
            depth = self._quote_depth() if depth is None else depth
            prefix = "> " * depth
            out.extend(((), (prefix + line).rstrip() if depth else line) for line in lines)

        def flush() -> None:
            if paragraph and not self._dropping():
                emit(self.inline("\n".join(paragraph)).split("\n"))
            paragraph.clear()

        for line in source.split("\n"):
            code = CODE_FENCE.match(line)
            if fence is not None:
                if not self._dropping():
                    emit([line])
                if code and code.group(2).startswith(fence) and not code.group(3).strip():
                    fence = None
                continue
            div = DIV_FENCE.match(line)
            heading = HEADING.match(line)
            pending = self._pending_callout()
            if pending and not line.strip():
                continue
            if pending and not self._dropping():
                emit(*self._callout_header(pending, heading.group(2) if heading else None))
                if heading:
                    continue
            elif pending and heading:  # a callout's title inside a dropped solution
                pending["pending"] = False
                continue
            if code or div or heading or not line.strip():
                flush()
            if code:
                fence = code.group(2)
                if not self._dropping():
                    emit(
                        [
                            code.group(1)
                            + code.group(2)
                            + code.group(3).strip().strip("{}").lstrip(".")
                        ]
                    )
            elif div and div.group(2):
                self._open_div(div.group(2))
            elif div:
                closed = self._divs.pop() if self._divs else None
                if closed and closed["callout"] and not self._dropping():
                    emit([""], 0)
            elif self._dropping():
                continue
            elif heading:
                emit([self._heading(heading.group(1), heading.group(2))])
            elif line.strip():
                paragraph.append(line)
            else:
                emit([""])
        flush()
        pending = self._pending_callout()
        if pending and not self._dropping():  # a callout that opens right before a code cell
            emit(*self._callout_header(pending, None))
        return out


CODE_CROSS_REFERENCE = re.compile(r"(?<![\w/.])@((?:sec|fig|tbl|eq|lst)-[\w-]*\w)")


def _comment_spans(source: str) -> list[tuple[int, int]]:
    """(start, end) offsets of the comments of Python code; the whole text when it does not parse
    as Python (a cell magic), so that a reference there reads as plain text."""
    import io
    import tokenize

    starts = [0]
    for line in source.split("\n"):
        starts.append(starts[-1] + len(line) + 1)
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(source).readline))
    except (tokenize.TokenError, SyntaxError):
        return [(0, len(source))]
    return [
        (starts[t.start[0] - 1] + t.start[1], starts[t.end[0] - 1] + t.end[1])
        for t in tokens
        if t.type == tokenize.COMMENT
    ]


def _tidy(lines: list[str]) -> str:
    """Joins lines, with no run of blank (or blank quoted) lines and none at either end."""
    kept: list[str] = []
    for line in lines:
        blank = not line.strip(" >")
        if blank and (not kept or not kept[-1].strip(" >")):
            continue
        kept.append(line)
    while kept and not kept[-1].strip(" >"):
        kept.pop()
    return "\n".join(kept)
