"""The local book that `scripts/course.sh` builds without Quarto (`tools.site`), opened in a real
headless browser (Debian's `chromium`, driven with its own `--dump-dom` and `--screenshot`; a click
is a script added to a copy of the page, whose effects the dumped DOM records).

The site is built in a temporary folder from `_executed/` when every notebook there is newer than its
source and the test chapters below are among them (after `bash scripts/course.sh vmap`), and
otherwise from those chapters, executed here, so that the test suite never executes every chapter.
The pages that are not notebooks (the welcome page, the workshop appendix) are always there.
What the book promises is checked against the chapters' own sources: every solution folded in a
closed `<details>` that opens on a click, every callout one box (collapsed where the chapter says
so) holding all of its code cells, each figure's `fig-alt`, no Jupyter prompts, a sidebar and a
table of contents, links that stay local, and the version lines of the welcome page.

Without a browser the tests skip, except on CI (`CI` set), where they fail.
"""

import os
import posixpath
import re
import shutil
import subprocess
from pathlib import Path

import nbclient
import nbformat
import pytest
import yaml
from bs4 import BeautifulSoup
from PIL import Image

from tools.bibliography import load_bibliography
from tools.book import load_book, pinned_jax_version
from tools.quarto_leftovers import LEFTOVER_PATTERNS
from tools.run_course import kernel_environment
from tools.site import SitePage, build_site, local_links, outline

# More than a few seconds: left out of the fast tier (scripts/test.sh --fast).
pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[1]
TEST_CHAPTERS = ("vmap", "glossary")
"""Executed when `_executed/` is not fresh: vmap draws two figures and has exercises, open and
collapsed callouts with code cells, and glossary links; the glossary page is their target."""
DEFAULT_ALT = "No description has been provided for this image"
PROMPT = re.compile(r"\b(?:In|Out)\s*\[[\d\s]*\]:")
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
    """`_executed/` if each notebook there is newer than its source and TEST_CHAPTERS are among them."""
    executed = ROOT / "_executed"
    pairs = [(path, ROOT / "notebooks" / path.name) for path in executed.glob("*.ipynb")]
    fresh = all(
        source.exists() and path.stat().st_mtime >= source.stat().st_mtime for path, source in pairs
    )
    present = all((executed / f"{name}.ipynb").exists() for name in TEST_CHAPTERS)
    return executed if fresh and present else None


def execute_test_chapters(folder: Path) -> Path:
    """`notebooks/<chapter>.ipynb` of TEST_CHAPTERS executed into `folder`, as course.sh does."""
    for name in TEST_CHAPTERS:
        notebook = nbformat.read(ROOT / "notebooks" / f"{name}.ipynb", as_version=4)
        client = nbclient.NotebookClient(
            notebook, timeout=600, kernel_name="python3", allow_errors=True
        )
        client.execute(cwd=str(ROOT / "notebooks"), env=kernel_environment())
        nbformat.write(notebook, folder / f"{name}.ipynb")
    return folder


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    """(site folder, every page of the book in order, the built ones in order)."""
    executed = fresh_executed() or execute_test_chapters(tmp_path_factory.mktemp("executed"))
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
            if "://" in href or href.startswith(("mailto:", "data:")):
                continue
            target = path if href.startswith("#") else _target(path, href)
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


# --- what the book promises, checked against the chapters' own sources ---------------------

CALLOUT_OPEN = re.compile(r"^:{3,}\s*\{\.callout-(\w+)([^}]*)\}\s*$")
DIV_OPEN = re.compile(r"^:{3,}\s*\S")
DIV_CLOSE = re.compile(r"^:{3,}\s*$")
CODE_FENCE = re.compile(r"^(`{3,})")
MARKDOWN_LINK = re.compile(r"\[([^\]]*)\]\([^)]*\)")

CLICK_SOLUTIONS = """<script>
for (const details of document.querySelectorAll("details")) {
  const summary = details.querySelector(":scope > summary");
  if (summary === null || summary.textContent.trim() !== "Solution") continue;
  const code = details.querySelector(".jp-CodeCell");
  details.dataset.shownBefore = String(code !== null && code.checkVisibility());
  summary.click();
  details.dataset.shownAfter = String(code !== null && code.checkVisibility());
}
</script>"""
"""Clicks every solution's summary, recording whether its code is shown before and after."""


def words(text: str) -> str:
    return " ".join(text.split())


def plain(markdown: str) -> str:
    """Markdown's words as a page shows them: links by their text, no backticks or asterisks."""
    return words(re.sub(r"[`*]", "", MARKDOWN_LINK.sub(r"\1", markdown)))


def page_source(page: SitePage) -> str:
    return (ROOT / page.path).read_text()


def chapter_pages(site) -> list[SitePage]:
    _, _, built = site
    return [page for page in built if page.notebook is not None]


