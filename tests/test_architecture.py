"""The package's layering, as CONTRIBUTING's architecture section states it: imports run one way,
the learner package never imports the build tooling, and no module imports a higher one. The
package and the build tools (tools/) have no import cycle, and no module longer than its limit."""

import ast
import pathlib
import re

import pytest

SOURCE = pathlib.Path(__file__).resolve().parents[1] / "src" / "jaxcourse"

LAYERS = {
    "jaxcourse.pln": 1,
    "jaxcourse.bench": 2,
    "jaxcourse.exercises": 3,
}
"""Higher numbers may import lower ones, never the reverse; every other module is a foundation (0)."""


def module_name(path: pathlib.Path) -> str:
    parts = path.relative_to(SOURCE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imported_modules(path: pathlib.Path) -> set[str]:
    """Absolute names of the modules `path` imports (relative imports resolved)."""
    name = module_name(path)
    package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - node.level + 1]
                found.add(".".join(base + ([node.module] if node.module else [])))
            else:
                found.add(node.module)
    return found


def layer(name: str) -> int:
    return max(
        (
            rank
            for prefix, rank in LAYERS.items()
            if name == prefix or name.startswith(prefix + ".")
        ),
        default=0,
    )


MODULES = sorted(SOURCE.rglob("*.py"))


def test_modules_are_found():
    assert len(MODULES) > 20


@pytest.mark.parametrize("path", MODULES, ids=lambda p: module_name(p))
def test_no_module_imports_a_higher_layer_or_the_build_tools(path):
    name = module_name(path)
    for imported in imported_modules(path):
        assert not imported.startswith("tools"), f"{name} imports the build tooling ({imported})"
        if imported.startswith("jaxcourse"):
            assert layer(imported) <= layer(name), (
                f"{name} (layer {layer(name)}) imports {imported} (layer {layer(imported)})"
            )


def test_learner_package_does_not_depend_on_build_libraries():
    """jupytext, nbformat and yaml are the tools' business; chapters never need them."""
    for path in MODULES:
        for imported in imported_modules(path):
            assert imported.split(".")[0] not in {"jupytext", "nbformat", "yaml", "nbconvert"}, (
                module_name(path),
                imported,
            )


# Size and cycles, for the package and for the build tools (issue 38, point 3) -----------------

ROOT = SOURCE.parents[1]
TOOLS = ROOT / "tools"
TOOL_MODULES = sorted(TOOLS.glob("*.py"))

MAX_LINES = {"jaxcourse.exercises": 350, "tools": 400}
"""The longest a module may grow (CONTRIBUTING): a chapter's checkers split into one private
module per exercise past 350 lines; a build tool splits by idea past 400."""


def dotted_name(path: pathlib.Path) -> str:
    """`src/jaxcourse/exercises/vmap/_common.py` -> `jaxcourse.exercises.vmap._common`."""
    base = SOURCE.parent if path.is_relative_to(SOURCE) else ROOT
    parts = path.relative_to(base).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def import_graph(paths: list[pathlib.Path]) -> dict[str, set[str]]:
    """{module: the modules of `paths` it imports}, anywhere in it (an import inside a function
    still makes a cycle, only a hidden one). `from package import name` counts as importing
    `package.name` when that is one of the modules, else `package`."""
    names = {dotted_name(path): path for path in paths}
    graph = {}
    for name, path in names.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        found = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                found.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom):
                module = node.module or ""
                if node.level:
                    base = package.split(".")[: len(package.split(".")) - node.level + 1]
                    module = ".".join(base + ([module] if module else []))
                for alias in node.names:
                    found.add(
                        f"{module}.{alias.name}" if f"{module}.{alias.name}" in names else module
                    )
        graph[name] = {imported for imported in found if imported in names and imported != name}
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Each import cycle once, as the modules along it (depth-first search; a cycle is reported
    from the first of its modules in name order that the search enters)."""
    found, done = [], set()

    def visit(name: str, path: list[str]) -> None:
        if name in path:
            found.append(path[path.index(name) :] + [name])
            return
        if name in done:
            return
        for imported in sorted(graph[name]):
            visit(imported, path + [name])
        done.add(name)

    for name in sorted(graph):
        visit(name, [])
    return found


def test_import_graph_sees_a_cycle():
    """The cycle finder is tested on a graph with one cycle and one that has none."""
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c", "a"]]
    assert cycles({"a": {"b", "c"}, "b": {"c"}, "c": set()}) == []


def test_tools_are_found():
    graph = import_graph(TOOL_MODULES)
    assert len(graph) > 10
    assert "tools.qmd" in graph["tools.crossref"]  # `from tools.qmd import ...`
    assert "tools.book" in graph["tools.colab"]  # `from tools import book`


@pytest.mark.parametrize("modules", [MODULES, TOOL_MODULES], ids=["jaxcourse", "tools"])
def test_no_import_cycle(modules):
    found = cycles(import_graph(modules))
    assert not found, (
        "import cycles (split the shared part into a module both import): "
        + "; ".join(" -> ".join(cycle) for cycle in found)
    )


@pytest.mark.parametrize(
    "path",
    [
        path
        for path in MODULES + TOOL_MODULES
        if any(dotted_name(path).startswith(p) for p in MAX_LINES)
    ],
    ids=dotted_name,
)
def test_no_module_is_too_long(path):
    name = dotted_name(path)
    limit = next(limit for prefix, limit in MAX_LINES.items() if name.startswith(prefix))
    lines = len(path.read_text().splitlines())
    assert lines <= limit, f"{name} is {lines} lines, over {limit}: split it by idea (CONTRIBUTING)"


def test_the_tools_package_lists_every_module():
    """`tools/__init__.py`'s list is where a maintainer looks first: a new module joins it."""
    import tools

    listed = {line.split()[0] for line in tools.__doc__.splitlines() if line.startswith("    ")}
    modules = {path.stem for path in TOOL_MODULES if path.stem != "__init__"}
    assert modules - listed == set(), f"add to tools/__init__.py: {sorted(modules - listed)}"
    assert listed - modules == set(), f"no such module: {sorted(listed - modules)}"


def test_no_tools_module_loads_another_by_name():
    """An import by name at run time (`importlib.import_module("tools...")`) would hide a cycle
    from `test_no_import_cycle`."""
    by_name = re.compile(r"import_module\(\s*f?[\"']tools[.\"']")
    hidden = [p.name for p in TOOL_MODULES if by_name.search(p.read_text())]
    assert hidden == []
    assert by_name.search('importlib.import_module("tools.block_notebooks")')
