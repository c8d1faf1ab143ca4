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


def influenced_by(jaxpr, sources) -> set:
    """Every variable of `jaxpr` (a `Jaxpr` or `ClosedJaxpr`) and of the jaxprs nested in it whose
    value depends on one of `sources` (input variables of `jaxpr`). A loop's carry counts as
    influenced once any iteration's carry is; an equation's outputs once any of its inputs is."""
    tainted = set(sources)
    _propagate(getattr(jaxpr, "jaxpr", jaxpr), tainted)
    return tainted


def condition_influenced(eqn, tainted: set) -> bool:
    """For a `while` equation of a jaxpr already passed to `influenced_by`: whether its
    condition, and so its number of iterations, depends on the sources."""
    cond = eqn.params["cond_jaxpr"].jaxpr
    return any(_in(v, tainted) for v in cond.outvars)


def _in(var, tainted: set) -> bool:
    return isinstance(var, jax.extend.core.Var) and var in tainted


def _propagate(jaxpr, tainted: set) -> None:
    for eqn in jaxpr.eqns:
        nested, feedback = _nested(eqn), _feedback(eqn)
        changed = True
        while changed:  # until a loop's carry gains no more influence
            for inner, inputs in nested:
                for k, source in enumerate(inputs):
                    if source is None:
                        reached = any(_in(v, tainted) for v in eqn.invars)
                    else:
                        reached = _in(eqn.invars[source], tainted)
                    if reached:
                        tainted.add(inner.invars[k])
                _propagate(inner, tainted)
            fed = {
                target
                for out, targets in feedback
                if _in(out, tainted)
                for target in targets
                if target not in tainted
            }
            tainted.update(fed)
            changed = bool(fed)
        inner_outs = [v for inner, _ in nested for v in inner.outvars]
        if any(_in(v, tainted) for v in [*eqn.invars, *inner_outs]):
            tainted.update(eqn.outvars)


def _nested(eqn) -> list:
    """(inner jaxpr, for each of its inputs the position of the equation's input that it
    receives, or None where the layout is unknown and any input may reach it)."""
    name = eqn.primitive.name
    if name == "while":
        cond, body = eqn.params["cond_jaxpr"].jaxpr, eqn.params["body_jaxpr"].jaxpr
        n_cond, n_body = eqn.params["cond_nconsts"], eqn.params["body_nconsts"]
        carry_in = list(range(n_cond + n_body, len(eqn.invars)))
        return [
            (body, list(range(n_cond, n_cond + n_body)) + carry_in),
            (cond, list(range(n_cond)) + carry_in),
        ]
    found = []
    for inner in inner_jaxprs(eqn):
        inputs: list[int | None]
        if len(inner.invars) == len(eqn.invars):  # jit, scan: one to one
            inputs = list(range(len(eqn.invars)))
        elif name == "cond" and len(inner.invars) == len(eqn.invars) - 1:  # after the index
            inputs = list(range(1, len(eqn.invars)))
        else:
            inputs = [None] * len(inner.invars)
        found.append((inner, inputs))
    return found


def _feedback(eqn) -> list:
    """For a loop, (body output, the inner inputs its value reaches at the next iteration)."""
    if eqn.primitive.name == "scan":
        body, params = eqn.params["jaxpr"].jaxpr, eqn.params
        if "num_consts" in params:  # releases before 0.12 give the layout as counts
            consts, carries = params["num_consts"], params["num_carry"]
        elif hasattr(params.get("ft_in"), "elts"):  # jax 0.12: a flat tree (consts, carry, xs)
            consts, carries = (len(part) for part in params["ft_in"].elts[:2])
        else:  # a layout this code does not know: no carry followed (internal API, pinned jax)
            return []
        return [(body.outvars[k], [body.invars[consts + k]]) for k in range(carries)]
    if eqn.primitive.name == "while":
        cond, body = eqn.params["cond_jaxpr"].jaxpr, eqn.params["body_jaxpr"].jaxpr
        n_cond, n_body = eqn.params["cond_nconsts"], eqn.params["body_nconsts"]
        return [
            (out, [body.invars[n_body + k], cond.invars[n_cond + k]])
            for k, out in enumerate(body.outvars)
        ]
    return []
