"""Exercise checkers: a clear pass or 'not yet' with a hint, never an exception in a notebook."""

from __future__ import annotations

import dataclasses
import functools
import os
import re
import warnings
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Protocol, cast

from . import ladder

if TYPE_CHECKING:
    import numpy as np

ENFORCE_ENV = "JAXCOURSE_ENFORCE_VERDICTS"
"""When this environment variable is "1" (CI sets it), `exercise_summary` raises on a verdict
other than the one expected, so a broken solution or a stub that passes fails the notebook."""


@dataclasses.dataclass(frozen=True)
class Verdict:
    """The outcome of checking one exercise; true when it passed."""

    exercise: str
    passed: bool
    message: str
    warned: tuple[str, ...] = ()
    """The warnings raised while the answer was checked ("UserWarning: ..."), shown as well."""
    tried: bool = True
    """False when there was no answer to check yet (the stub, or None): "not tried", not wrong."""

    def __bool__(self) -> bool:
        return self.passed

    def __str__(self) -> str:
        mark = "PASSED" if self.passed else "NOT YET"
        return f"[{mark}] {self.exercise}: {self.message}"

    __repr__ = __str__


_VERDICTS: list[Verdict] = []
"""Every verdict given in this Python session, in order (read by `exercise_summary`)."""

NO_ANSWER = "no answer yet"
"""How a verdict on an untouched stub begins; `jaxcourse.progress` reads it as "not tried"."""

_LISTENERS: list[Callable[[Verdict], None]] = []
"""Called with each verdict as it is given (`jaxcourse.room` reports them when a learner opts
in); a listener that raises is ignored: a verdict is never lost to one."""


def _record(verdict: Verdict) -> None:
    """Keeps `verdict` for `exercise_summary` and tells the listeners: the one place every
    checker's verdict passes through."""
    _VERDICTS.append(verdict)
    for listener in list(_LISTENERS):
        try:
            listener(verdict)
        except Exception:  # reporting is optional; the learner's notebook goes on
            pass


def session_verdicts() -> tuple[Verdict, ...]:
    """Every verdict given in this Python session, in order."""
    return tuple(_VERDICTS)


class ExerciseSummary(str):
    """A Markdown table of the last verdict of each exercise checked in this session."""

    def _repr_markdown_(self) -> str:
        return str(self)


def exercise_summary(expect: str | None = None) -> ExerciseSummary:
    """Summarises the exercises checked so far: the last verdict of each.

    Args:
        expect: "passed" (solution notebooks) or "not yet" (student notebooks). When the
            `JAXCOURSE_ENFORCE_VERDICTS` environment variable is "1", any other last verdict,
            or no verdict at all, raises `AssertionError`; otherwise nothing is raised.
            With "passed", so does an exercise whose first verdict passed: a solution notebook
            runs each stub before its solution, and a stub must get 'not yet'. A student
            notebook's code cells are its solution notebook's, in the same order, less the
            solutions, so this checks its stubs without executing it (scripts/test.sh).
    """
    if expect not in (None, "passed", "not yet"):
        raise ValueError(f"expect must be 'passed', 'not yet' or None, got {expect!r}.")
    last = {verdict.exercise: verdict for verdict in _VERDICTS}
    rows = [f"| {name} | {'PASSED' if v.passed else 'NOT YET'} |" for name, v in last.items()]
    table = (
        "\n".join(["| exercise | verdict |", "|---|---|", *rows])
        if rows
        else "No exercise checked yet."
    )
    if expect is not None and os.environ.get(ENFORCE_ENV) == "1":
        wrong = [name for name, v in last.items() if v.passed != (expect == "passed")]
        if not last or wrong:
            raise AssertionError(
                f"expected every exercise to be '{expect}'; not so for: {wrong or 'no exercise'}"
            )
        warned = {name: v.warned for name, v in last.items() if v.passed and v.warned}
        if warned:  # a reference solution must pass cleanly: a learner cannot tell a warning apart
            raise AssertionError(f"a correct answer raised warnings while checked: {warned}")
        first: dict[str, Verdict] = {}
        for verdict in _VERDICTS:
            first.setdefault(verdict.exercise, verdict)
        stub_passed = [name for name, v in first.items() if v.passed]
        if expect == "passed" and stub_passed:
            raise AssertionError(
                f"the first check of {stub_passed} passed: run before its solution, the stub "
                "must get 'not yet' (an empty stub raises NotImplementedError)."
            )
    return ExerciseSummary(table)