def chapter_callouts(text: str) -> list[dict]:
    """Every callout of a page's source, in order: its kind, title, whether it is collapsed, how many
    code cells it holds (an `eval: false` block is shown as text, not as a cell), its body, and its
    last paragraph of plain prose (None when each has cross-references, math or attributes)."""
    callouts, current, depth, fence = [], None, 0, None
    lines = text.split("\n")
    for index, line in enumerate(lines):
        code = CODE_FENCE.match(line)
        if fence is not None:
            if code and code.group(1) == fence:
                fence = None
            if current is not None:
                current["body"].append(line)
            continue
        if code:
            fence = code.group(1)
            options = []
            for following in lines[index + 1 :]:
                if not following.startswith("#|"):
                    break
                options.append(following)
            if current is not None:
                current["body"].append(line)
                python = line.startswith(f"{fence}{{python")
                shown_only = any(re.match(r"#\|\s*eval:\s*false", o) for o in options)
                current["code_cells"] += python and not shown_only
            continue
        if current is None:
            match = CALLOUT_OPEN.match(line)
            if match:
                title = re.search(r'title="([^"]*)"', match.group(2))
                current = {
                    "kind": match.group(1),
                    "title": title.group(1) if title else None,
                    "collapse": 'collapse="true"' in match.group(2),
                    "code_cells": 0,
                    "body": [],
                    "prose": [],
                }
                depth = 1
            continue
        if DIV_OPEN.match(line):
            depth += 1
        elif DIV_CLOSE.match(line):
            depth -= 1
            if depth == 0:
                current["title"] = current["title"] or current["kind"].capitalize()
                paragraphs = "\n".join(current.pop("prose")).split("\n\n")
                prose = [
                    plain(paragraph)
                    for paragraph in paragraphs
                    if paragraph.strip()
                    and not paragraph.lstrip().startswith(("#", "`", ":", "|"))
                    and not re.search(r"[$@{}]", paragraph)
                ]
                current["last_prose"] = prose[-1] if prose else None
                current["body"] = "\n".join(current["body"])
                callouts.append(current)
                current = None
            continue
        opening = not any(body_line.strip() for body_line in current["body"])
        if current["title"] is None and opening and line.startswith("## "):
            current["title"] = line[3:].strip()
            continue
        current["body"].append(line)
        current["prose"].append(line)
    return callouts


def chapter_sections(text: str) -> list[str]:
    """The ids of a page's level-2 and level-3 headings outside code and callouts."""
    ids, fence, depth = [], None, 0
    for line in text.split("\n"):
        code = CODE_FENCE.match(line)
        if fence is not None:
            fence = None if code and code.group(1) == fence else fence
            continue
        if code:
            fence = code.group(1)
        elif DIV_OPEN.match(line):
            depth += 1
        elif DIV_CLOSE.match(line):
            depth -= 1
        elif depth == 0:
            heading = re.match(r"^#{2,3}\s.*\{#(sec-[\w-]+)", line)
            ids += [heading.group(1)] if heading else []
    return ids


def fig_alts(text: str) -> list[str]:
    """Every figure's `#| fig-alt:` in a page's source."""
    return [yaml.safe_load(value) for value in re.findall(r"^#\|\s*fig-alt:\s*(.+)$", text, re.M)]


def box_title(box) -> str:
    title = box.find("summary") if box.name == "details" else box.select_one(".callout-title")
    return words(title.get_text(" ")) if title is not None else ""


def test_every_solution_is_folded_in_a_closed_details(site, doms):
    checked = 0
    for page in chapter_pages(site):
        solutions = [c for c in chapter_callouts(page_source(page)) if c["title"] == "Solution"]
        folded = [
            details
            for details in doms[page.html_path].find_all("details")
            if details.find("summary") is not None and box_title(details) == "Solution"
        ]
        assert len(folded) == len(solutions), (
            f"{page.path}: {len(folded)} solutions folded in a <details>, "
            f"{len(solutions)} in the chapter"
        )
        for details, solution in zip(folded, solutions, strict=True):
            assert not details.has_attr("open"), f"{page.path}: a solution is open"
            assert len(details.select(".jp-CodeCell")) == solution["code_cells"], page.path
            if "check_" in solution["body"]:  # its checker's verdict is folded with it
                assert "PASSED" in details.get_text(), page.path
        checked += len(solutions)
    assert checked > 0, "no exercise solution in the test chapters"


def test_a_solution_opens_on_a_click(site, browser):
    out, _, _ = site
    page = next(
        page
        for page in chapter_pages(site)
        if any(c["title"] == "Solution" for c in chapter_callouts(page_source(page)))
    )
    original = out / page.html_path
    clicked = original.with_name(f"clicked-{original.name}")
    head, _, tail = original.read_text().rpartition("</body>")
    clicked.write_text(head + CLICK_SOLUTIONS + "</body>" + tail)
    try:
        dom = BeautifulSoup(browser(clicked, "--dump-dom"), "html.parser")
    finally:
        clicked.unlink()
    solutions = dom.find_all("details", attrs={"data-shown-before": True})
    assert solutions, f"{page.path}: no solution to click"
    for details in solutions:
        assert details["data-shown-before"] == "false", "a solution's code is shown before a click"
        assert details.has_attr("open") and details["data-shown-after"] == "true", (
            "a click does not open the solution"
        )


