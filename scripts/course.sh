#!/usr/bin/env bash
# Set up (scripts/setup.sh), then run the course: render the book with Quarto when it is installed, otherwise
# regenerate the notebooks from the chapters and execute every one of them in place.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
source .venv/bin/activate
python -m jaxcourse.notebooks
if command -v quarto >/dev/null 2>&1; then
    quarto render
else
    echo "Quarto not found: executing the notebooks instead (outputs in _executed/)."
    mkdir -p _executed
    for notebook in notebooks/*.ipynb; do
        echo "== $notebook"
        python -m jupyter nbconvert --to notebook --execute \
            --ExecutePreprocessor.timeout=900 --output-dir _executed "$notebook"
    done
fi
