#!/usr/bin/env bash
# Set up (scripts/setup.sh), then run every test: unit tests, pinned errors, exercise checkers,
# notebook sync, the Colab reproduction, and every notebook executed top to bottom with nbmake.
# Arguments, if any, replace the default test paths: `bash scripts/test.sh tests/test_jit_errors.py`.
# This is the developers' and CI's command: its sync check fails once a notebook in notebooks/ is saved
# with changes. Learners check their set-up with `bash scripts/check-setup.sh`, which passes with saved work.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
source .venv/bin/activate  # notebook kernels start from this environment too
echo "Notebook sync with the chapters (a developer's check; learners run bash scripts/check-setup.sh):"
python -m tools.notebooks --check
if [ "$#" -eq 0 ]; then
    set -- tests notebooks
fi
JAXCOURSE_ENFORCE_VERDICTS=1 python -m pytest -n 2 --dist loadfile -p no:cacheprovider \
    --nbmake --nbmake-timeout=600 "$@"
