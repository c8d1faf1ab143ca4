#!/usr/bin/env bash
# Set up the course in .venv/: a virtual environment on Python 3.13 (Colab's) or 3.12, with the
# pinned requirements.txt and the course package (pip install -e .). Safe to run again: it then
# only installs what changed. JAXCOURSE_PYTHON=/path/to/python chooses the interpreter.
# `bash scripts/setup.sh --which-python` only prints the interpreter it would use.
set -euo pipefail
cd "$(dirname "$0")/.."

supported() {  # Python 3.12 or newer that really runs (pyenv shims of absent versions do not)
    "$1" -c 'import sys; sys.exit(sys.version_info[:2] < (3, 12))' >/dev/null 2>&1
}

find_python() {
    local candidate version
    for candidate in "${JAXCOURSE_PYTHON:-}" python3.13 python3.12 python3; do
        if [ -n "$candidate" ] && supported "$candidate"; then
            command -v "$candidate"
            return
        fi
    done
    if command -v pyenv >/dev/null 2>&1; then  # installed by pyenv but not the active version
        for version in $(pyenv versions --bare | grep -E '^3\.1[23]\.[0-9]+$' | sort -rV); do
            candidate="$(pyenv prefix "$version")/bin/python"
            if supported "$candidate"; then
                echo "$candidate"
                return
            fi
        done
    fi
    return 1
}

if ! python=$(find_python); then
    echo "The course needs Python 3.13 or 3.12 (JAX 0.11 and newer need 3.12+); none was found." >&2
    echo "Install one (e.g. 'pyenv install 3.13'), or set JAXCOURSE_PYTHON=/path/to/python3.13." >&2
    exit 1
fi
if [ "${1:-}" = "--which-python" ]; then
    echo "$python"
    exit 0
fi

if ! { [ -x .venv/bin/python ] && supported .venv/bin/python; }; then
    echo "Creating .venv with $python ($("$python" --version))"
    rm -rf .venv
    "$python" -m venv .venv
fi

.venv/bin/python -m pip install --quiet --disable-pip-version-check -r requirements.txt
.venv/bin/python -m pip install --quiet --disable-pip-version-check --no-deps -e .
.venv/bin/python -c 'import platform, jax; print(f"Python {platform.python_version()}, jax {jax.__version__} in .venv")'
