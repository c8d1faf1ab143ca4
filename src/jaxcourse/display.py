"""Show the package's own source code on a page, so chapters never retype it."""

from __future__ import annotations

import inspect
import textwrap


class SourceCode(str):
    """Source text that notebooks and Quarto render as a highlighted Python block."""

    def _repr_markdown_(self) -> str:
        return f"```python\n{self}\n```"


def show_source(obj) -> SourceCode:
    """The source of a function, class or module from `jaxcourse`, for display in a chapter.

    Put it last in a cell: Jupyter and Quarto then render it as a Python code block.
    """
    try:
        source = inspect.getsource(obj)
    except (TypeError, OSError) as error:
        raise TypeError(f"cannot show the source of {obj!r}: {error}") from None
    return SourceCode(textwrap.dedent(source).rstrip())
