#!/usr/bin/env bash
# Set up and run every test: unit tests, pinned errors, exercise checkers, notebook sync,
# and every notebook executed top to bottom with nbmake.
set -euo pipefail
cd "$(dirname "$0")/.."
python -m pip install --quiet --disable-pip-version-check -r requirements.txt
python -m pip install --quiet --disable-pip-version-check --no-deps -e .
python -m jaxcourse.notebooks --check
JAXCOURSE_ENFORCE_VERDICTS=1 python -m pytest -n 2 --dist loadfile -p no:cacheprovider -p no:benchmark --nbmake --nbmake-timeout=600 tests notebooks
