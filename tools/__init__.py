"""Build-only tooling of the course: run from the repository root, never installed for learners.

Modules:
    book            the book's configuration (`_quarto.yml`): pages in order, the repository, the site
    qmd             parsing Quarto pages without Quarto (front matter, code fences, cell options)
    crossref        Quarto's numbering of chapters, sections, figures, tables and equations
    bibliography    `resources/references.bib` as author-year citations and reference lists
    quarto_markdown Quarto Markdown to the plain Markdown that Jupyter and Colab render
    colab           the Open-in-Colab link and the folded setup cell of every notebook
    notebooks       generate `notebooks/` from the chapters (python -m tools.notebooks [--check])
    quarto_check    static checks of the Quarto project (python -m tools.quarto_check)
    site            the local HTML book in `_site/` when Quarto is missing (python -m tools.site)
    learner         the learner's copy in `my-work/` and the set-up check (scripts/check-setup.sh)
    install         what scripts/setup.sh installs (Part I or full), torch's index, its import check
    run_course      scripts/course.sh's execution of the chapters, with progress and a summary
    gpu_check       the one prepared GPU check: notebooks and the seed's benchmark, in reports/gpu/
    notebook_runner a notebook's code cells as plain Python, for a machine without Jupyter
"""
