#!/usr/bin/env bash
# The developers' and CI's command: set up, lint, check that the notebooks match the chapters, then
# run every test: unit tests, pinned errors, exercise checkers, the Colab reproduction, and every
# chapter's solution notebook executed top to bottom with nbmake (a student notebook's cells, and
# a workshop block's, run in it; see below).
#
#   bash scripts/test.sh                     # everything, as CI runs it
#   bash scripts/test.sh --fast              # the fast tier: no notebooks, no tests marked slow or
#                                            # network (pyproject.toml), offline, the exercise
#                                            # checkers' tests included; under two minutes
#   bash scripts/test.sh --chapter vmap      # one chapter's tests, its notebooks (solution, student,
#                                            # workshop blocks) and the checks a chapter change can
#                                            # break (tools/chapter_tests.py); --list prints them
#   bash scripts/test.sh tests/test_jit_errors.py   # only the tests given
#
# Every mode lints (ruff), type-checks the package (mypy, configured in pyproject.toml) and checks
# that the notebooks match the chapters first. Arguments after the options go to pytest.
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
chapter=""
list=0
while [ "$#" -gt 0 ]; do
    case "$1" in
        --fast) fast=1; shift ;;
        --chapter) chapter="${2:?--chapter needs the name of a chapter, such as vmap}"; shift 2 ;;
        --list) list=1; shift ;;
        *) break ;;
    esac
done

if [ "${JAXCOURSE_SKIP_SETUP:-}" = 1 ]; then
    echo "Set-up skipped (JAXCOURSE_SKIP_SETUP=1)."
else
    bash scripts/setup.sh --dev  # everything, pyPLNmodels and torch included, and the test tools
fi
source .venv/bin/activate # notebook kernels start from this environment too

if [ -n "$chapter" ]; then
    mapfile -t selected < <(python -m tools.chapter_tests "$chapter")
    [ "${#selected[@]}" -gt 0 ] || exit 2  # tools.chapter_tests said why
    if [ "$list" = 1 ]; then
        printf '%s\n' "${selected[@]}"
        exit 0
    fi
    set -- "${selected[@]}" "$@"
elif [ "$list" = 1 ]; then
    echo "--list goes with --chapter NAME" >&2
    exit 2
fi

echo "Lint and format (ruff; 'ruff check --fix . && ruff format .' repairs most of it):"
ruff check --quiet .
ruff format --check --quiet .
echo "ruff: clean."
echo "Types (mypy over src/jaxcourse; settings in pyproject.toml):"
mypy
echo "Notebook sync with the chapters (a developer's check; learners run bash scripts/check-setup.sh):"
python -m tools.notebooks --check

if [ "$fast" = 1 ]; then
    [ "$#" -eq 0 ] && set -- tests
    exec python -m pytest -n 2 --dist loadfile --no-loadscope-reorder -p no:cacheprovider -m "not slow and not network" "$@"
fi
network_pid=""
if [ "$#" -eq 0 ]; then
    # Everything. The tests marked network (the Colab runtime's, an online wheel folder's) mostly
    # wait on the package index, for minutes: they run as a process of their own beside the two
    # CPU-bound workers instead of holding one of them, at the lowest CPU priority, so that their
    # unpacking and notebook take only the cycles the workers leave (they have minutes to
    # spare; the workers set the run's length).
    network_log=$(mktemp)
    nice -n 19 python -m pytest -p no:cacheprovider -m network tests >"$network_log" 2>&1 &
    network_pid=$!
    # The chapters' solution notebooks, first (the longest items start first:
    # --no-loadscope-reorder keeps this order, where pytest-xdist would start the files with the
    # most tests first and the notebooks, one test each, last; conftest.py's scheduler runs the
    # exercise checkers' test files as one unit, after the notebooks). A student
    # notebook's code cells are its solution notebook's in the same order, less the solutions
    # (plus its summary cell), so it is checked without being run again: its solution notebook
    # runs every one of its cells, and checks that each stub, run before its solution, gets
    # 'not yet' (checks.exercise_summary); tests/test_generated_notebooks.py checks that no cell
    # of it reads a name only a solution defines; tools.notebooks --check (above) that it is the
    # one generated from the chapter. A workshop block's notebooks are not run either: the
    # block's cells are cells of its chapter's solution notebook, in its order, reading the same
    # definitions (tests/test_block_subsets.py proves it); --chapter NAME still runs them.
    # --durations=10: the slowest ten items, for whoever keeps the run under its 15 minutes.
    set -- notebooks/*.ipynb tests -m "not network" --durations=10
fi
status=0
JAXCOURSE_ENFORCE_VERDICTS=1 python -m pytest -n 2 --dist loadfile --no-loadscope-reorder -p no:cacheprovider \
    --nbmake --nbmake-timeout=600 "$@" || status=$?
if [ -n "$network_pid" ]; then
    network_status=0
    wait "$network_pid" || network_status=$?
    echo "The tests marked network, run beside the rest:"
    cat "$network_log"
    rm -f "$network_log"
    [ "$status" -ne 0 ] || status=$network_status
fi
exit "$status"
