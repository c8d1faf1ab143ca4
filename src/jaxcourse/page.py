"""The first cell of every chapter: short tracebacks, quiet known warnings, plot style, banner."""

from __future__ import annotations

import contextlib
import io
import warnings

from .environment import environment_line
from .optional import COMPARE_MODULES, missing_compare_message


class Banner(str):
    """A one-line note that Jupyter and Quarto render as Markdown."""

    def _repr_markdown_(self) -> str:
        return f"*{self}*"


def _short_tracebacks() -> None:
    try:
        from IPython import get_ipython
    except ImportError:
        return
    shell = get_ipython()
    if shell is not None:
        with contextlib.redirect_stdout(io.StringIO()):  # %xmode prints its new mode
            shell.run_line_magic("xmode", "Minimal")
        shell.set_custom_exc((ModuleNotFoundError,), _explain_missing_module)


def _explain_missing_module(shell, etype, value, tb, tb_offset=None):
    """A cell's ModuleNotFoundError, as IPython shows it, then, when the module is pyPLNmodels or
    torch (a Part I install has neither), the command that installs them."""
    shell.showtraceback((etype, value, tb), tb_offset=tb_offset)
    name = (getattr(value, "name", None) or "").split(".")[0]
    if name in COMPARE_MODULES:
        print(missing_compare_message([name], "this cell"))


def start_chapter() -> Banner:
    """Configures the page and returns the 'executed with jax X on DEVICE' banner."""
    _short_tracebacks()
    import jax

    jax.config.update("jax_pprint_use_color", False)  # jaxprs as plain text, on pages too
    warnings.filterwarnings("ignore", message="pkg_resources is deprecated")
    import matplotlib

    matplotlib.rcParams.update(
        {"figure.figsize": (7, 4), "figure.dpi": 110, "axes.grid": True, "grid.alpha": 0.3}
    )
    return Banner(environment_line())
