"""Runs a notebook's code cells as plain Python, in this process, for machines without Jupyter
(`tools.gpu_check` runs each chapter this way on a bare GPU machine).

    python -m tools.notebook_runner notebooks/tour.ipynb

The cells share one namespace and run in order. A cell tagged `raises-exception` (Quarto's
`#| error: true`) may raise, as Quarto and nbmake allow; any other cell that raises stops the run
with status 1, after printing its number and traceback. Where IPython is missing,
`IPython.display` is a stand-in that shows nothing, and the run says so on stderr.
"""

from __future__ import annotations

import json
import os
import sys
import traceback
import types
from pathlib import Path


def code_cells(notebook: Path) -> list[tuple[str, bool]]:
    """A notebook's code cells in order, each with whether it may raise: tagged
    `raises-exception`, which `tools.notebooks` writes for Quarto's `#| error: true`."""
    cells = json.loads(notebook.read_text())["cells"]
    return [
        ("".join(c["source"]), "raises-exception" in c.get("metadata", {}).get("tags", []))
        for c in cells
        if c["cell_type"] == "code"
    ]


def _ipython_stand_in() -> bool:
    """Puts a stand-in `IPython.display` in `sys.modules` where IPython is missing (True then)."""
    try:
        import IPython  # noqa: F401
    except ImportError:
        display = types.ModuleType("IPython.display")
        display.display = lambda *objects, **_: None
        display.Markdown = display.HTML = display.Image = lambda *args, **kwargs: None
        ipython = types.ModuleType("IPython")
        ipython.display = display
        ipython.get_ipython = lambda: None
        sys.modules.update({"IPython": ipython, "IPython.display": display})
        return True
    return False


def run_cells(notebook: Path) -> int:
    """Runs a notebook's code cells in one namespace, in this process; 1 at the first cell that
    raises without `#| error: true`, after printing which cell and its traceback."""
    if _ipython_stand_in():
        print("IPython missing: its display is a stand-in here", file=sys.stderr)
    namespace: dict = {"__name__": "__main__"}
    for number, (source, may_raise) in enumerate(code_cells(notebook), start=1):
        try:
            exec(compile(source, f"<{notebook.name} cell {number}>", "exec"), namespace)
        except Exception:
            if not may_raise:
                print(f"FAILED at code cell {number}", file=sys.stderr)
                traceback.print_exc()
                return 1
    return 0


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: python -m tools.notebook_runner NOTEBOOK")
    # Figures are drawn off screen. Set here, in the runner's own process, never by `run_cells`:
    # a kernel started later from a process holding `Agg` would draw its page without figures.
    os.environ.setdefault("MPLBACKEND", "Agg")
    sys.exit(run_cells(Path(sys.argv[1])))
