#!/usr/bin/env bash
# Makes sure a headless Chromium-family browser is installed, for tests/test_site.py (it opens the local
# book in one, and fails on CI without one). Where none of the names that test looks for is on the
# PATH, installs Debian's chromium with apt-get (as root, or with sudo). Used by .ci/run and the workflows.
set -euo pipefail
for name in chromium chromium-browser google-chrome google-chrome-stable; do
    if command -v "$name" >/dev/null 2>&1; then
        echo "Browser for tests/test_site.py: $(command -v "$name")"
        exit 0
    fi
done
sudo=""
if [ "$(id -u)" -ne 0 ]; then
    sudo=sudo
fi
$sudo apt-get update
$sudo apt-get install -y chromium