def close(actual, expected, *, rtol: float = 1e-5, atol: float = 1e-6) -> bool:
    """True when `actual` has the structure and shapes of `expected` and its values are close.

    The one comparison every checker uses. Both may be arrays, numbers or pytrees (tuples,
    NamedTuples, dicts) of them; a different tree structure, a different shape, a value that
    cannot be converted to an array, or a NaN where `expected` has none gives False, never
    an exception (a checker then reports a hint, not a crash).
    """
    import jax
    import numpy as np

    try:
        actual_leaves, actual_tree = jax.tree.flatten(actual)
        expected_leaves, expected_tree = jax.tree.flatten(expected)
        if actual_tree != expected_tree:  # type: ignore[operator]  # jaxlib ships no stub for PyTreeDef
            return False
        for got, want in zip(actual_leaves, expected_leaves):
            got, want = np.asarray(got), np.asarray(want)
            if got.shape != want.shape or got.dtype == object:
                return False
            if not np.allclose(got, want, rtol=rtol, atol=atol, equal_nan=True):
                return False
        return True
    except (TypeError, ValueError):
        return False


ELLIPSIS = "\u2026"
SENTENCE_END = re.compile(r"[.?!](?=\s)")


def shorten(message: str, limit: int = 300) -> str:
    """`message` as a hint quotes it: whole when it has at most `limit` characters; otherwise cut
    after the last sentence that ends within the limit (when that keeps at least half of it), or
    else after the last whole word, and marked with an ellipsis. A quoted JAX error then never
    ends inside a word ("Perhaps you are callin."); only a single word longer than `limit` is cut."""
    message = str(message)
    if len(message) <= limit:
        return message
    ends = [m.end() for m in SENTENCE_END.finditer(message, 0, limit + 1) if m.end() <= limit]
    if ends and ends[-1] >= limit // 2:
        return message[: ends[-1]] + ELLIPSIS
    cut = message[: limit + 1]
    space = max(cut.rfind(" "), cut.rfind("\n"))
    if space > 0:
        return message[:space].rstrip(" ,;:\n") + ELLIPSIS
    return message[:limit] + ELLIPSIS


class CheckFailed(Exception):
    """Raised inside a checker to fail with a hint for the learner."""


class AnswerRaised(Exception):
    """Raised by `call_answer` when the learner's own code raised: reported as
    'your code raised ...', never as a hint and never as a checker error."""


CHECKER_ERROR = "checker error, please report it"
"""The start of the verdict given when a checker itself crashed (a bug in the course, not in
the answer); tests/test_checkers_never_crash.py fails on it."""

_TRACED_PYTHON_HINT = (
    "{what} used a traced value where Python needs a concrete one ({error}): under jax.jit an "
    "argument is an abstract tracer, so a Python `if`/`while`, `bool()`, `int()` or `float()` on it "
    "fails. Use jnp.where, lax.cond/lax.switch or lax.while_loop on traced values, or mark the "
    "argument static."
)


def require_callable(answer, what: str = "your function") -> None:
    """Fails with a hint unless `answer` is callable (check this before wrapping it in jax.jit)."""
    require(
        callable(answer),
        f"{what} should be a function (a callable), got a {type(answer).__name__}.",
    )


def describe(value) -> str:
    """A short learner-facing description of a value's structure: 'a tuple of 2 items',
    'None', 'an array of shape (3, 4)', 'a str'."""
    import numpy as np

    if value is None:
        return "None (is a `return` missing?)"
    if isinstance(value, (tuple, list, dict)):
        return f"a {type(value).__name__} of {len(value)} items"
    if hasattr(value, "shape") and hasattr(value, "dtype"):
        return f"an array of shape {tuple(value.shape)}"
    if isinstance(value, (bool, int, float, complex, np.number)):
        return f"a {type(value).__name__} (a scalar)"
    return f"a {type(value).__name__}"


