"""Reading a learner's program the way JAX sees it: every equation of a jaxpr, nested ones included.

Checkers use it to check the method an exercise names (a `scan`, one batched draw, no autodiff),
which the numbers alone cannot show.
"""

from __future__ import annotations

from collections.abc import Iterator

import jax
import jax.extend.core

from ..checks import call_answer, require_accepts


def traced_program(answer, *args, what: str, hints: tuple = (), **make_jaxpr_options):
    """The jaxpr of the learner's `answer(*args)` (`jax.make_jaxpr(answer, **make_jaxpr_options)`),
    traced through `call_answer`: an answer that cannot be called so, or that JAX cannot trace,
    gets a hint instead of crashing the checker."""
    require_accepts(answer, *args, what=what)
    return call_answer(
        lambda *a: jax.make_jaxpr(answer, **make_jaxpr_options)(*a), *args, what=what, hints=hints
    )


def inner_jaxprs(eqn) -> list:
    """The jaxprs nested in one equation's parameters (the body of a jit, scan, cond, while...),
    and in the attributes of a higher-level primitive that JAX 0.12 keeps as one parameter object
    (`custom_root` traces to `call_hi_primitive`, whose solver jaxpr is an attribute)."""
    found = []
    for value in eqn.params.values():
        items = value if isinstance(value, (tuple, list)) else (value,)
        if eqn.primitive.name == "call_hi_primitive":
            items = [attribute for item in items for attribute in vars(item).values()]
        for item in items:
            if isinstance(item, jax.extend.core.ClosedJaxpr):
                found.append(item.jaxpr)
            elif isinstance(item, jax.extend.core.Jaxpr):
                found.append(item)
    return found


def equations(jaxpr) -> Iterator:
    """Every equation of `jaxpr` (a `Jaxpr` or `ClosedJaxpr`) and of the jaxprs nested in it."""
    jaxpr = getattr(jaxpr, "jaxpr", jaxpr)
    for eqn in jaxpr.eqns:
        yield eqn
        for inner in inner_jaxprs(eqn):
            yield from equations(inner)


def primitive_names(jaxpr) -> list[str]:
    """The primitive of every equation, nested ones included, in order (with repeats)."""
    return [eqn.primitive.name for eqn in equations(jaxpr)]


def uses_of(jaxpr, var) -> list[str]:
    """The primitives that read `var`, an input of `jaxpr`, following it into nested jaxprs
    whose inputs line up one to one with the equation's (jit, scan)."""
    uses: list[str] = []
    for eqn in jaxpr.eqns:
        for position, invar in enumerate(eqn.invars):
            if invar is not var:
                continue
            nested = [inner for inner in inner_jaxprs(eqn) if len(inner.invars) == len(eqn.invars)]
            if nested:
                uses.extend(
                    use for inner in nested for use in uses_of(inner, inner.invars[position])
                )
            else:
                uses.append(eqn.primitive.name)
    return uses
