#!/usr/bin/env bash
# Set up and check the set-up (scripts/check-setup.sh, which also copies the exercise notebooks you
# work in to my-work/, only those missing there: your work is never overwritten), then run the course:
# render the book with Quarto when it is installed, otherwise execute the chapters' notebooks into
# _executed/ (tools/run_course.py: one progress display, a table of the chapters at the end) and
# build a local HTML book in _site/ (open _site/index.html). Committed notebooks are never
# regenerated or written here. The installer's and the kernels' messages go to _executed/course.log.
# A chapter whose notebook and course package have not changed since its last successful run is not
# executed again, so a second run with nothing changed takes seconds.
#
#   bash scripts/course.sh              # every chapter (those unchanged since their last run are kept)
#   bash scripts/course.sh prng vmap    # only these and the glossary (chapters executed before stay)
#   bash scripts/course.sh --force      # execute every chapter again, changed or not
#
# JAXCOURSE_SKIP_SETUP=1 skips the set-up step (the tests use it); JAXCOURSE_WITHOUT_QUARTO=1 builds
# the local book even where Quarto is installed.
set -euo pipefail
cd "$(dirname "$0")/.."

force=()
chapters=()
for argument in "$@"; do
    case "$argument" in
        --force) force=(--force) ;;
        -*)
            echo "Unknown option '$argument': the only option is --force." >&2
            exit 2
            ;;
        *) chapters+=("$argument") ;;
    esac
done

mkdir -p _executed
log="$PWD/_executed/course.log"
: >"$log"
echo "Setting up (the installer's messages go to $log)."
# Shown here: the set-up's first line (what it downloads) and the set-up check's own lines.
set +e
bash scripts/check-setup.sh 2>&1 | {
    first=$([ "${JAXCOURSE_SKIP_SETUP:-}" != 1 ] && echo 1 || echo 0)
    problem=0
    while IFS= read -r line; do
        printf '%s\n' "$line" >>"$log"
        case "$line" in
            "SET-UP PROBLEM"*) problem=1 ;;
        esac
        if [ "$first" = 1 ] || [ "$problem" = 1 ] \
            || [[ "$line" =~ ^(Set-up\ OK|Set-up\ check|Your\ work|Copied|Kept|Saved\ changes) ]]; then
            printf '%s\n' "$line"
        fi
        first=0
    done
}
status=${PIPESTATUS[0]}
set -e
if [ "$status" -ne 0 ]; then
    if ! grep -q "^SET-UP PROBLEM" "$log"; then  # the problem is not shown above yet
        echo "The set-up stopped. Its last lines:" >&2
        tail -n 15 "$log" >&2
    fi
    echo "The set-up's messages, all of them: $log" >&2
    exit "$status"
fi
source .venv/bin/activate

if command -v quarto >/dev/null 2>&1 && [ "${JAXCOURSE_WITHOUT_QUARTO:-}" != 1 ]; then
    if [ "${#chapters[@]}" -eq 0 ]; then
        quarto render
    else
        for chapter in "${chapters[@]}"; do
            chapter=$(basename "$chapter" .ipynb)
            quarto render "chapters/${chapter%.qmd}.qmd"
        done
    fi
    exit 0
fi

echo "Quarto not found: executing the notebooks (outputs in _executed/), then building _site/."
run=0
python -m tools.run_course --log "$log" ${force[@]+"${force[@]}"} ${chapters[@]+"${chapters[@]}"} || run=$?
if [ "$run" -eq 2 ]; then  # a chapter name that does not exist: nothing ran
    exit 2
fi
# The book is built again only when something it is built from is newer than it.
newer=""
if [ -f _site/index.html ]; then
    newer=$(find _executed chapters resources tools ./*.qmd _quarto.yml -type f -newer _site/index.html \
        ! -name course.log ! -name .course-state.json ! -path '*/__pycache__/*' 2>/dev/null | head -n 1 || true)
fi
if [ -f _site/index.html ] && [ -z "$newer" ]; then
    echo "The local book is up to date: open $PWD/_site/index.html in a browser."
else
    python -m tools.site --executed _executed --out _site >>"$log" 2>&1
    echo "The local book: open $PWD/_site/index.html in a browser."
fi
if [ "$run" -ne 0 ]; then
    echo "Some chapters stopped on an error (above), so the book leaves them out." >&2
    exit 1
fi
