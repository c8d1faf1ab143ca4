"""The package's layering, as CONTRIBUTING's architecture section states it: imports run one way,
the learner package never imports the build tooling, and no module imports a higher one."""

import ast
import pathlib

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
