#!/usr/bin/env bash
# The developers' and CI's command: set up, lint, check that the notebooks match the chapters, then
# run every test: unit tests, pinned errors, exercise checkers, the Colab reproduction, and every
# notebook executed top to bottom with nbmake.
#
#   bash scripts/test.sh                     # everything, as CI runs it
#   bash scripts/test.sh --fast              # the fast tier: no notebooks, no tests marked slow or
#                                            # network (conftest.py), offline; about a minute
#   bash scripts/test.sh tests/test_jit_errors.py   # only the tests given
#
# The set-up (scripts/setup.sh --full, which needs the package index) runs only when
# requirements*.txt, pyproject.toml, scripts/setup.sh or the install's mode (.venv/jaxcourse-install)
# changed since the last set-up this script ran, or when .venv is missing: the package is
# installed in editable mode, so code changes need no reinstall.
# JAXCOURSE_SKIP_SETUP=1 never runs it; JAXCOURSE_FORCE_SETUP=1 always does.
# The sync check fails once a notebook in notebooks/ is saved with changes. Learners check their
# set-up with `bash scripts/check-setup.sh`, which passes with saved work.
set -euo pipefail
cd "$(dirname "$0")/.."

fast=0
if [ "${1:-}" = "--fast" ]; then
    fast=1
    shift
fi

stamp=.venv/.jaxcourse-setup-inputs
setup_inputs() { # the install's mode too: a .venv switched to Part I (setup.sh --part1) lacks torch
    { cat requirements*.txt pyproject.toml scripts/setup.sh .venv/jaxcourse-install 2>/dev/null || true; } |
        sha256sum | cut -d' ' -f1
}
inputs=$(setup_inputs)
if [ "${JAXCOURSE_SKIP_SETUP:-}" = 1 ]; then
    echo "Set-up skipped (JAXCOURSE_SKIP_SETUP=1)."
elif [ "${JAXCOURSE_FORCE_SETUP:-}" != 1 ] && [ -x .venv/bin/python ] &&
    [ "$(cat "$stamp" 2>/dev/null)" = "$inputs" ]; then
    echo "Set-up skipped: requirements, pyproject.toml and setup.sh are unchanged since the last" \
        "one (JAXCOURSE_FORCE_SETUP=1 runs it)."
else
    bash scripts/setup.sh --full  # the tests need everything, pyPLNmodels and torch included
    setup_inputs >"$stamp"
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