def require_array(value, shape: tuple, what: str = "your function's result", expected: str = ""):
    """The structural check that comes first: fails with a hint unless `value` is ONE numeric
    array (or number) of `shape`; returns it as a NumPy array. `expected` says in words what was
    asked for (e.g. "one smoothed value per input")."""
    import numpy as np

    wanted = f"one array of shape {tuple(shape)}" + (f" ({expected})" if expected else "")
    require(
        not isinstance(value, (tuple, list, dict)) and value is not None,
        f"{what} should be {wanted}, got {describe(value)}.",
    )
    try:
        array = np.asarray(value)
    except Exception:  # a value NumPy cannot read: say what it was
        array = np.asarray(None)
    import jax

    numeric = array.dtype.kind in "biufc" or (
        array.dtype.kind == "V" and jax.dtypes.issubdtype(array.dtype, np.floating)
    )
    require(numeric, f"{what} should be {wanted}, got {describe(value)}, which is not numeric.")
    if (
        array.dtype.kind == "V"
    ):  # bfloat16 and JAX's other float types, which NumPy does not compute with
        array = array.astype(np.float32)
    require(array.shape == tuple(shape), f"{what} should be {wanted}, got {describe(array)}.")
    return array


def require_accepts(answer, *args, what: str = "your function") -> None:
    """Fails with a hint unless `answer` is callable and its signature accepts `args`
    (checked without calling it; a signature Python cannot read is not checked)."""
    import inspect

    require_callable(answer, what)
    try:
        signature = inspect.signature(answer)
    except (TypeError, ValueError):
        return
    try:
        signature.bind(*args)
    except TypeError as error:
        raise CheckFailed(
            f"{what} cannot be called with {len(args)} argument(s) ({error}): check its parameters "
            "against the exercise's stub."
        ) from None


def call_answer(answer, *args, what: str = "your function", hints: tuple = ()):
    """Calls the learner's `answer(*args)` and returns its result.

    Checkers call learner code only through this, so that a failure in it is told apart from a
    bug in the checker: a value that is not callable fails with a hint; an error matching one
    of `hints`, each `(exception class, message fragment or "", hint)` (first match wins), fails
    with that hint; a Python `if` on a traced value (`TracerBoolConversionError`,
    `ConcretizationTypeError`, ...) fails with a hint saying so; a call with the wrong number of
    arguments fails with a hint; `NotImplementedError` (a stub) and `CheckFailed` pass through;
    any other exception becomes `AnswerRaised`, reported as 'your code raised ...'.
    """

    require_accepts(answer, *args, what=what)
    before = [_snapshot(arg) for arg in args]
    try:
        result = answer(*args)
    except (CheckFailed, AnswerRaised, NotImplementedError):
        raise
    except Exception as error:
        for error_class, fragment, hint in hints:
            if isinstance(error, error_class) and fragment in str(error):
                raise CheckFailed(f"{hint} (JAX raised {type(error).__name__}.)") from error
        raise _learner_failure(error, what, len(args)) from error
    _require_unchanged(answer, args, before, what)
    return result


@dataclasses.dataclass(frozen=True)
class _Container:
    """The snapshot of a list, tuple or dict: the object itself and its items' snapshots."""

    original: list | tuple | dict
    items: dict


def _snapshot(value):
    """What `_changed` compares a value with after the learner's call: a copy of each NumPy
    array, and the items of each list, dict and tuple (recursively); any other value is compared
    by identity (a JAX array cannot change in place)."""
    import numpy as np

    if isinstance(value, np.ndarray):
        return value.copy()
    if isinstance(value, (list, tuple)):
        return _Container(value, {index: _snapshot(item) for index, item in enumerate(value)})
    if isinstance(value, dict):
        return _Container(value, {key: _snapshot(item) for key, item in value.items()})
    return value


def _changed(value: Any, snapshot: Any) -> str:
    """How `value` differs from its `snapshot`, in words ('' when it does not)."""
    import numpy as np

    if isinstance(snapshot, np.ndarray):
        same = (
            isinstance(value, np.ndarray)
            and value.shape == snapshot.shape
            and value.dtype == snapshot.dtype
            and np.array_equal(value, snapshot, equal_nan=snapshot.dtype.kind in "fc")
        )
        return "" if same else "its entries were overwritten: a NumPy array changes in place"
    if not isinstance(snapshot, _Container):
        return "" if value is snapshot else "an item was replaced"
    if value is not snapshot.original:
        return "an item was replaced"
    keys = list(value) if isinstance(value, dict) else list(range(len(value)))
    if keys != list(snapshot.items):
        return (
            "keys were added or removed"
            if isinstance(value, dict)
            else f"its length went from {len(snapshot.items)} to {len(value)}"
        )
    for key, item in snapshot.items.items():
        how = _changed(value[key], item)
        if how:
            return how
    return ""


