"""The book's settings, read from the files that own them: the repository and the published site
from `_quarto.yml`'s `book.repo-url`, the JAX version from `requirements.txt`; and `load_book`,
everything a chapter's conversion to a notebook needs to know about the other pages.

`book.repo-url` is the one place that names the repository: Quarto needs it there for the site's
repository links anyway, so every other user (Colab badges, the notebooks' setup cell, the site
URL, the README, checked by tests/test_notebook_text.py) derives from it instead of repeating it.
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass
from pathlib import Path

from tools.bibliography import Reference, load_bibliography
from tools.crossref import Page, Target, all_targets, number_book
from tools.qmd import load_config

ROOT = Path(__file__).resolve().parents[1]
"""The repository root (tools/ sits at the top of the repository)."""


def course_version(root: Path = ROOT) -> str:
    """The course package's version, `[project].version` in pyproject.toml."""
    return tomllib.loads((root / "pyproject.toml").read_text())["project"]["version"]


REF = f"v{course_version()}"
"""The git ref that Colab opens notebooks at and installs the course package from: the release
tag of pyproject's version, which never moves (README, "Cutting a release", says how to make it)."""

GITHUB_URL = re.compile(r"^https://github\.com/([\w.-]+)/([\w.-]+?)(?:\.git)?/?$")


def repository(root: Path = ROOT) -> str:
    """The course's GitHub repository as 'owner/name', from `_quarto.yml`'s `book.repo-url`."""
    url = str((load_config(root).get("book") or {}).get("repo-url", ""))
    match = GITHUB_URL.match(url)
    if match is None:
        raise ValueError(
            f"_quarto.yml: book.repo-url must be https://github.com/OWNER/NAME, got {url!r}"
        )
    return f"{match.group(1)}/{match.group(2)}"


def site_url(root: Path = ROOT) -> str:
    """Where GitHub Pages publishes the book: https://OWNER.github.io/NAME/ (with the slash)."""
    owner, name = repository(root).split("/")
    return f"https://{owner.lower()}.github.io/{name}/"


def page_url(page: str, root: Path = ROOT, *, site: str | None = None) -> str:
    """The published address of one page ('chapters/jit.qmd' -> SITE/chapters/jit.html)."""
    base = site if site is not None else site_url(root)
    return base + re.sub(r"\.qmd$", ".html", page.removeprefix("./"))


def pinned_jax_version(root: Path = ROOT) -> str:
    """The exact jax version that `requirements.txt` pins (and jaxlib with it)."""
    text = (root / "requirements.txt").read_text()
    pins = dict(re.findall(r"^(jax|jaxlib)==(\S+)\s*$", text, re.MULTILINE))
    if set(pins) != {"jax", "jaxlib"} or pins["jax"] != pins["jaxlib"]:
        raise ValueError(f"requirements.txt must pin jax and jaxlib to one version, found {pins}")
    return pins["jax"]


@dataclass(frozen=True)
class Book:
    """What converting a chapter needs to know about the whole book."""

    repository: str
    site: str
    pages: dict[str, Page]
    targets: dict[str, Target]
    references: dict[str, Reference]


def load_book(root: Path = ROOT) -> Book:
    """The book at `root`: its repository and site, Quarto's numbering, its bibliography."""
    config = load_config(root)
    pages = number_book(root)
    bibliography = config.get("bibliography") or []
    files = [bibliography] if isinstance(bibliography, str) else list(bibliography)
    return Book(
        repository=repository(root),
        site=site_url(root),
        pages={page.path: page for page in pages},
        targets=all_targets(pages),
        references=load_bibliography(root, files),
    )
