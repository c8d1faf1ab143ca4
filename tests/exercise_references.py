"""The chapters' reference solutions as Python objects, for tests that try every checker at once.

Each exercise's solution lives once, in its chapter (`src/jaxcourse/exercises/solutions.json`
holds a copy). `reference_call(checker_name, mesh)` runs that code, without its top-level
statements that call no checker (prints, plots), in a namespace made from the chapter's import
cells and, for each name still missing, the code that defines it: another solution of the chapter
first, else the chapter's first cell that defines it (never a stub). The checker itself is
replaced by a recorder, so the call returns the arguments the solution passes to its checker,
the answer first. The sharding chapters' `mesh` is the test session's mesh (4 CPU devices).
"""

from __future__ import annotations

import ast
import builtins
import functools
import re
from pathlib import Path

from jaxcourse import ladder

ROOT = Path(__file__).resolve().parents[1]
_BLOCK = re.compile(r"^```\{python\}\n(.*?)^```\s*$", re.MULTILINE | re.DOTALL)
_START = re.compile(r"^.*start_chapter.*$", re.MULTILINE)
_CONFIG = re.compile(r"^.*jax\.config\.update\(\s*['\"]jax_num_cpu_devices.*$", re.MULTILINE)


def _cells(chapter: str) -> list[str]:
    """The chapter's code cells that do not fail on purpose, without device set-up and page
    set-up; the stubs (which raise NotImplementedError) last."""
    text = (ROOT / "chapters" / f"{chapter}.qmd").read_text()
    cells = [
        _START.sub("", _CONFIG.sub("", cell))
        for cell in _BLOCK.findall(text)
        if "#| error: true" not in cell
    ]
    return sorted(cells, key=lambda cell: "NotImplementedError" in cell)


def _checker_statements_only(code: str) -> str:
    """`code` without its top-level expressions that call no checker (prints, displays)."""
    tree = ast.parse(code)
    tree.body = [
        node
        for node in tree.body
        if not isinstance(node, ast.Expr) or "check_" in ast.unparse(node)
    ]
    return ast.unparse(tree)


def _defines(code: str, name: str) -> bool:
    for node in ast.walk(ast.parse(code)):
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)) and node.name == name:
            return True
        if isinstance(node, (ast.Import, ast.ImportFrom)) and any(
            (alias.asname or alias.name.split(".")[0]) == name for alias in node.names
        ):
            return True
        if isinstance(node, ast.Name) and node.id == name and isinstance(node.ctx, ast.Store):
            return True
    return False


class _Recorder:
    """Stands for the chapter's checkers (and its `exercises` module): records each call."""

    def __init__(self):
        self.calls: dict[str, tuple] = {}

    def __getattr__(self, name: str):
        if not name.startswith("check_"):
            raise AttributeError(name)
        return lambda *args, **kwargs: self.calls.setdefault(name, args)


def _run(code: str, namespace: dict, sources: list[str], used: set, recorder: _Recorder) -> None:
    """Runs `code`; each missing name is first defined from `sources`, then `code` runs again."""
    for _ in range(20):
        for name in set(re.findall(r"\b(check_\w+)\b", code)):
            namespace[name] = getattr(recorder, name)
        namespace["exercises"] = recorder
        try:
            exec(code, namespace)
            return
        except NameError as error:
            index = next(
                (
                    i
                    for i, source in enumerate(sources)
                    if i not in used and _defines(source, error.name)
                ),
                None,
            )
            if index is None:
                raise
            used.add(index)
            _run(sources[index], namespace, sources, used, recorder)
    raise RuntimeError(f"too many missing names in {code[:80]!r}")


@functools.cache
def reference_call(checker_name: str, mesh=None) -> tuple:
    """The arguments the chapter's solution passes to `checker_name` (the answer first)."""
    from IPython.display import display

    solution = ladder.all_solutions()[checker_name]
    chapter = solution["chapter"]
    others = [
        _checker_statements_only(other["code"])
        for name, other in ladder.all_solutions().items()
        if other["chapter"] == chapter and name != checker_name
    ]
    cells = _cells(chapter)
    imports = [
        cell
        for cell in cells
        if all(re.match(r"(import |from |#|\s|\)|$)", line) for line in cell.splitlines())
    ]
    recorder = _Recorder()
    namespace: dict = {"display": display}
    for cell in imports:
        exec(cell, namespace)
    if mesh is not None:
        namespace["mesh"] = mesh
    code = _checker_statements_only(solution["code"])
    sources, used = others + cells, set()
    for name in _free_names(code):  # names the solution's functions read when called
        if name not in namespace and not hasattr(builtins, name):
            index = next(
                (i for i, source in enumerate(sources) if i not in used and _defines(source, name)),
                None,
            )
            if index is not None:
                used.add(index)
                _run(sources[index], namespace, sources, used, recorder)
    recorder.calls.clear()  # what the code run so far passed to checkers (stubs) does not count
    _run(code, namespace, sources, used, recorder)
    return recorder.calls[checker_name]


def _free_names(code: str) -> list[str]:
    """The names `code` reads and never binds itself (no assignment, parameter, definition or
    import of that name anywhere in it), in order of first appearance."""
    nodes = list(ast.walk(ast.parse(code)))
    bound = {
        node.id
        for node in nodes
        if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load)
    }
    bound |= {node.arg for node in nodes if isinstance(node, ast.arg)}
    bound |= {node.name for node in nodes if isinstance(node, (ast.FunctionDef, ast.ClassDef))}
    bound |= {
        (alias.asname or alias.name.split(".")[0])
        for node in nodes
        if isinstance(node, (ast.Import, ast.ImportFrom))
        for alias in node.names
    }
    names = [
        node.id
        for node in nodes
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load) and node.id not in bound
    ]
    return list(dict.fromkeys(names))