def _require_unchanged(answer, args: tuple, before: list, what: str) -> None:
    """Fails with a hint naming the argument when the learner's call changed one in place."""
    for position, (arg, snapshot) in enumerate(zip(args, before)):
        how = _changed(arg, snapshot)
        if how:
            raise CheckFailed(
                f"{what} changed its argument {_argument_name(answer, position)} in place ({how}): "
                "leave the inputs as they were (the caller still holds them), and build new values "
                "instead (a copy, or jnp operations, which never change their inputs)."
            )


def _argument_name(answer, position: int) -> str:
    """The name of the learner's parameter at `position` ('number k' when it cannot be read)."""
    import inspect

    try:
        parameters = list(inspect.signature(answer).parameters.values())
    except (TypeError, ValueError):
        parameters = []
    if position < len(parameters) and parameters[position].kind in (
        inspect.Parameter.POSITIONAL_ONLY,
        inspect.Parameter.POSITIONAL_OR_KEYWORD,
    ):
        return f"`{parameters[position].name}`"
    return f"number {position + 1}"


SIMULATED_COSTS: list[dict[str, float]] = []
"""Every set of simulated costs drawn by `draw_simulated_costs` in this Python session, in order
(read by the tests: two checks of one measurement exercise never see the same costs)."""


def draw_simulated_costs(**ranges: tuple[float, float]) -> dict[str, float]:
    """Simulated costs for a measurement exercise, drawn afresh (unseeded) for each check.

    Each keyword names a cost and the (low, high) range it is drawn from uniformly; returns
    {name: cost}. Drawn afresh, the costs differ from one check to the next, so a constant
    answer, or one remembered from an earlier check, cannot pass.
    """
    import numpy as np

    rng = np.random.default_rng()
    costs = {name: float(rng.uniform(low, high)) for name, (low, high) in ranges.items()}
    SIMULATED_COSTS.append(costs)
    return costs


JITTED = " under jax.jit"
"""The label `call_eager_and_jitted` gives the jitted run (the eager run's is "")."""


def call_eager_and_jitted(
    answer, *args, what: str = "your function", hints: tuple = ()
) -> list[tuple[str, Any]]:
    """Calls the learner's `answer(*args)` eagerly and under `jax.jit` (every argument traced),
    both through `call_answer`; returns `[("", eager result), (" under jax.jit", jitted result)]`,
    each result labelled with the words a hint appends to say which run it was."""
    import jax

    require_callable(answer, what)
    eager = call_answer(answer, *args, what=what, hints=hints)
    jitted = call_answer(jax.jit(answer), *args, what=f"{what}{JITTED}", hints=hints)
    return [("", eager), (JITTED, jitted)]


def _learner_failure(error: Exception, what: str, n_args: int) -> Exception:
    """The `CheckFailed` hint for an exception from the learner's code where its cause is known
    (a traced value in Python control flow, a result that is no array, a wrong signature), and
    `AnswerRaised` otherwise."""
    import jax

    traced = (
        jax.errors.ConcretizationTypeError,  # TracerBoolConversionError is a subclass
        jax.errors.TracerIntegerConversionError,
        jax.errors.TracerArrayConversionError,
    )
    if isinstance(error, traced):
        return CheckFailed(_TRACED_PYTHON_HINT.format(what=what, error=type(error).__name__))
    if isinstance(error, TypeError) and "not a valid JAX type" in str(error):  # from jit or vmap
        return CheckFailed(
            f"{what} returned a value JAX cannot hold as an array ({shorten(str(error), 200)}): return "
            "jnp arrays (or numbers), as the exercise asks."
        )
    if (
        isinstance(error, TypeError)
        and error.__traceback__ is not None
        and error.__traceback__.tb_next is None
    ):  # the call itself failed
        return CheckFailed(
            f"{what} cannot be called with {n_args} argument(s) ({error}): check its parameters "
            "against the exercise's stub."
        )
    return AnswerRaised(f"{type(error).__name__}: {shorten(str(error))}")


def require(condition: bool | np.bool_, hint: str) -> None:
    """Fails the current check with `hint` unless `condition` holds."""
    if not condition:
        raise CheckFailed(hint)


def require_registered_pytree(obj, hint: str) -> list:
    """Fails with `hint` if JAX sees `obj` as one opaque leaf (its class is not a registered
    pytree); otherwise returns its leaves."""
    import jax

    leaves = jax.tree.leaves(obj)
    require(not (len(leaves) == 1 and leaves[0] is obj), hint)
    return leaves


