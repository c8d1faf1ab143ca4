"""`tools.words` counts a chapter's main path: prose and shown code outside collapsed callouts,
"Going deeper" boxes and solutions (issue 42, point 2)."""

from __future__ import annotations

from pathlib import Path

from tools import words

ROOT = Path(__file__).resolve().parents[1]

PAGE = """---
title: "Front matter words do not count"
---

## One two {#sec-x-one}

Three four [five](glossary.qmd#gloss-five) `six`.

```{python}
#| echo: false
hidden = "a hidden cell is not read"
```

```{python}
#| label: shown
shown = 1

print(shown)
```

::: {.callout-note collapse="true" title="Going deeper: ten words"}
Collapsed words do not count on the main path.

```{python}
deeper = 2
```
:::

::: {.callout-warning title="Going deeper: an open box is still a detour"}
Detour words.
:::

::: {.callout-tip}
## Solution
Solution words.
:::

:::: {.callout-important}
Seven eight.

::: {.callout-note collapse="true"}
Nested and collapsed.
:::

Nine.
::::
"""


def test_the_main_path_leaves_out_cells_boxes_solutions_and_markup():
    counted = words.count(PAGE)
    # '## One two', 'Three four five `six`.', 'Seven eight.', 'Nine.'
    assert counted.main_words == 9
    assert counted.main_code_lines == 2  # the shown cell's two lines, not the hidden or boxed ones
    # The boxes' words count in the total: 9 + 2 + 3 (heading 'Solution' included) + 3.
    assert counted.total_words == 9 + 9 + 2 + 3 + 3
    assert counted.minutes == 9 / words.WORDS_PER_MINUTE + 2 / words.CODE_LINES_PER_MINUTE


def test_moving_a_paragraph_into_a_collapsed_box_takes_it_off_the_main_path():
    paragraph = "A paragraph of exactly seven words here.\n"
    plain = words.count("## Title\n\n" + paragraph)
    boxed = words.count(
        '## Title\n\n::: {.callout-note collapse="true" title="More"}\n' + paragraph + ":::\n"
    )
    assert plain.main_words == 8 and boxed.main_words == 1  # 'Title': '##' is not a word
    assert plain.total_words == boxed.total_words == 8


def test_the_command_prints_each_page(capsys):
    assert words.main([str(ROOT / "chapters" / "jit.qmd")]) == 0
    line = capsys.readouterr().out.strip()
    counted = words.count((ROOT / "chapters" / "jit.qmd").read_text())
    assert f"main path {counted.main_words} words" in line
    assert f"{counted.total_words} words in all" in line
    assert 0 < counted.main_words < counted.total_words


def test_the_exercises_are_counted_apart_within_the_main_path():
    page = "## Reading\n\nOne two three.\n\n## Exercises {#sec-x-exercises}\n\nFour five.\n\n" + (
        "```{python}\nanswer = None\n```\n"
    )
    counted = words.count(page)
    assert (counted.main_words, counted.main_code_lines) == (7, 1)
    assert (counted.exercise_words, counted.exercise_code_lines) == (3, 1)  # 'Exercises' counts
    assert counted.minutes_before_exercises == 4 / words.WORDS_PER_MINUTE


def test_the_jit_chapter_reads_in_about_half_an_hour_as_it_says():
    """Issue 42: jit's 'What this chapter assumes' promises a main path of about half an hour
    before the exercises; on main before the issue it was 44 minutes by this count."""
    text = (ROOT / "chapters" / "jit.qmd").read_text()
    assert "reads in about half an hour before the exercises" in text
    assert 20 <= words.count(text).minutes_before_exercises <= 35
