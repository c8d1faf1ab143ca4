#!/usr/bin/env bash
# The developers' and CI's command: set up, lint, check that the notebooks match the chapters, then
# run every test: unit tests, pinned errors, exercise checkers, the Colab reproduction, and every
# notebook executed top to bottom with nbmake.
#
#   bash scripts/test.sh                     # everything, as CI runs it
#   bash scripts/test.sh --fast              # the fast tier: no notebooks, no tests marked slow or
#                                            # network (pyproject.toml), offline; under a minute
#   bash scripts/test.sh tests/test_jit_errors.py   # only the tests given
#
# The set-up (scripts/setup.sh --dev: a learner's full install plus requirements-dev.txt's tests and
# lint) installs only when requirements*.txt, pyproject.toml, scripts/setup.sh or the install's mode
# changed since the last set-up, or when .venv is missing
# (then it needs the package index); otherwise it only checks the imports, offline. The package is
# installed in editable mode, so code changes need no reinstall.
# JAXCOURSE_SKIP_SETUP=1 skips even the check; JAXCOURSE_FORCE_SETUP=1 always installs.
# The sync check fails once a notebook in notebooks/ is saved with changes. Learners check their
# set-up with `bash scripts/check-setup.sh`, which passes with saved work.
set -euo pipefail
cd "$(dirname "$0")/.."

fast=0
if [ "${1:-}" = "--fast" ]; then
    fast=1
    shift
fi

if [ "${JAXCOURSE_SKIP_SETUP:-}" = 1 ]; then
    echo "Set-up skipped (JAXCOURSE_SKIP_SETUP=1)."
else
    bash scripts/setup.sh --dev  # everything, pyPLNmodels and torch included, and the test tools
fi
source .venv/bin/activate # notebook kernels start from this environment too

echo "Lint and format (ruff; 'ruff check --fix . && ruff format .' repairs most of it):"
ruff check --quiet .
ruff format --check --quiet .
echo "ruff: clean."
echo "Notebook sync with the chapters (a developer's check; learners run bash scripts/check-setup.sh):"
python -m tools.notebooks --check

if [ "$fast" = 1 ]; then
    [ "$#" -eq 0 ] && set -- tests
    exec python -m pytest -n 2 --dist loadfile -p no:cacheprovider -m "not slow and not network" "$@"
fi
if [ "$#" -eq 0 ]; then
    set -- tests notebooks
fi
JAXCOURSE_ENFORCE_VERDICTS=1 python -m pytest -n 2 --dist loadfile -p no:cacheprovider \
    --nbmake --nbmake-timeout=600 "$@"
