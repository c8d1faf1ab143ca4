#!/usr/bin/env bash
# Set up the course in .venv/: a virtual environment on Python 3.13 (Colab's) or 3.12, with the
# pinned requirements.txt (what a learner runs) and the course package (pip install -e .). Safe to
# run again: it then only installs what changed. JAXCOURSE_PYTHON=/path/to/python chooses the
# interpreter.
#
#   bash scripts/setup.sh            # the install chosen last time; the first time, the full one
#   bash scripts/setup.sh --part1    # Part I alone: no torch, no pyPLNmodels
#   bash scripts/setup.sh --full     # every chapter: Part II's comparison with pyPLNmodels too
#   bash scripts/setup.sh --dev      # full, plus requirements-dev.txt's tests and lint (test.sh)
#   bash scripts/setup.sh --cuda     # full (or dev), with PyPI's CUDA build of torch, not the CPU one
#   bash scripts/setup.sh --which-python   # only prints the interpreter it would use
#   bash scripts/setup.sh --part1 --wheelhouse DIR   # Part I from a wheel folder, no network
#
# A wheel folder (`python -m tools.install wheelhouse DIR`, from a machine with a network) holds
# every wheel a Part I install needs; with --wheelhouse DIR (or JAXCOURSE_WHEELHOUSE=DIR) every pip
# call here gets `--no-index --find-links DIR` and asks no index.
#
# JAXCOURSE_INSTALL=part1|full|dev does what --part1/--full/--dev do (scripts/course.sh and
# check-setup.sh run this script without options, so `JAXCOURSE_INSTALL=part1 bash
# scripts/check-setup.sh` keeps to Part I); the choice is kept in .venv/jaxcourse-install for the
# next runs. JAXCOURSE_TORCH=cuda
# asks a full install for the CUDA build, as --cuda does. What each install downloads, and where torch comes from (PyTorch's CPU wheel index
# when it is reachable, else PyPI): tools/install.py.
#
# Linux, macOS on Apple Silicon and Windows through WSL work; Intel Macs (no jaxlib wheels for
# the pinned JAX) and Windows outside WSL are sent to Colab.
set -euo pipefail
cd "$(dirname "$0")/.."

mode="${JAXCOURSE_INSTALL:-}"
torch_build="${JAXCOURSE_TORCH:-cpu}"
wheelhouse="${JAXCOURSE_WHEELHOUSE:-}"
which_only=0
while [ "$#" -gt 0 ]; do
    option=$1
    shift
    case "$option" in
        --wheelhouse)
            wheelhouse="${1:?--wheelhouse needs the wheel folder, such as --wheelhouse /media/usb/wheels}"
            shift
            ;;
        --part1) mode=part1 ;;
        --full) mode=full ;;
        --dev) mode=dev ;;
        --cuda)
            torch_build=cuda
            [ "$mode" = dev ] || mode=full
            ;;
        --which-python) which_only=1 ;;
        *)
            echo "Unknown option '$option': use --part1, --full, --dev, --cuda, --wheelhouse DIR or --which-python." >&2
            exit 2
            ;;
    esac
done
case "$mode" in
    "" | part1 | full | dev) ;;
    *)
        echo "JAXCOURSE_INSTALL must be part1, full or dev, not '$mode'." >&2
        exit 2
        ;;
esac

# Where the pinned jax and jaxlib have no wheels, nothing below can work: say so once.
colab="https://colab.research.google.com (the README's Colab links; nothing to install)"
case "$(uname -s)/$(uname -m)" in
    Darwin/x86_64)
        if [ "$(sysctl -n sysctl.proc_translated 2>/dev/null)" = 1 ]; then
            echo "This shell runs under Rosetta on an Apple Silicon Mac: open a native (arm64) terminal and run this script again." >&2
            exit 3
        fi
        echo "This is an Intel Mac: jaxlib $(grep -Eo '^jaxlib==[^ ]+' requirements.txt | cut -d= -f3) has no wheels for it, so the course cannot run here. Use Colab: $colab." >&2
        exit 3
        ;;
    MINGW* | MSYS* | CYGWIN* | Windows*)
        echo "This is Windows outside WSL: the course's scripts and jaxlib's wheels need Linux. Use Colab ($colab) or WSL (https://learn.microsoft.com/windows/wsl/install), then run this script inside WSL." >&2
        exit 3
        ;;
