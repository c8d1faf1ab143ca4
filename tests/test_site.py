"""The local book that `scripts/course.sh` builds without Quarto (`tools.site`), opened in a real
headless browser (Debian's `chromium`, driven with its own `--dump-dom` and `--screenshot`).

The site is built in a temporary folder from `_executed/` when every notebook there is newer than its
source and the fast chapter below is among them (after `bash scripts/course.sh`), and otherwise from
that one fast chapter with figures, executed here, so that the test suite never executes every
chapter. The pages that are not
notebooks (the welcome page, the workshop appendix) are always there.

Without a browser the tests skip, except on CI (`CI` set), where they fail.
"""

import os
import posixpath
import shutil
import subprocess
from pathlib import Path

import nbclient
import nbformat
import pytest
from bs4 import BeautifulSoup
from PIL import Image

from tools.bibliography import load_bibliography
from tools.quarto_markdown import LEFTOVER_PATTERNS
from tools.site import SitePage, build_site, local_links, outline

# More than a few seconds: left out of the fast tier (scripts/test.sh --fast).
pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[1]
FAST_CHAPTER = "prng"
"""Executed when `_executed/` is not fresh: one of the fastest chapters, and it draws three figures."""
BROWSERS = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")


def find_browser() -> str | None:
    """A Chromium-family browser: `$JAXCOURSE_BROWSER`, else the first of BROWSERS on the PATH."""
    for name in (os.environ.get("JAXCOURSE_BROWSER"), *BROWSERS):
        if name and shutil.which(name):
            return shutil.which(name)
    return None


@pytest.fixture(scope="module")
def browser(tmp_path_factory):
    """A function (page file, *flags) -> the browser's stdout, with a profile of its own."""
    path = find_browser()
    if path is None:
        message = (
            "no headless browser found: install Debian's chromium (apt-get install -y chromium)"
        )
        if os.environ.get("CI"):
            pytest.fail(message + "; CI must have one")
        pytest.skip(message)
    profile = tmp_path_factory.mktemp("browser-profile")

    def run(page: Path, *flags: str) -> str:
        command = [
            path,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            f"--user-data-dir={profile}",
            *flags,
        ]
        result = subprocess.run(
            [*command, page.resolve().as_uri()],
            capture_output=True,
            text=True,
            timeout=180,
            check=True,
        )
        return result.stdout

    return run


def fresh_executed() -> Path | None:
    """`_executed/` if each notebook there is newer than its source and FAST_CHAPTER is among them."""
    executed = ROOT / "_executed"
    pairs = [(path, ROOT / "notebooks" / path.name) for path in executed.glob("*.ipynb")]
    fresh = all(
        source.exists() and path.stat().st_mtime >= source.stat().st_mtime for path, source in pairs
    )
    return executed if fresh and (executed / f"{FAST_CHAPTER}.ipynb").exists() else None


def execute_fast_chapter(folder: Path) -> Path:
    """`notebooks/<FAST_CHAPTER>.ipynb` executed into `folder`, as scripts/course.sh executes it."""
    notebook = nbformat.read(ROOT / "notebooks" / f"{FAST_CHAPTER}.ipynb", as_version=4)
    client = nbclient.NotebookClient(
        notebook, timeout=600, kernel_name="python3", allow_errors=True
    )
    client.execute(cwd=str(ROOT / "notebooks"))
    nbformat.write(notebook, folder / f"{FAST_CHAPTER}.ipynb")
    return folder


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    """(site folder, every page of the book in order, the built ones in order)."""
    executed = fresh_executed() or execute_fast_chapter(tmp_path_factory.mktemp("executed"))
    out = tmp_path_factory.mktemp("site")
    pages = build_site(ROOT, executed, out)
    print(f"\nsite built in {out} from {executed}")
    return out, pages, [page for page in pages if page.built]


@pytest.fixture(scope="module")
def doms(site, browser):
    """The DOM the browser shows for every built page, by its path in the site."""
    out, _, built = site
    return {
        page.html_path: BeautifulSoup(browser(out / page.html_path, "--dump-dom"), "html.parser")
        for page in built
    }


def embedded_png(src: str | None) -> bool:
    return bool(src) and src.startswith("data:image/png;base64,")


def visible_markdown(dom: BeautifulSoup) -> str:
    return "\n".join(cell.get_text("\n") for cell in dom.select(".jp-MarkdownCell"))


def test_every_page_loads_with_its_title(site, doms):
    _, _, built = site
    assert "index.html" in doms and len(built) >= 3
    for page in built:
        dom = doms[page.html_path]
        assert dom.title is not None and dom.title.get_text().startswith(page.title), page.path
        assert dom.find("h1").get_text(" ", strip=True).startswith(page.title), page.path


