"""Quarto syntax left in a generated notebook: what Jupyter and Colab would show as written.

`tools.notebooks` converts Quarto Markdown (`tools.quarto_markdown`); the tests ask
`leftover_syntax` of every generated notebook that nothing survived the conversion.
"""

from __future__ import annotations

import re

from tools.qmd import CODE_FENCE, INLINE_CODE

LEFTOVER_PATTERNS = {
    "cross-reference": re.compile(
        r"(?<![\w/.])-?@(?:sec|fig|tbl|eq|lst|thm|lem|def|exm|exr)-[\w-]"
    ),
    "citation brackets": re.compile(r"\[-?@\w"),
    ".qmd link": re.compile(r"\]\([^)\s]*\.qmd\b"),
    "::: fence": re.compile(r"^\s*(?:>\s*)*:::", re.MULTILINE),
    "{#...} anchor": re.compile(r"\{#[\w-]+"),
    "{.class} attribute": re.compile(r"\{\.[\w-]+"),
    "{-} attribute": re.compile(r"\{-\}"),
    "shortcode": re.compile(r"\{\{<|>\}\}"),
    "executable code fence": re.compile(r"^\s*(?:>\s*)*```+\s*\{", re.MULTILINE),
    "inline footnote": re.compile(r"\^\["),
    "cell option": re.compile(r"^\s*#\|", re.MULTILINE),
}
"""Quarto syntax that Jupyter would show as written, by name."""

CODE_ONLY_PATTERNS = ("cell option", "shortcode", "cross-reference")
"""What a code cell may not hold either: a stub's comment or a string shown as Markdown reaches
the learner as written."""
RAW_PATTERNS = ("executable code fence",)  # found before code is blanked, since it is code


def _without_code(markdown: str) -> str:
    """Markdown with fenced code blocks and inline code blanked: showing syntax there is fine."""
    kept, fence = [], None
    for line in markdown.split("\n"):
        code = CODE_FENCE.match(line.lstrip("> "))
        if fence is None and code and not code.group(3).strip().startswith("{"):
            fence = code.group(2)
            continue
        if fence is not None:
            if code and code.group(2).startswith(fence) and not code.group(3).strip():
                fence = None
            continue
        kept.append(line)
    return INLINE_CODE.sub(" ", "\n".join(kept))


def leftover_syntax(notebook, citation_keys: set[str]) -> list[str]:
    """'cell N: what' for every piece of Quarto syntax left in a notebook's cells."""
    bare_keys = re.compile(
        rf"(?:^|(?<=[\s\[;(\-]))@({'|'.join(map(re.escape, sorted(citation_keys))) or '(?!)'})\b"
    )
    found = []
    for number, cell in enumerate(notebook.cells):
        if cell.cell_type == "code":
            checks = {name: LEFTOVER_PATTERNS[name] for name in CODE_ONLY_PATTERNS}
            text = cell.source
        else:
            checks = dict(LEFTOVER_PATTERNS, **{"citation key": bare_keys})
            text = _without_code(cell.source)
        raw = {name for name in checks if name in RAW_PATTERNS}
        found.extend(
            f"cell {number}: {name}"
            for name, pattern in checks.items()
            if pattern.search(cell.source if name in raw else text)
        )
    return found
