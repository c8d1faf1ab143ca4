#!/usr/bin/env bash
# The learner's check: set up (scripts/setup.sh, which ends by importing everything the chosen
# install has: jax and the course package, and torch and pyPLNmodels in the full install), copy
# the exercise notebooks to my-work/ where missing, then check that the course runs here: Python,
# the pinned jax, the course package, and a Jupyter kernel that runs JAX; its last line says how
# to open the notebooks in my-work/ from the course's environment. It passes with your
# answers saved, in my-work/ or in notebooks/: whether notebooks match the chapters is a
# developer's check (scripts/test.sh), not yours. Options go to scripts/setup.sh
# (`bash scripts/check-setup.sh --part1`: Part I alone, no torch). JAXCOURSE_SKIP_SETUP=1 skips
# the set-up step (the tests use it), but not its import check.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "${JAXCOURSE_SKIP_SETUP:-}" != 1 ]; then
    bash scripts/setup.sh "$@"
else
    .venv/bin/python -m tools.install check "$(cat .venv/jaxcourse-install 2>/dev/null || echo full)"
fi
source .venv/bin/activate
python -m tools.learner copy
python -m tools.learner check
