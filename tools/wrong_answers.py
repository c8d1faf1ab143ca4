"""The wrong answers the course's tests feed each checker, read from the tests: what each one
teaches (the wrong answer's docstring, else the hint the checker must give), and its code.

The tests are tests/test_*exercises*.py and tests/test_*wrong_answers*.py. A test parametrised over
(wrong answer, hint) cases gives one wrong answer per case; any other test that calls the checker
and asserts a hint fragment gives one, described by its docstring. Test names are never used: the
instructor notes quote what a wrong answer teaches, not what its test is called."""

from __future__ import annotations

import ast
import functools
import re
from dataclasses import dataclass
from pathlib import Path

from tools.chapter_structure import Chapter
from tools.workshop_plan import ROOT

TEST_FILES = ("test_*exercises*.py", "test_*wrong_answers*.py")


@dataclass(frozen=True)
class WrongAnswer:
    hint: str
    """A fragment the checker's message must contain (the tests assert it)."""
    doc: str = ""
    """The wrong answer's docstring (or its test's), first paragraph, in one line."""
    code: str = ""
    """Its code: the function's source, or the expression the test passes."""

    @property
    def plain(self) -> str:
        """What it teaches, in words: its docstring; else its code when it is one short line,
        else that the checker names it."""
        if self.doc:
            return self.doc
        if self.code and "\n" not in self.code and len(self.code) <= 80:
            return f"`{self.code}`"
        return "an answer the checker names"

    def markdown(self) -> str:
        """One line: what it teaches and what the checker's hint says."""
        return f"{self.plain}; the checker's hint says \u201c{self.hint}\u201d."


def _checker_of(chapter: Chapter, section_id: str) -> str | None:
    """The checker an exercise section calls (its last call)."""
    section = chapter.section(section_id)
    calls = []
    for chunk in chapter.chunks:
        if section.start < chunk.start < section.end:
            calls += re.findall(r"(?<![\w.])(?:\w+\.)?(check_\w+)\(", chunk.code)
    return calls[-1] if calls else None


def _doc(node: ast.AST | None) -> str:
    """The first paragraph of a docstring, in one line, without its final full stop."""
    doc = ast.get_docstring(node) if isinstance(node, (ast.FunctionDef, ast.ClassDef)) else None
    return " ".join((doc or "").split("\n\n")[0].split()).rstrip(".")


def _fragments(node: ast.AST) -> list[str]:
    """Hint fragments a test asserts: `"..." in verdict.message`, or the last string argument
    of an `assert...` helper."""
    found = []
    for n in ast.walk(node):
        if (
            isinstance(n, ast.Compare)
            and isinstance(n.ops[0], ast.In)
            and isinstance(n.left, ast.Constant)
            and isinstance(n.left.value, str)
        ):
            found.append(n.left.value)
        elif isinstance(n, ast.Call) and getattr(n.func, "id", "").startswith("assert"):
            strings = [
                a.value for a in n.args if isinstance(a, ast.Constant) and isinstance(a.value, str)
            ]
            found += strings[-1:]
    return [f for f in found if f.strip() and "no answer yet" not in f]


def _code(answer: ast.AST, definitions: dict, text: str) -> str:
    """A wrong answer's code: the source of the function or class it names, else the expression."""
    if isinstance(answer, ast.Name) and answer.id in definitions:
        node = definitions[answer.id]
        start = min([node.lineno, *(d.lineno for d in node.decorator_list)])
        lines = text.split("\n")[start - 1 : node.end_lineno]
        return "\n".join(lines)
    return ast.unparse(answer)


def _parametrized(node: ast.FunctionDef, definitions: dict, text: str) -> list[WrongAnswer]:
    """The wrong answers of a test parametrised over (wrong answer, hint) cases."""
    found = []
    for decorator in node.decorator_list:
        if not (isinstance(decorator, ast.Call) and "parametrize" in ast.unparse(decorator.func)):
            continue
        if len(decorator.args) < 2 or not isinstance(decorator.args[1], (ast.List, ast.Tuple)):
            continue
        for case in decorator.args[1].elts:
            items = case.elts if isinstance(case, ast.Tuple) else getattr(case, "args", [])
            hints = [
                i.value for i in items if isinstance(i, ast.Constant) and isinstance(i.value, str)
            ]
            answer = next(
                (
                    i
                    for i in items
                    if not (isinstance(i, ast.Constant) and isinstance(i.value, str))
                ),
                None,
            )
            if answer is None or not hints:
                continue
            definition = definitions.get(answer.id) if isinstance(answer, ast.Name) else None
            found.append(WrongAnswer(hints[-1], _doc(definition), _code(answer, definitions, text)))
    return found


@functools.lru_cache(maxsize=64)
def _parsed(path: Path) -> tuple[ast.Module, str]:
    text = path.read_text()
    return ast.parse(text), text


def wrong_answers(checker: str, root: Path = ROOT) -> list[WrongAnswer]:
    """Every wrong answer the tests feed `checker`, in file order, each hint once."""
    found: list[WrongAnswer] = []
    paths = sorted({p for pattern in TEST_FILES for p in (root / "tests").glob(pattern)})
    for path in paths:
        tree, text = _parsed(path)
        definitions = {
            n.name: n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.ClassDef))
        }
        for node in definitions.values():
            if not (isinstance(node, ast.FunctionDef) and node.name.startswith("test_")):
                continue
            if not re.search(rf"\b{checker}\b", ast.unparse(node)):
                continue
            cases = _parametrized(node, definitions, text)
            if not cases and _fragments(node):
                cases = [_unparametrized(node, text)]
            for case in cases:
                _add(found, case)
    return found


def _unparametrized(node: ast.FunctionDef, text: str) -> WrongAnswer:
    """The wrong answer of a test that defines one function and checks it: described by that
    function's docstring, else the test's."""
    inner = next((n for n in node.body if isinstance(n, ast.FunctionDef)), None)
    code = _code(ast.Name(inner.name), {inner.name: inner}, text) if inner else ""
    code = "\n".join(line[inner.col_offset :] for line in code.split("\n")) if inner else ""
    return WrongAnswer(_fragments(node)[0], _doc(inner) or _doc(node), code)


def _add(found: list[WrongAnswer], case: WrongAnswer) -> None:
    """Adds a wrong answer unless its hint is there already; one described in words replaces
    one that is not."""
    if "no answer yet" in case.hint:
        return
    for index, known in enumerate(found):
        if known.hint == case.hint:
            if case.doc and not known.doc:
                found[index] = case
            return
    found.append(case)


def stuck_points(checker: str, root: Path = ROOT) -> list[tuple[str, str]]:
    """(what the wrong answer teaches, the fragment its hint must contain), for each wrong answer
    of `checker`: where people get stuck, as the tests pin it."""
    return [(w.plain, w.hint) for w in wrong_answers(checker, root)]
