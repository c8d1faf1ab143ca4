"""Helpers shared by the tracing chapter's checkers."""

from __future__ import annotations

from ...checks import call_answer, require

_NON_HASHABLE_STATIC = "Non-hashable static arguments"
_ARRAY_METADATA = "metadata fields"


def _run(fn: object, *args, hints: list[tuple[type, str, str]], what: str = "your function"):
    """Calls the learner's `fn(*args)` through `call_answer`: a JAX error matching one of `hints`
    (error class, message fragment or "", hint; subclasses before their parents) becomes that
    hint, and a result of None fails with a hint about a missing `return`."""
    result = call_answer(fn, *args, what=what, hints=tuple(hints))
    require(
        result is not None,
        "your code returned None: is a `return` missing? (A pure function or method returns its "
        "result instead of storing it.)",
    )
    return result