def test_figures_are_embedded_images(site, doms):
    _, _, built = site
    chapters = [page for page in built if page.notebook is not None]
    assert chapters, "no executed chapter in the site"
    for page in chapters:
        outputs = [
            o
            for c in nbformat.read(page.notebook, as_version=4).cells
            for o in c.get("outputs", [])
        ]
        expected = sum("image/png" in o.get("data", {}) for o in outputs)
        images = [img["src"] for img in doms[page.html_path].find_all("img", src=embedded_png)]
        assert len(images) == expected, (
            f"{page.path}: {len(images)} embedded images, {expected} figures"
        )
        assert all(len(src) > 1000 for src in images), f"{page.path}: an empty image"
    assert any(doms[page.html_path].find("img", src=embedded_png) for page in chapters), (
        "no figure at all"
    )


def test_no_raw_quarto_syntax(site, doms):
    keys = load_bibliography(ROOT, ["resources/references.bib"])
    problems = []
    for path, dom in doms.items():
        text = visible_markdown(dom)
        found = [name for name, pattern in LEFTOVER_PATTERNS.items() if pattern.search(text)]
        found += [f"citation @{key}" for key in keys if f"@{key}" in text]
        code = "\n".join(cell.get_text("\n") for cell in dom.select(".jp-CodeCell .jp-InputArea"))
        found += ["cell option in code"] if LEFTOVER_PATTERNS["cell option"].search(code) else []
        problems += [f"{path}: {what}" for what in found]
    assert problems == []


def test_index_links_every_page_in_book_order(site, doms):
    _, pages, built = site
    contents = doms["index.html"].select(".course-contents a")
    assert [a["href"] for a in contents] == [page.html_path for page in built]
    text = doms["index.html"].select_one(".course-contents").get_text(" ")
    assert all(page.title in text for page in pages), (
        "a page of _quarto.yml is missing from the index"
    )


def _target(page: str, href: str) -> str:
    return posixpath.normpath(posixpath.join(posixpath.dirname(page), href.split("#")[0]))


def test_next_and_previous_links_walk_the_book(site, doms):
    _, _, built = site
    order = [page.html_path for page in built]
    for position, path in enumerate(order):
        nav = doms[path].select_one(".course-nav")
        links = {a["rel"][0]: _target(path, a["href"]) for a in nav.find_all("a")}
        assert links["index"] == "index.html"
        assert links.get("next") == (order[position + 1] if position + 1 < len(order) else None), (
            path
        )
        assert links.get("prev") == (order[position - 1] if position > 0 else None), path


def test_local_links_and_anchors_resolve(site, doms):
    broken = []
    for path, dom in doms.items():
        for a in dom.find_all("a", href=True):
            href = a["href"]
            if "://" in href or href.startswith(("#", "mailto:", "data:")):
                continue
            target = _target(path, href)
            anchor = href.partition("#")[2]
            if target not in doms:
                broken.append(f"{path}: {href}")
            elif anchor and doms[target].find(id=anchor) is None:
                broken.append(f"{path}: {href} (no such anchor)")
    assert broken == []


def test_screenshot_of_the_index(site, browser):
    out, _, _ = site
    shot = out / "screenshot-index.png"
    browser(
        out / "index.html", f"--screenshot={shot}", "--window-size=1200,1400", "--hide-scrollbars"
    )
    print(f"\nscreenshot: {shot}")
    with Image.open(shot) as image:
        assert image.format == "PNG" and image.size == (1200, 1400)
        darkest, lightest = image.convert("L").getextrema()
    assert lightest - darkest > 100, "the screenshot is blank"
    assert shot.stat().st_size > 20_000


def test_outline_lists_parts_and_appendices_in_book_order(tmp_path):
    (tmp_path / "_quarto.yml").write_text(
        "book:\n  chapters:\n    - index.qmd\n    - part: One\n      chapters: [a.qmd, b.qmd]\n"
        "  appendices: [z.qmd]\n"
    )
    assert outline(tmp_path) == [
        (None, "index.qmd"),
        ("One", "a.qmd"),
        ("One", "b.qmd"),
        ("Appendices", "z.qmd"),
    ]


def test_links_to_the_published_book_become_local_where_the_page_is_built():
    site = "https://owner.github.io/course/"
    page = SitePage("chapters/a.qmd", None, "1 A", None, True)
    built = [page, SitePage("index.qmd", None, "Welcome", None, True)]
    text = (
        f'<a href="{site}chapters/a.html#sec-x">1.2</a> <a href="{site}">home</a> '
        f'<a href="{site}chapters/b.html#fig-y">not built</a>'
    )
    assert local_links(text, page, built, site) == (
        f'<a href="a.html#sec-x">1.2</a> <a href="../index.html">home</a> '
        f'<a href="{site}chapters/b.html#fig-y">not built</a>'
    )
