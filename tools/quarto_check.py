"""Static checks of the Quarto book, without the Quarto CLI.

Usage, from the repository root: `python -m tools.quarto_check [--root DIR]`; exits 1 and lists the
problems if any.

Each `check_*` function takes the project root and returns a list of problems (strings, each
naming the file). `all_problems` runs them all. The checks: `_quarto.yml` parses and is a book;
the chapter list and `chapters/*.qmd` agree; every `@fig-`/`@sec-`/`@tbl-` reference has a target;
cell options (`#|` lines) use known keys; figure cells have a caption and alt text; links to
`.qmd` files resolve; every page has a title; every citation is in the bibliography.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

from tools.qmd import (
    AT_KEY,
    ID_ATTRIBUTE,
    INLINE_CODE,
    MATH,
    QMD_LINK,
    cell_options,
    is_python_cell,
    listed_pages,
    load_config,
    page_title,
    qmd_files,
    split_blocks,
    split_front_matter,
)

KNOWN_CELL_OPTIONS = frozenset(
    {
        "label",
        "fig-cap",
        "fig-alt",
        "fig-subcap",
        "fig-align",
        "fig-env",
        "fig-pos",
        "fig-width",
        "fig-height",
        "fig-dpi",
        "fig-format",
        "fig-column",
        "tbl-cap",
        "tbl-subcap",
        "tbl-colwidths",
        "tbl-column",
        "echo",
        "eval",
        "include",
        "output",
        "error",
        "warning",
        "message",
        "code-fold",
        "code-summary",
        "code-overflow",
        "code-line-numbers",
        "layout",
        "layout-ncol",
        "layout-nrow",
        "column",
        "classes",
        "cap-location",
        "lst-label",
        "lst-cap",
        "filters",
        "html-table-processing",
    }
)
"""Cell options Quarto documents for ```{python} cells (computations: Jupyter)."""

CROSSREF_PREFIXES = ("fig", "sec", "tbl")
NON_CITATION_PREFIXES = ("fig", "sec", "tbl", "eq", "lst", "thm", "lem", "def", "exm", "exr")

BIB_KEY = re.compile(r"^\s*@\w+\s*\{\s*([^,\s]+)\s*,", re.MULTILINE)


def _relative(root: Path, path: Path) -> str:
    return path.relative_to(root).as_posix()


def _prose_without_code(prose: str) -> str:
    return MATH.sub(" ", INLINE_CODE.sub(" ", prose))


# --- checks -------------------------------------------------------------------------------


def check_config(root: Path) -> list[str]:
    """`_quarto.yml` exists, parses, and describes a book with chapters."""
    try:
        config = load_config(root)
    except FileNotFoundError:
        return ["_quarto.yml: missing"]
    except Exception as error:  # yaml.YAMLError, ValueError
        return [f"_quarto.yml: does not parse: {error}"]
    problems = []
    project = config.get("project") or {}
    if not isinstance(project, dict) or project.get("type") != "book":
        problems.append("_quarto.yml: project.type is not 'book'")
    book = config.get("book")
    if not isinstance(book, dict) or not book.get("chapters"):
        problems.append("_quarto.yml: no book.chapters")
    return problems


def check_chapter_list(root: Path) -> list[str]:
    """Every listed page exists, and every `chapters/*.qmd` (not `_*`) is listed."""
    listed = listed_pages(root)
    problems = [
        f"_quarto.yml: lists {page}, which does not exist"
        for page in listed
        if not (root / page).is_file()
    ]
    normalised = {Path(page).as_posix().removeprefix("./") for page in listed}
    for path in sorted((root / "chapters").glob("*.qmd")):
        rel = _relative(root, path)
        if not path.name.startswith("_") and rel not in normalised:
            problems.append(f"{rel}: not listed in _quarto.yml")
    return problems


def crossref_targets(root: Path) -> set[str]:
    """Every `fig-`/`tbl-`/`sec-`/... identifier defined anywhere in the book."""
    targets: set[str] = set()
    for path in qmd_files(root):
        prose, blocks = split_blocks(path.read_text())
        targets.update(ID_ATTRIBUTE.findall(prose))
        for info, body, _ in blocks:
            targets.update(ID_ATTRIBUTE.findall(info))
            if is_python_cell(info):
                label = cell_options(body).get("label", "").strip("'\"")
                if label:
                    targets.add(label)
    return targets


def _at_keys(text: str) -> list[tuple[str, int]]:
    """(key, line number) of every `@key` in the prose of a page."""
    _, body = split_front_matter(text)
    offset = text.count("\n", 0, len(text) - len(body))
    prose, _ = split_blocks(body)
    found = []
    for number, line in enumerate(_prose_without_code(prose).split("\n"), start=offset + 1):
        # A URL or e-mail address is not a citation: AT_KEY needs a space or bracket before '@'.
        found.extend((match.group(1), number) for match in AT_KEY.finditer(line))
    return found


def check_crossrefs(root: Path) -> list[str]:
    """Every `@fig-`, `@sec-` and `@tbl-` reference has a target somewhere in the book."""
    targets = crossref_targets(root)
    problems = []
    for path in qmd_files(root):
        for key, line in _at_keys(path.read_text()):
            if key.split("-", 1)[0] in CROSSREF_PREFIXES and "-" in key and key not in targets:
                problems.append(f"{_relative(root, path)}:{line}: @{key} has no target")
    return problems


def _python_cells(root: Path):
    """(page, line number, `#|` options) of every python cell of the project."""
    for path in qmd_files(root):
        for info, body, line in split_blocks(path.read_text())[1]:
            if is_python_cell(info):
                yield path, line, cell_options(body)


def check_cell_options(root: Path) -> list[str]:
    """Cell options are known Quarto keys."""
    return [
        f"{_relative(root, path)}:{line}: unknown cell option '{key}'"
        for path, line, options in _python_cells(root)
        for key in options
        if key not in KNOWN_CELL_OPTIONS
    ]


def check_figure_cells(root: Path) -> list[str]:
    """Every cell labelled `fig-…` has a caption (`fig-cap`) and alt text (`fig-alt`)."""
    problems = []
    for path, line, options in _python_cells(root):
        label = options.get("label", "").strip("'\"")
        if label.startswith("fig-"):
            for key in ("fig-cap", "fig-alt"):
                if not options.get(key, "").strip():
                    problems.append(f"{_relative(root, path)}:{line}: figure {label} has no {key}")
    return problems


def check_links(root: Path) -> list[str]:
    """Markdown links to `.qmd` files resolve relative to the page that links."""
    problems = []
    for path in qmd_files(root):
        prose, _ = split_blocks(path.read_text())  # front matter kept: line numbers stay right
        for number, line in enumerate(INLINE_CODE.sub(" ", prose).split("\n"), start=1):
            for target in QMD_LINK.findall(line):
                if "://" in target:
                    continue
                resolved = (
                    (root / target.lstrip("/"))
                    if target.startswith("/")
                    else (path.parent / target)
                )
                if not resolved.is_file():
                    problems.append(
                        f"{_relative(root, path)}:{number}: link to {target} does not resolve"
                    )
    return problems


def check_titles(root: Path) -> list[str]:
    """Every page has a title: in its front matter, or as its first heading, a level-1 one (as
    Quarto takes it; `# Welcome {.unnumbered}` is how a book's index stays unnumbered)."""
    problems = []
    for path in qmd_files(root):
        if not page_title(path.read_text()):
            problems.append(
                f"{_relative(root, path)}: no title (front matter, or a first heading '# ...')"
            )
    return problems


def bibliography_keys(root: Path) -> tuple[set[str], list[str]]:
    """(keys of every bibliography that `_quarto.yml` names, problems finding them)."""
    try:
        bibliography = load_config(root).get("bibliography") or []
    except Exception:
        return set(), []
    files = [bibliography] if isinstance(bibliography, str) else list(bibliography)
    keys: set[str] = set()
    problems = []
    for name in files:
        path = root / name
        if not path.is_file():
            problems.append(f"_quarto.yml: bibliography {name} does not exist")
            continue
        keys.update(BIB_KEY.findall(path.read_text()))
    return keys, problems


def check_citations(root: Path) -> list[str]:
    """Every `@key` citation (not a cross-reference) is in the bibliography."""
    keys, problems = bibliography_keys(root)
    for path in qmd_files(root):
        for key, line in _at_keys(path.read_text()):
            if key.split("-", 1)[0] in NON_CITATION_PREFIXES and "-" in key:
                continue
            if key not in keys:
                problems.append(
                    f"{_relative(root, path)}:{line}: citation @{key} is not in the bibliography"
                )
    return problems


TABLE_ROW = re.compile(r"^\s*\|")
TABLE_SEPARATOR = re.compile(r"^\s*\|(\s*:?-+:?\s*\|)+\s*$")


def check_tables(root: Path) -> list[str]:
    """Every pipe table starts with a header row and a separator row (`|---|`). Rows that follow
    a blank line without them are not a table: a blank line inside a table renders the rest of it
    as a paragraph of literal pipes."""
    problems = []
    for path in qmd_files(root):
        prose, _ = split_blocks(path.read_text())  # front matter kept: line numbers stay right
        lines = prose.split("\n")
        for index, line in enumerate(lines):
            starts_a_table = TABLE_ROW.match(line) and (
                index == 0 or not TABLE_ROW.match(lines[index - 1])
            )
            if starts_a_table and not (
                index + 1 < len(lines) and TABLE_SEPARATOR.match(lines[index + 1])
            ):
                problems.append(
                    f"{_relative(root, path)}:{index + 1}: table rows without a header and "
                    "separator row (a blank line inside a table?)"
                )
    return problems


CHECKS = (
    check_config,
    check_chapter_list,
    check_crossrefs,
    check_cell_options,
    check_figure_cells,
    check_links,
    check_titles,
    check_citations,
    check_tables,
)


def all_problems(root: Path) -> list[str]:
    """Every problem that any check finds (only the config check when `_quarto.yml` is broken)."""
    config_problems = check_config(root)
    if any("missing" in p or "does not parse" in p for p in config_problems):
        return config_problems
    return [problem for check in CHECKS for problem in check(root)]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", type=Path, default=Path.cwd(), help="the repository root")
    args = parser.parse_args(argv)
    problems = all_problems(args.root)
    for problem in problems:
        print(problem)
    if problems:
        print(f"{len(problems)} problem(s) in the Quarto project.")
        return 1
    print(f"Quarto project OK: {len(qmd_files(args.root))} pages checked.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
