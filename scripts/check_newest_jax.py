"""Exit non-zero unless the installed jax and jaxlib are the newest releases on PyPI.

The weekly "Latest JAX" workflow upgrades jax, jaxlib and optax and then runs this: pip can quietly
settle on an older release (no wheel for this Python yet, a dependency conflict), and then the run
would test the wrong JAX while looking green.

    python scripts/check_newest_jax.py            # checks jax and jaxlib
    python scripts/check_newest_jax.py jax optax  # or the packages named
"""

import json
import sys
import urllib.request
from importlib.metadata import version as installed_version

from packaging.version import Version

PACKAGES = ("jax", "jaxlib")


def newest_on_pypi(name: str) -> str:
    """The version PyPI reports as the package's latest release (pre-releases excluded)."""
    with urllib.request.urlopen(f"https://pypi.org/pypi/{name}/json", timeout=60) as response:
        return json.load(response)["info"]["version"]


def check(names, installed=installed_version, newest=newest_on_pypi) -> list[str]:
    """One line per package whose installed version is older than the newest; empty if all are current."""
    stale = []
    for name in names:
        have, latest = installed(name), newest(name)
        print(f"{name}: installed {have}, newest on PyPI {latest}")
        if Version(have) < Version(latest):
            stale.append(f"{name} {have} is installed but {latest} is the newest release on PyPI")
    return stale


def main(argv: list[str], installed=installed_version, newest=newest_on_pypi) -> int:
    stale = check(argv or PACKAGES, installed, newest)
    for line in stale:
        print(f"error: {line}", file=sys.stderr)
    return 1 if stale else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