esac

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
if [ "$which_only" = 1 ]; then
    echo "$python"
    exit 0
fi

if [ -z "$mode" ]; then  # no choice made now: the one made last time, else the full install
    mode=$(cat .venv/jaxcourse-install 2>/dev/null || echo full)
    case "$mode" in part1 | dev) ;; *) mode=full ;; esac
fi
"$python" -m tools.install announce "$mode"
source_args=()  # where pip finds packages: the package index, or only the wheel folder
if [ -n "$wheelhouse" ]; then
    if [ "$mode" != part1 ]; then
        echo "A wheel folder holds the Part I install only: run with --part1 --wheelhouse $wheelhouse." >&2
        exit 2
    fi
    if [ ! -f "$wheelhouse/requirements-part1.txt" ]; then
        echo "$wheelhouse is not a wheel folder (no requirements-part1.txt): make one with '.venv/bin/python -m tools.install wheelhouse $wheelhouse' where there is a network." >&2
        exit 2
    fi
    source_args=(--no-index --find-links "$(cd "$wheelhouse" && pwd)")
    echo "From the wheel folder ${source_args[2]}: pip asks no index, nothing is downloaded."
fi

if ! { [ -x .venv/bin/python ] && supported .venv/bin/python; }; then
    echo "Creating .venv with $python ($("$python" --version))"
    rm -rf .venv
    "$python" -m venv .venv
fi

# Nothing to install when what the install is made from (requirements.txt, requirements-dev.txt,
# pyproject.toml, this script, the install's mode and torch build) is what the last finished set-up had: a second run is quick
# and needs no network. JAXCOURSE_FORCE_SETUP=1 installs again anyway.
stamp=.venv/jaxcourse-setup-inputs
inputs=$({ cat requirements.txt requirements-dev.txt pyproject.toml scripts/setup.sh; echo "$mode $torch_build"; } |
    "$python" -c 'import hashlib, sys; print(hashlib.sha256(sys.stdin.buffer.read()).hexdigest())')
if [ "${JAXCOURSE_FORCE_SETUP:-}" != 1 ] && [ "$(cat "$stamp" 2>/dev/null)" = "$inputs" ]; then
    echo "Nothing to install: requirements*.txt, pyproject.toml and setup.sh are unchanged since the" \
        "last set-up (JAXCOURSE_FORCE_SETUP=1 installs again)."
    .venv/bin/python -m tools.install check "$mode"
    exit 0
fi
rm -f "$stamp"

pip=(.venv/bin/python -m pip install --quiet --disable-pip-version-check ${source_args[@]+"${source_args[@]}"})
if [ "$mode" != part1 ]; then
    cuda=""
    [ "$torch_build" = cuda ] && cuda=--cuda
    # The pinned torch from PyTorch's CPU wheel index, or nothing (pip then takes PyPI's with the
    # rest, and tools/install.py has said why and how large it is).
    torch_line=$("$python" -m tools.install torch-args $cuda --python .venv/bin/python)
    if [ -n "$torch_line" ]; then
        read -r -a torch_args <<<"$torch_line"
        "${pip[@]}" "${torch_args[@]}"
    fi
fi
case "$mode" in
    full) "${pip[@]}" -r requirements.txt ;;
    dev) "${pip[@]}" -r requirements-dev.txt ;;  # it includes requirements.txt
    part1)
        "$python" -m tools.install requirements part1 >.venv/requirements-part1.txt
        "${pip[@]}" -r .venv/requirements-part1.txt
        ;;
esac
"${pip[@]}" --no-deps -e .
echo "$mode" >.venv/jaxcourse-install
.venv/bin/python -m tools.install check "$mode"
echo "$inputs" >"$stamp"  # only once the check has passed
