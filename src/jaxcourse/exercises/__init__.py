"""Exercise checkers, one module (or package) per chapter: `from jaxcourse.exercises import jit as exercises`.

Every checker is made by `checks.exercise_checker`, which gives it a hint ladder
(`checker.hint(n)`, `checker.solution()`, see `jaxcourse.ladder`); `all_checkers()` finds them all.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable

from ..checks import is_checker


def all_checkers() -> dict[str, Callable]:
    """Every chapter's checkers: {"<chapter module>.<checker name>": checker}, in name order.

    A checker is counted once, in the chapter module that exports it (a chapter split into a
    package defines its checkers in private submodules and exports them, `_collect`).
    """
    found = {}
    for module_info in pkgutil.iter_modules(__path__):
        if module_info.name.startswith("_"):
            continue
        module = importlib.import_module(f"{__name__}.{module_info.name}")
        for name, value in sorted(vars(module).items()):
            defined_here = getattr(value, "__module__", "").split("._")[0] == module.__name__
            if is_checker(value) and defined_here:
                found[f"{module_info.name}.{name}"] = value
    return found
