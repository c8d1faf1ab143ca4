#!/usr/bin/env bash
# Set up and check the set-up (scripts/check-setup.sh, which also copies the exercise notebooks you
# work in to my-work/, only those missing there: your work is never overwritten), then run the course:
# render the book with Quarto when it is installed, otherwise execute the chapters' notebooks into
# _executed/ and build a local HTML book in _site/ (open _site/index.html). Committed notebooks are
# never regenerated or written here.
#
#   bash scripts/course.sh              # every chapter
#   bash scripts/course.sh prng vmap    # only these (chapters executed before stay in _site/)
#
# JAXCOURSE_SKIP_SETUP=1 skips the set-up step (the tests use it); JAXCOURSE_WITHOUT_QUARTO=1 builds
# the local book even where Quarto is installed.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/check-setup.sh
source .venv/bin/activate

notebooks=()
for chapter in "$@"; do
    chapter=$(basename "$chapter" .ipynb)
    chapter=${chapter%.qmd}
    if [ ! -f "notebooks/$chapter.ipynb" ]; then
        echo "No chapter named '$chapter' (the names are those of notebooks/*.ipynb)." >&2
        exit 2
    fi
    notebooks+=("notebooks/$chapter.ipynb")
done
if [ "${#notebooks[@]}" -eq 0 ]; then
    notebooks=(notebooks/*.ipynb)
fi

if command -v quarto >/dev/null 2>&1 && [ "${JAXCOURSE_WITHOUT_QUARTO:-}" != 1 ]; then
    if [ "$#" -eq 0 ]; then
        quarto render
    else
        for notebook in "${notebooks[@]}"; do
            quarto render "chapters/$(basename "$notebook" .ipynb).qmd"
        done
    fi
    exit 0
fi

echo "Quarto not found: executing the notebooks (outputs in _executed/), then building _site/."
mkdir -p _executed
failed=()
for notebook in "${notebooks[@]}"; do
    echo "== $notebook"
    if ! python -m jupyter nbconvert --to notebook --execute \
        --ExecutePreprocessor.timeout=900 --output-dir _executed "$notebook"; then
        failed+=("$notebook")
        rm -f "_executed/$(basename "$notebook")"  # a partial run is not shown in the book
    fi
done
python -m tools.site --executed _executed --out _site
echo "The local book: open $PWD/_site/index.html in a browser."
if [ "${#failed[@]}" -gt 0 ]; then
    echo "These notebooks stopped on an error (see above), so the book leaves them out: ${failed[*]}" >&2
    exit 1
fi
