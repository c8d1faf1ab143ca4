"""The optional extras. `compare`: pyPLNmodels and torch, which only the comparison with pyPLNmodels
needs (Part I and the PLN levels do not; the oaks data ship with the package).

`require_compare()` is called first by every function that imports them, so that a Part I
install (`bash scripts/setup.sh --part1`) gets one clear error saying how to add them, not a bare
`ModuleNotFoundError` from deep inside. `formula`: formulaic, which only
`pln.formula.design_from_formula` needs; `require_formula()` guards it the same way.
"""

from __future__ import annotations

import importlib.util
import sys

COMPARE_MODULES = ("pyPLNmodels", "torch")
"""What the `compare` extra of pyproject.toml installs (with `setuptools<81` for pyPLNmodels)."""

INSTALL_COMPARE = "bash scripts/setup.sh --full` (or `pip install -e '.[compare]'`"
"""The command that installs them, as `require_compare`'s error gives it."""


def _installed(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):  # a finder refused it, or sys.modules holds None
        return False


def compare_installed() -> bool:
    """Whether pyPLNmodels and torch can be imported here."""
    return all(_installed(name) for name in COMPARE_MODULES)


def missing_compare_message(missing, purpose: str = "the comparison with pyPLNmodels") -> str:
    """What to tell a learner whose install lacks `missing` (names from `COMPARE_MODULES`)."""
    missing = list(missing)
    one = len(missing) == 1
    if "google.colab" in sys.modules:  # Colab preinstalls torch; no scripts/ there
        return (
            f"{' and '.join(missing)} {'is' if one else 'are'} not installed, and {purpose} needs "
            f"{'it' if one else 'them'}. Run `%pip install pyPLNmodels 'setuptools<81'` in a cell, "
            "then restart the session (Runtime > Restart session)."
        )
    return (
        f"{' and '.join(missing)} {'is' if one else 'are'} not installed, and {purpose} needs "
        f"{'it' if one else 'them'} (a Part I install leaves out pyPLNmodels and torch). Install "
        "the course's "
        f"`compare` extra: run `{INSTALL_COMPARE} in the course's environment), then restart the "
        "kernel."
    )


def require_compare(purpose: str = "the comparison with pyPLNmodels") -> None:
    """Returns if pyPLNmodels and torch are installed, else raises a clear `ImportError`.

    Raises:
        ImportError: one of them is missing; the message names it, `purpose`, and the command
            that installs them.
    """
    missing = [name for name in COMPARE_MODULES if not _installed(name)]
    if missing:
        raise ImportError(missing_compare_message(missing, purpose))


FORMULA_MODULE = "formulaic"
"""What the `formula` extra of pyproject.toml installs: the formula library behind
`pln.formula.design_from_formula`."""

INSTALL_FORMULA = (
    "pip install formulaic` (or `pip install -e '.[formula]'`, or `bash scripts/setup.sh --full`"
)
"""The commands that install it, as `require_formula`'s error gives them."""


def require_formula(purpose: str = "a model formula") -> None:
    """Returns if formulaic is installed, else raises a clear `ImportError`.

    Raises:
        ImportError: formulaic is missing; the message names `purpose` and how to install it.
    """
    if not _installed(FORMULA_MODULE):
        raise ImportError(
            f"formulaic is not installed, and {purpose} needs it (it is the course's optional "
            f"`formula` extra). Run `{INSTALL_FORMULA}) in the course's environment, then restart "
            "the kernel; or build the covariates without a formula, with `pln.design_matrix`."
        )
