"""The course's BibTeX file as author-year citations and reference-list lines, for notebooks.

A small reader for the subset of BibTeX that `resources/references.bib` uses (`@type{key, field =
{...} | "..." | number}`, LaTeX accents, `{Corporate authors}`); no BibTeX library is installed,
and Quarto's own citeproc is not available outside Quarto. The text follows Pandoc's default style
(Chicago author-date): "(Gangloff 2023)" in parentheses, "Gangloff (2023)" in a sentence.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from pathlib import Path

ENTRY_START = re.compile(r"@(\w+)\s*\{\s*([^,\s]+)\s*,")
FIELD_NAME = re.compile(r"\s*([A-Za-z][\w-]*)\s*=\s*")
ACCENTS = {"'": "\u0301", "`": "\u0300", '"': "\u0308", "^": "\u0302", "~": "\u0303", "c": "\u0327"}
ACCENT = re.compile(r"\\([`'\"^~]|c\s)\s*\{?\\?([A-Za-z])\}?")


@dataclass(frozen=True)
class Reference:
    """One bibliography entry, as plain text: `names` is how a citation names the authors."""

    key: str
    names: str
    authors: str
    year: str
    title: str
    venue: str
    url: str

    def reference_line(self) -> str:
        """The entry of a reference list, as Markdown."""
        parts = [f"{self.authors.rstrip('.')}. {self.year}. *{self.title}*."]
        if self.venue:
            parts.append(f"{self.venue}.")
        if self.url:
            parts.append(f"<{self.url}>")
        return " ".join(parts)


def surname(author: str) -> str:
    """'Gangloff, Hugo' -> 'Gangloff'; 'Hugo Gangloff' -> 'Gangloff'; '{Helmholtz AI}' -> 'Helmholtz AI'."""
    if author.startswith("{") and author.endswith("}"):
        return plain_text(author)
    if "," in author:
        return plain_text(author.split(",")[0])
    return plain_text(author).split()[-1]


def citation_names(authors: list[str]) -> str:
    """'Gangloff', 'Aitchison and Ho', 'Chiquet et al.' (Chicago author-date)."""
    names = [surname(author) for author in authors if author != "others"]
    if len(names) > 2 or (names and "others" in authors):
        return f"{names[0]} et al."
    return " and ".join(names) or "Anonymous"


def author_list(authors: list[str]) -> str:
    """'Chiquet, Julien; Mariadassou, Mahendra' for a reference list; 'others' becomes 'et al.'."""
    names = "; ".join(plain_text(author) for author in authors if author != "others")
    return names + (" et al." if "others" in authors else "")


def _braced(text: str, start: int) -> tuple[str, int]:
    """The text of the {...} group opening at `start` (nested braces kept), and the index after it."""
    depth = 0
    for index in range(start, len(text)):
        depth += {"{": 1, "}": -1}.get(text[index], 0)
        if depth == 0:
            return text[start + 1 : index], index + 1
    raise ValueError(f"unbalanced braces in the bibliography near {text[start : start + 40]!r}")


def _field_value(text: str, start: int) -> tuple[str, int]:
    if text[start] == "{":
        return _braced(text, start)
    if text[start] == '"':
        end = text.index('"', start + 1)
        return text[start + 1 : end], end + 1
    match = re.compile(r"[\w.-]+").match(text, start)
    if match is None:
        raise ValueError(f"bad field value in the bibliography near {text[start : start + 40]!r}")
    return match.group(0), match.end()


def plain_text(latex: str) -> str:
    """LaTeX-escaped BibTeX text as plain Unicode: accents, dashes, `\\#`, braces removed."""
    text = ACCENT.sub(lambda m: m.group(2) + ACCENTS[m.group(1).strip()], latex)
    text = text.replace("\\i", "i").replace("---", "\u2014").replace("--", "\u2013")
    text = re.sub(r"\\([#&%$_])", r"\1", text).replace("{", "").replace("}", "")
    return unicodedata.normalize("NFC", re.sub(r"\s+", " ", text).strip())


def _entry_fields(text: str, start: int) -> tuple[dict[str, str], int]:
    fields: dict[str, str] = {}
    index = start
    while True:
        index = len(text) - len(text[index:].lstrip(" \t\n,"))
        if index >= len(text) or text[index] == "}":
            return fields, index + 1
        name = FIELD_NAME.match(text, index)
        if name is None:
            raise ValueError(f"bad field in the bibliography near {text[index : index + 40]!r}")
        value, index = _field_value(text, name.end())
        fields[name.group(1).lower()] = value


def parse_bibtex(text: str) -> dict[str, Reference]:
    """Every entry of a BibTeX text, by key."""
    references = {}
    position = 0
    while (match := ENTRY_START.search(text, position)) is not None:
        fields, position = _entry_fields(text, match.end())
        venue = fields.get("journal") or fields.get("howpublished") or fields.get("booktitle", "")
        if fields.get("volume"):
            venue += f" {fields['volume']}" + (
                f" ({fields['number']})" if fields.get("number") else ""
            )
        if fields.get("pages"):
            venue += f": {fields['pages']}"
        doi = fields.get("doi", "")
        authors = re.split(r"\s+and\s+", fields.get("author", "").strip())
        references[match.group(2)] = Reference(
            key=match.group(2),
            names=citation_names(authors),
            authors=author_list(authors),
            year=plain_text(fields.get("year", "n.d.")),
            title=plain_text(fields.get("title", "")),
            venue=plain_text(venue),
            url=fields.get("url") or (f"https://doi.org/{doi}" if doi else ""),
        )
    return references


def load_bibliography(root: Path, files: list[str]) -> dict[str, Reference]:
    """The entries of every bibliography file that `_quarto.yml` names."""
    references: dict[str, Reference] = {}
    for name in files:
        references.update(parse_bibtex((root / name).read_text()))
    return references


def reference_list(references: list[Reference]) -> str:
    """A '## References' Markdown section listing `references` sorted by author then year."""
    ordered = sorted(references, key=lambda ref: (ref.names.lower(), ref.year, ref.title.lower()))
    lines = "\n".join(f"- {ref.reference_line()}" for ref in ordered)
    return f"## References\n\n{lines}"
