"""What a cell of code reads and defines, and which JAX functions it calls."""

from __future__ import annotations

import ast
import builtins
import functools
import symtable

IGNORED = set(dir(builtins)) | {"display", "get_ipython", "In", "Out", "__name__"}


def _defined_by(table: symtable.SymbolTable) -> set[str]:
    return {
        s.get_name()
        for s in table.get_symbols()
        if s.is_assigned() or s.is_imported() or s.is_namespace()
    }


def _late_uses(table: symtable.SymbolTable) -> set[str]:
    """Global names that nested scopes (functions, classes, lambdas) read."""
    used = set()
    for child in table.get_children():
        used |= {s.get_name() for s in child.get_symbols() if s.is_referenced() and s.is_global()}
        used |= _late_uses(child)
    return used


@functools.lru_cache(maxsize=4096)
def _names(code: str) -> tuple[frozenset[str], frozenset[str]]:
    free, defined = names_uncached(code)
    return frozenset(free), frozenset(defined)


def names(code: str) -> tuple[set[str], set[str]]:
    """(names the code reads before defining them, names it defines at the top level); see
    `names_uncached`. Cached: `select` asks about every chunk of a chapter many times."""
    free, defined = _names(code)
    return set(free), set(defined)


def names_uncached(code: str) -> tuple[set[str], set[str]]:
    """(names the code reads before defining them, names it defines at the top level).

    Statements are read in order: `key, subkey = split(key)` reads `key`, and a function reads
    the globals its body uses. Builtins and IPython's names are left out; code Python cannot
    parse (a cell magic) reads and defines nothing.
    """
    code = "\n".join(line for line in code.split("\n") if not line.lstrip().startswith(("%", "!")))
    try:
        tree = ast.parse(code)
    except SyntaxError:
        return set(), set()
    whole = _defined_by(symtable.symtable(code, "<cell>", "exec"))
    defined: set[str] = set()
    free: set[str] = set()
    simple = (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Expr, ast.Return, ast.Delete)
    for statement in tree.body:
        table = symtable.symtable(ast.unparse(statement), "<statement>", "exec")
        # Comprehension variables are local to it (Python 3.12 inlines comprehensions, so the
        # symbol table shows them at the top level).
        local = {
            n.id
            for c in ast.walk(statement)
            if isinstance(c, ast.comprehension)
            for n in ast.walk(c.target)
            if isinstance(n, ast.Name)
        }
        binds = _defined_by(table) - local
        for symbol in table.get_symbols():
            name = symbol.get_name()
            if symbol.is_referenced() and (isinstance(statement, simple) or name not in binds):
                if name not in defined and name not in local:
                    free.add(name)
        free |= _late_uses(table) - whole - defined
        defined |= binds
    return free - IGNORED, defined


# --- what a solution calls ----------------------------------------------------------------

JAX_ROOTS = {"jax", "jnp", "lax"}
SHORT_FORMS = (("jax.numpy.", "jnp."), ("jax.lax.", "lax."))


def _dotted(node: ast.AST) -> str | None:
    """'jax.random.split' for that attribute chain, shortened to `jnp.`/`lax.`; None when the
    chain does not start at jax, jnp or lax."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not (isinstance(node, ast.Name) and node.id in JAX_ROOTS and parts):
        return None
    name = ".".join([node.id, *reversed(parts)])
    for long, short in SHORT_FORMS:
        if name.startswith(long):
            name = short + name.removeprefix(long)
    return name


def jax_calls(code: str) -> set[str]:
    """The JAX functions a piece of code calls: `jax.`, `jnp.` and `lax.` attribute chains that
    are called, used as a decorator or passed to a call (`partial(jax.jit, ...)`), constants and
    dtypes left out."""
    found = set()
    for node in ast.walk(ast.parse(code)):
        candidates = []
        if isinstance(node, ast.Call):
            candidates = [node.func, *node.args, *(k.value for k in node.keywords)]
        elif isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            candidates = list(node.decorator_list)
        found |= {name for name in map(_dotted, candidates) if name and _is_function(name)}
    return found


@functools.cache
def _is_function(name: str) -> bool:
    """Whether a `jax.`/`jnp.`/`lax.` name is a function (not a constant such as `jnp.nan`, nor a
    dtype such as `jnp.float32`); a name JAX does not have counts as one, so that it is reported."""
    import importlib

    root, *attributes = name.split(".")
    value = importlib.import_module({"jnp": "jax.numpy", "lax": "jax.lax"}.get(root, root))
    for attribute in attributes:
        value = getattr(value, attribute, None)
        if value is None:
            return True
    return callable(value) and not isinstance(value, type)


def jax_references(code: str) -> set[str]:
    """Every `jax.`/`jnp.`/`lax.` attribute chain the code names (comments and text aside)."""
    try:
        tree = ast.parse(
            "\n".join(line for line in code.split("\n") if not line.lstrip().startswith(("%", "!")))
        )
    except SyntaxError:
        return set()
    names = set()
    for node in ast.walk(tree):
        name = _dotted(node) if isinstance(node, ast.Attribute) else None
        if name:
            names.add(name)
            names |= {name.rsplit(".", k)[0] for k in range(1, name.count("."))}
    return names


def numpy_has(name: str) -> bool:
    """Whether a `jnp.` function is NumPy's too (what the course assumes its readers know)."""
    import numpy

    return name.startswith("jnp.") and hasattr(numpy, name.removeprefix("jnp."))