def test_callouts_are_one_box_each_collapsed_where_the_chapter_says(site, doms):
    checked = 0
    for page in chapter_pages(site):
        callouts = chapter_callouts(page_source(page))
        boxes = doms[page.html_path].select(".callout")
        assert len(boxes) == len(callouts), (
            f"{page.path}: {len(boxes)} callout boxes for the chapter's {len(callouts)} callouts"
        )
        for box, callout in zip(boxes, callouts, strict=True):
            where = f"{page.path}, callout {callout['title']!r}"
            assert f"callout-{callout['kind']}" in box["class"], where
            assert box.name == ("details" if callout["collapse"] else "div"), where
            assert not box.has_attr("open"), where
            assert plain(callout["title"]) in box_title(box), where
            assert len(box.select(".jp-CodeCell")) == callout["code_cells"], (
                f"{where}: {len(box.select('.jp-CodeCell'))} code cells inside the box, "
                f"{callout['code_cells']} in the chapter"
            )
            if callout["last_prose"]:
                squashed = "".join(box.get_text().split())  # inline tags add no spaces here
                assert "".join(callout["last_prose"].split()) in squashed, (
                    f"{where}: its last paragraph is outside the box"
                )
        checked += sum(c["code_cells"] > 0 and c["title"] != "Solution" for c in callouts)
    assert checked > 0, "no callout with a code cell (other than a solution) in the test chapters"


def test_figures_have_their_chapters_alt_text(site, doms):
    problems = []
    for path, dom in doms.items():
        for img in dom.find_all("img"):
            if not img.get("alt", "").strip() or img["alt"] == DEFAULT_ALT:
                problems.append(f"{path}: an image with alt={img.get('alt')!r}")
    for page in chapter_pages(site):
        shown = {img.get("alt") for img in doms[page.html_path].find_all("img", src=embedded_png)}
        problems += [
            f"{page.path}: no image has the fig-alt {alt[:50]!r}..."
            for alt in fig_alts(page_source(page))
            if alt not in shown
        ]
    assert problems == []


def test_no_execution_prompts(doms):
    problems = []
    for path, dom in doms.items():
        prompts = dom.select(".jp-InputPrompt, .jp-OutputPrompt")
        problems += [f"{path}: {p.get_text(strip=True)}" for p in prompts if p.get_text(strip=True)]
        problems += [f"{path}: {m}" for m in PROMPT.findall(dom.body.get_text(" "))[:3]]
    assert problems == []


def test_every_page_has_the_books_sidebar(site, doms):
    _, pages, built = site
    order = [page.html_path for page in built]
    parts = {page.part for page in pages if page.part}
    for path, dom in doms.items():
        sidebar = dom.select_one(".course-sidebar")
        assert sidebar is not None, f"{path}: no sidebar"
        assert [_target(path, a["href"]) for a in sidebar.find_all("a", href=True)] == order, path
        text = sidebar.get_text(" ")
        assert all(page.title in text for page in pages), f"{path}: a page is missing"
        assert all(part in text for part in parts), f"{path}: a part is missing"
        current = sidebar.select_one('[aria-current="page"]')
        assert current is not None and _target(path, current["href"]) == path, path


def test_every_page_has_a_table_of_its_sections(site, doms):
    _, _, built = site
    checked = 0
    for page in built:
        sections = chapter_sections(page_source(page))
        if not sections:
            continue
        toc = doms[page.html_path].select_one(".course-toc")
        assert toc is not None, f"{page.path}: no table of contents"
        listed = [a["href"] for a in toc.find_all("a", href=True)]
        missing = [s for s in sections if f"#{s}" not in listed]
        assert missing == [], f"{page.path}: sections missing from its table of contents"
        checked += 1
    assert checked >= 2


def test_links_to_a_built_page_stay_local(doms):
    site = load_book(ROOT).site
    online = [
        f"{path}: {a['href']}"
        for path, dom in doms.items()
        for a in dom.find_all("a", href=True)
        if a["href"].startswith(site)
        and (a["href"][len(site) :].split("#")[0] or "index.html") in doms
    ]
    assert online == []


def test_the_welcome_page_shows_the_versions(doms):
    text = words(doms["index.html"].get_text(" "))
    pin = pinned_jax_version(ROOT)
    assert f"jax=={pin} jaxlib=={pin}" in text, "the pinned version line is missing"
    assert "Executed with jax " in text, "the banner of the executing JAX is missing"
