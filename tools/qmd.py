"""Parsing Quarto pages and `_quarto.yml` without the Quarto CLI: front matter, code fences, cell
options, the listed pages. Shared by the static checks and by the notebook generator."""

from __future__ import annotations

import re
from pathlib import Path

import yaml

CODE_FENCE = re.compile(r"^(\s*)(`{3,}|~{3,})(.*)$")
CELL_OPTION = re.compile(r"^#\|\s*([A-Za-z0-9_-]+)\s*:\s*(.*?)\s*$")
ID_ATTRIBUTE = re.compile(r"\{[^}\n]*#((?:fig|tbl|sec|eq|lst)-[\w-]+)[^}\n]*\}")
HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*(?:\{([^}]*)\})?\s*$")
DIV_FENCE = re.compile(r"^(:{3,})\s*(.*?)\s*$")
# Quarto citation/cross-reference syntax: @key after start, space, '[', '-', ';' or '('.
AT_KEY = re.compile(r"(?:^|(?<=[\s\[;(\-]))@([A-Za-z0-9_][\w-]*(?:[:.#$%&+?<>~/][\w-]+)*)")
INLINE_CODE = re.compile(r"(`+).*?\1", re.DOTALL)
MATH = re.compile(r"\$\$.*?\$\$|\$[^$\n]+\$", re.DOTALL)
QMD_LINK = re.compile(r"\]\(\s*<?([^)\s>#]+\.qmd)(?:#[^)\s]*)?>?(?:\s+\"[^\"]*\")?\s*\)")


def load_config(root: Path) -> dict:
    """`_quarto.yml` as a dict; raises on a missing or malformed file."""
    config = yaml.safe_load((root / "_quarto.yml").read_text())
    if not isinstance(config, dict):
        raise ValueError("_quarto.yml is not a mapping")
    return config


def flatten_chapters(entries) -> list[str]:
    """The page paths of a `book.chapters` or `book.appendices` list, parts flattened, in order."""
    files: list[str] = []
    for entry in entries or []:
        if isinstance(entry, str):
            files.append(entry)
        elif isinstance(entry, dict):
            if "href" in entry:
                files.append(str(entry["href"]))
            if "file" in entry:
                files.append(str(entry["file"]))
            if isinstance(entry.get("part"), str) and entry["part"].endswith(".qmd"):
                files.append(entry["part"])
            files.extend(flatten_chapters(entry.get("chapters")))
    return files


def listed_pages(root: Path) -> list[str]:
    """Every page that `_quarto.yml` lists (chapters and appendices), as written there."""
    try:
        book = load_config(root).get("book") or {}
    except Exception:  # reported by quarto_check.check_config
        return []
    return flatten_chapters(book.get("chapters")) + flatten_chapters(book.get("appendices"))


def qmd_files(root: Path) -> list[Path]:
    """Every .qmd page of the project (listed or not), except partials and build outputs."""
    skip = {"_book", "_site", "_freeze", "_executed", "node_modules", "site-packages"}

    def belongs(path: Path) -> bool:
        parts = path.relative_to(root).parts
        if path.name.startswith("_") or set(parts) & skip or any(p.startswith(".") for p in parts):
            return False
        # A folder with its own _quarto.yml is another project (e.g. the test fixtures).
        folders = [root.joinpath(*parts[:i]) for i in range(1, len(parts))]
        return not any((folder / "_quarto.yml").exists() for folder in folders)

    return sorted(p for p in root.rglob("*.qmd") if belongs(p))


def split_front_matter(text: str) -> tuple[dict | None, str]:
    """(front matter, body). The front matter is None when absent or unparsable."""
    match = re.match(r"^---[ \t]*\n(.*?)\n---[ \t]*(?:\n|$)", text, re.DOTALL)
    if not match:
        return None, text
    try:
        front = yaml.safe_load(match.group(1))
    except yaml.YAMLError:
        front = None
    return (front if isinstance(front, dict) else None), text[match.end() :]


def split_blocks(text: str) -> tuple[str, list[tuple[str, list[str], int]]]:
    """(prose with fenced blocks blanked out, [(fence info, block lines, first line number)])."""
    prose: list[str] = []
    blocks: list[tuple[str, list[str], int]] = []
    lines = text.split("\n")
    i = 0
    while i < len(lines):
        match = CODE_FENCE.match(lines[i])
        if not match:
            prose.append(lines[i])
            i += 1
            continue
        fence, info, start = match.group(2), match.group(3).strip(), i + 1
        body = []
        i += 1
        while i < len(lines):
            close = CODE_FENCE.match(lines[i])
            if (
                close
                and close.group(2)[0] == fence[0]
                and len(close.group(2)) >= len(fence)
                and not close.group(3).strip()
            ):
                break
            body.append(lines[i])
            i += 1
        blocks.append((info, body, start + 1))
        prose.extend([""] * (len(body) + 2))
        i += 1
    return "\n".join(prose), blocks


def is_python_cell(info: str) -> bool:
    return re.match(r"^\{\s*python\b", info) is not None


def cell_options(body: list[str]) -> dict[str, str]:
    """The `#|` options at the top of one cell, values as written (quotes kept)."""
    options: dict[str, str] = {}
    for line in body:
        match = CELL_OPTION.match(line)
        if not match:
            break
        options[match.group(1)] = match.group(2)
    return options


def option_value(options: dict[str, str], key: str) -> str:
    """One cell option without its YAML quotes ('' when absent)."""
    return options.get(key, "").strip().strip("'\"")


def is_unnumbered(attributes: str | None) -> bool:
    """Whether a heading's `{...}` attributes mark it unnumbered (`.unnumbered` or `-`)."""
    classes = (attributes or "").split()
    return ".unnumbered" in classes or "-" in classes


def heading_id(attributes: str | None) -> str | None:
    """The `#id` among a heading's attributes, if any."""
    for word in (attributes or "").split():
        if word.startswith("#"):
            return word[1:]
    return None


def title_and_attributes(title: str) -> tuple[str, str | None]:
    """A front-matter title such as 'Welcome {.unnumbered}' split into text and attributes."""
    match = re.match(r"^(.*?)\s*\{([^}]*)\}\s*$", title)
    return (match.group(1), match.group(2)) if match else (title, None)


def first_heading(text: str) -> str | None:
    """The text of a page's first level-1 heading outside code blocks, attributes removed."""
    prose, _ = split_blocks(split_front_matter(text)[1])
    for line in prose.split("\n"):
        heading = HEADING.match(line)
        if heading and len(heading.group(1)) == 1:
            return heading.group(2)
    return None


def page_title(text: str) -> str:
    """A page's title as Quarto takes it: the front matter's `title` (without attributes such as
    `{.unnumbered}`), else its first level-1 heading; "" when it has neither."""
    front, _ = split_front_matter(text)
    title, _ = title_and_attributes(str((front or {}).get("title") or "").strip())
    return title or (first_heading(text) or "").strip()
