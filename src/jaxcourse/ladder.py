"""Hint ladders: help short of the answer, one step at a time, only when asked for.

Every checker carries its exercise's ladder. A learner who is stuck asks for the first hint,
then the second, and only then for the reference solution:

    check_apply_boundary.hint(1)    # a nudge: where to start
    check_apply_boundary.hint(2)    # the shape of the answer, or the trap most people hit
    check_apply_boundary.solution() # the chapter's reference solution

The hints live on each checker, given where it is defined: `@exercise_checker(hints=(...))`.
The solutions live once, in the chapters; `tools/solutions.py` copies them, with the name of the
exercise whose heading calls each checker ("Exercise 1 (a shared weight matrix)"), into
`exercises/solutions.json`, which this module reads.
"""

from __future__ import annotations

import functools
import importlib.resources
import json
from collections.abc import Callable
from typing import Any, NamedTuple, Protocol, cast


class HelpUsed(NamedTuple):
    """The help a learner asked for on one exercise in this session."""

    hints: int = 0
    """The highest hint number shown."""
    solution: bool = False
    """Whether the reference solution was shown."""


_USED: dict[str, HelpUsed] = {}
"""{exercise: the help shown for it in this session} (read by `jaxcourse.room`)."""

_LISTENERS: list[Callable[[str], None]] = []
"""Called with the exercise's name each time a hint or the solution is shown; one that raises is
ignored."""


def help_used(exercise: str) -> HelpUsed:
    """The help shown in this session for `exercise` (as its verdicts name it)."""
    return _USED.get(exercise, HelpUsed())


def exercise_name(checker: Callable) -> str:
    """The name of the exercise `checker` checks, as its chapter's heading gives it: "Exercise 1
    (a shared weight matrix)" (from solutions.json); the checker's own name if no chapter
    exercise calls it (tests/test_one_source.py fails on such a checker)."""
    name = getattr(checker, "__name__", "?")
    return all_solutions().get(name, {}).get("exercise", name)


def _note(checker: Callable, hints: int = 0, solution: bool = False) -> None:
    exercise = exercise_name(checker)
    before = help_used(exercise)
    _USED[exercise] = HelpUsed(max(before.hints, hints), before.solution or solution)
    for listener in list(_LISTENERS):
        try:
            listener(exercise)
        except Exception:  # reporting is optional; the hint is shown all the same
            pass


class Help(NamedTuple):
    """One rung of a ladder: shown as Markdown in a notebook and as plain text elsewhere."""

    title: str
    body: str
    code: str = ""

    def __str__(self) -> str:
        return "\n".join(part for part in (self.title, self.body, self.code.rstrip()) if part)

    def __repr__(self) -> str:
        return str(self)

    def _repr_markdown_(self) -> str:
        code = f"\n\n```python\n{self.code.rstrip()}\n```" if self.code else ""
        return f"**{self.title}** {self.body}{code}"


def hints_for(checker: Callable) -> tuple[str, ...]:
    """The hints of `checker`, as `@exercise_checker(hints=...)` gave them (() if none)."""
    return tuple(getattr(checker, "__hints__", ()))


@functools.cache
def all_solutions() -> dict[str, dict[str, str]]:
    """Every exercise's reference solution and name, keyed by checker name (solutions.json):
    {"check_x": {"chapter": ..., "exercise": "Exercise 1 (...)", "code": ...}}."""
    resource = importlib.resources.files("jaxcourse.exercises") / "solutions.json"
    try:
        return json.loads(resource.read_text())
    except FileNotFoundError:
        return {}


def hint(checker: Callable, n: int = 1) -> Help:
    """Hint `n` (1, 2, ...) of the exercise that `checker` checks, and what to ask for next."""
    name = getattr(checker, "__name__", "this checker")
    hints = hints_for(checker)
    if not hints:
        return Help(f"No hints for {name}.", f"Ask for the solution: {name}.solution().")
    if isinstance(n, bool) or not isinstance(n, int) or not 1 <= n <= len(hints):
        return Help(
            f"{name} has hints 1 to {len(hints)}.",
            f"Ask for one of them, e.g. {name}.hint(1); you asked for hint {n!r}.",
        )
    _note(checker, hints=n)
    following = (
        f"Still stuck? {name}.hint({n + 1})."
        if n < len(hints)
        else f"Still stuck? {name}.solution() shows the reference solution."
    )
    return Help(f"Hint {n} of {len(hints)}:", f"{hints[n - 1]}\n\n{following}")


def solution(checker: Callable) -> Help:
    """The reference solution of the exercise that `checker` checks, as its chapter shows it."""
    name = getattr(checker, "__name__", "this checker")
    found = all_solutions().get(name)
    _note(checker, solution=True)
    if found is None:
        return Help(f"No stored solution for {name}.", "See the exercise's chapter on the website.")
    return Help(
        f"Reference solution ({found['chapter']} chapter):",
        "Read it, then close it and write your own version from memory.",
        found["code"],
    )


class Laddered(Protocol):
    """A checker with its ladder: `hint(n)` and `solution()`."""

    hint: Callable[..., Help]
    solution: Callable[[], Help]

    def __call__(self, *args: Any, **kwargs: Any) -> Any: ...


def attach(checker: Callable) -> Laddered:
    """Gives `checker` its ladder as methods: `checker.hint(n)` and `checker.solution()`."""
    laddered = cast(Laddered, checker)
    laddered.hint = functools.partial(hint, checker)
    laddered.solution = functools.partial(solution, checker)
    return laddered
