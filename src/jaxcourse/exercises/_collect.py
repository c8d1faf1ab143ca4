"""A chapter package's checkers, exported without a list: `export_checkers(__name__, globals())`
in its `__init__.py` imports each private module and puts every checker it defines into the
package, so that a new exercise's module needs no `__init__` edit."""

from __future__ import annotations

import importlib
import pkgutil
from typing import Any

from ..checks import is_checker


def export_checkers(package: str, namespace: dict[str, Any]) -> list[str]:
    """Puts into `namespace` (the package's `globals()`) every checker that a private module of
    `package` (`_name.py`, not `_common.py`'s helpers) defines; returns their names, sorted.

    Two modules defining checkers of one name is an error: the package could export only one.
    """
    found: dict[str, str] = {}
    for info in pkgutil.iter_modules(namespace["__path__"]):
        if not info.name.startswith("_") or info.name.startswith("__"):
            continue
        module = importlib.import_module(f"{package}.{info.name}")
        for name, value in vars(module).items():
            if not (is_checker(value) and value.__module__ == module.__name__):
                continue
            if name in found:
                raise ImportError(f"{package}: {found[name]} and {module.__name__} define {name}")
            found[name] = module.__name__
            namespace[name] = value
    return sorted(found)