class Checker(ladder.Laddered, Protocol):
    """What `exercise_checker` makes: a function that returns a `Verdict`, with its hints and
    its ladder (`hint(n)`, `solution()`). Its exercise's name is `ladder.exercise_name(checker)`."""

    __hints__: tuple[str, ...]

    def __call__(self, *args: Any, **kwargs: Any) -> Verdict: ...


def exercise_checker(*, hints: Sequence[str] = ()) -> Callable[[Callable], Checker]:
    """Turns `check(answer, ...)`, which raises `CheckFailed` on a wrong answer, into a checker
    whose hint ladder is `hints` (a first nudge, then the shape of the answer or the usual trap).

    The wrapped checker returns a `Verdict`, shown as one line when it is the last
    expression of a cell, named as the chapter's exercise heading that calls the checker
    (`ladder.exercise_name`, read when the verdict is given). A stub that raises `NotImplementedError` or returns `None` gets
    'not yet'; any other exception from the learner's code is reported, not raised. A `check`
    that returns a string (a note on a correct answer, such as a warning it raised) has it
    added to the verdict.
    """

    def decorate(check: Callable) -> Checker:
        @functools.wraps(check)
        def checker(*args, **kwargs) -> Verdict:
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                verdict = _verdict(*args, **kwargs)
            for warning in caught:  # still shown, as without the checker
                warnings.warn_explicit(
                    warning.message, warning.category, warning.filename, warning.lineno
                )
            if caught:
                verdict = _with_warnings(verdict, caught)
            _record(verdict)
            return verdict

        def _verdict(*args, **kwargs) -> Verdict:
            exercise = ladder.exercise_name(checker)
            if any(arg is None for arg in args):
                return Verdict(
                    exercise,
                    False,
                    f"{NO_ANSWER}: fill in the stub, then run this cell again.",
                    tried=False,
                )
            try:
                note = check(*args, **kwargs)
            except CheckFailed as failure:
                return Verdict(exercise, False, f"Hint: {failure}")
            except NotImplementedError:
                return Verdict(
                    exercise,
                    False,
                    f"{NO_ANSWER}: the stub still raises NotImplementedError.",
                    tried=False,
                )
            except AnswerRaised as error:
                return Verdict(exercise, False, f"your code raised {error}")
            except Exception as error:  # never crash the notebook; say whose code failed
                if _raised_in_learner_code(error):
                    return Verdict(
                        exercise,
                        False,
                        f"your code raised {type(error).__name__}: {shorten(str(error))}",
                    )
                return Verdict(
                    exercise,
                    False,
                    f"{CHECKER_ERROR}: {type(error).__name__}: {shorten(str(error))}",
                )
            note = f" {note}" if isinstance(note, str) and note else ""
            return Verdict(exercise, True, f"correct, well done.{note}")

        made = cast(Checker, ladder.attach(checker))  # checker.hint(n) and checker.solution()
        made.__hints__ = tuple(hints)
        return made

    return decorate


def is_checker(value: object) -> bool:
    """True for a checker made by `exercise_checker`."""
    return callable(value) and isinstance(getattr(value, "__hints__", None), tuple)


def _with_warnings(verdict: Verdict, caught: list) -> Verdict:
    """`verdict`, recording the warnings raised while the answer was checked; a pass says that
    the answer is right all the same, so that the warning printed above it leaves no doubt."""
    warned = tuple(shorten(f"{w.category.__name__}: {w.message}", 200) for w in caught)
    message = verdict.message
    if verdict.passed:
        message += (
            f" Your code also raised a warning, shown above ({warned[0]}): it does not change this "
            "verdict, but read it, it may point at a better way."
        )
    return dataclasses.replace(verdict, message=message, warned=warned)


def _raised_in_learner_code(error: BaseException) -> bool:
    """True when a frame of the traceback of `error` lies outside this package, the standard
    library and the installed libraries: the learner's own code (a notebook cell, a test file)
    was running when it raised, for checkers that call it without `call_answer`."""
    import sysconfig
    import traceback

    package = os.path.dirname(os.path.abspath(__file__))
    libraries = {
        os.path.abspath(sysconfig.get_paths()[name])
        for name in ("stdlib", "platstdlib", "purelib", "platlib")
    }
    for frame, _ in traceback.walk_tb(error.__traceback__):
        filename = os.path.abspath(frame.f_code.co_filename)
        if filename.startswith(package) or any(filename.startswith(lib) for lib in libraries):
            continue
        if frame.f_code.co_filename.startswith("<frozen"):
            continue
        return True
    return False
