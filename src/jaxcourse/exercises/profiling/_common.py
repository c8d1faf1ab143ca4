"""What the profiling chapter's Exercises 1 and 2 share: a small function, and functions that
notice when the learner's code runs them instead of compiling them."""

from __future__ import annotations

import functools
from collections.abc import Callable

import jax

from ...checks import AnswerRaised, CheckFailed, call_answer, shorten


def _scale(x):
    return x * 2.0 + 1.0


def _not_run(fn: Callable) -> Callable:
    """`fn`, failing with a hint when it is called on the arguments themselves (arrays or
    `jax.ShapeDtypeStruct`s) rather than traced by `jax.jit`, `lower` or `eval_shape`: the
    exercises' arguments may be shapes without values, so the answer must not run `fn`.

    Made once per function at import, so that the checkers pass the same function object to
    every call (an answer that keeps something keyed by `fn` is then seen doing so)."""

    @functools.wraps(fn)
    def traced_only(*args):
        ran_on = [
            leaf
            for leaf in jax.tree.leaves(args)
            if not isinstance(leaf, jax.core.Tracer) and hasattr(leaf, "shape")
        ]
        if ran_on:
            kinds = sorted(
                {
                    "a jax.ShapeDtypeStruct"
                    if isinstance(leaf, jax.ShapeDtypeStruct)
                    else "an array"
                    for leaf in ran_on
                }
            )
            raise CheckFailed(
                f"your code called fn on the arguments themselves ({' and '.join(kinds)}), "
                "to run it: the arguments may be jax.ShapeDtypeStructs, shapes and dtypes without "
                "values, so do not run fn. Lower and compile jax.jit(fn) for them, "
                "jax.jit(fn).lower(*args).compile(), and read its cost_analysis()."
            )
        return fn(*args)

    return traced_only


def _call_compiling(answer: Callable, *args, what: str):
    """`call_answer(answer, *args)`, whose failures that come from running `fn` or from caching on
    the arguments get a hint that names them (the generic ones would blame a wrong signature or
    a value JAX cannot hold)."""
    try:
        return call_answer(answer, *args, what=what)
    except (CheckFailed, AnswerRaised) as failure:
        cause = failure.__cause__
        message = str(cause)
        if isinstance(cause, TypeError) and "unhashable" in message:
            raise CheckFailed(
                f"{what} hashed its arguments ({message}): a cache keyed by them, such as "
                "functools.cache, fails on arrays, which cannot be hashed, and the arguments may be "
                "arrays as well as jax.ShapeDtypeStructs. Compile jax.jit(fn) for each call's "
                "arguments; keep nothing from one call to the next."
            ) from None
        if isinstance(cause, AttributeError) and "ShapeDtypeStruct" in message:
            raise CheckFailed(
                f"{what} read an attribute that a jax.ShapeDtypeStruct does not have ({message}): "
                "the arguments may be ShapeDtypeStructs, which have only a shape and a dtype (and no "
                "values, so do not run fn on them). Compile jax.jit(fn) for them and read the "
                "compiled program's cost_analysis()."
            ) from None
        if isinstance(cause, TypeError) and "ShapeDtypeStruct" in message:
            raise CheckFailed(
                f"{what} ran a function on a jax.ShapeDtypeStruct ({shorten(message, 120)}): a "
                "ShapeDtypeStruct has a shape and a dtype but no values, so do not run fn (nor "
                "jax.jit(fn)) on the arguments. Lower and compile it, "
                "jax.jit(fn).lower(*args).compile(), and read its cost_analysis()."
            ) from None
        raise
