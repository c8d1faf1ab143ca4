"""Build-only tooling of the course: run from the repository root, never installed for learners.

Modules (tests/test_architecture.py checks that this list names every one):

The book and its notebooks
    book                the book's configuration (`_quarto.yml`): pages in order, the repository, the site
    qmd                 parsing Quarto pages without Quarto (front matter, code fences, cell options)
    crossref            Quarto's numbering of chapters, sections, figures, tables and equations
    bibliography        `resources/references.bib` as author-year citations and reference lists
    quarto_markdown     Quarto Markdown to the plain Markdown that Jupyter and Colab render
    quarto_leftovers    Quarto syntax left in a generated notebook (what the tests look for)
    quarto_check        static checks of the Quarto project (python -m tools.quarto_check)
    colab               the Open-in-Colab link and the folded setup cell of every notebook
    chapter_notebooks   a chapter's solution and student notebooks, from its .qmd
    solutions           the exercises' reference solutions, for the hint ladder (solutions.json)
    notebooks           the command: every generated notebook (python -m tools.notebooks [--check])
    words               how long a chapter's main path reads (python -m tools.words)
    site                the local HTML book in `_site/` when Quarto is missing (python -m tools.site)
    site_anchors        the ids Quarto gives sections, figures and tables, for the local book

The workshop
    workshop_plan       `workshop/plan.yml`: blocks and schedules
    chapter_structure   a chapter's Python chunks and sections, as the blocks read them
    cell_names          what a cell reads, defines and calls
    block_notebooks     each block's notebook, an excerpt of its chapter
    block_prerequisites what a block's exercises need against what the day has shown
    block_timings       the block notebooks' measured run times (`workshop/timings.json`)
    wrong_answers       the wrong answers the tests feed each checker, in their own words
    instructor_notes    the per-block notes on the instructors' page
    workshop_pages      the workshop pages' generated parts
    blocks              the command (python -m tools.blocks [--time] [--measure])
    room                the room server for a workshop block (python -m tools.room)

Learners, tests and machines
    learner             the learner's copy in `my-work/` and the set-up check (scripts/check-setup.sh)
    install             what scripts/setup.sh installs (Part I or full), torch's index, its checks
    wheelhouse          a wheel folder for a venue without a network (python -m tools.install wheelhouse)
    run_course          scripts/course.sh's execution of the chapters, with progress and a summary
    chapter_tests       what `bash scripts/test.sh --chapter NAME` runs
    gpu_check           the one prepared GPU check: notebooks and the seed's benchmark, in reports/gpu/
    notebook_runner     a notebook's code cells as plain Python, for a machine without Jupyter
"""
