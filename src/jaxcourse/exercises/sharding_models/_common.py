"""Helpers shared by the second sharding chapter's checkers: a line of all the mesh's devices,
a per-device body run in `shard_map`, and the collectives its jaxpr calls."""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh, NamedSharding
from jax.sharding import PartitionSpec as P

from ...checks import CheckFailed, call_answer, describe, require, require_accepts
from ...mesh import DATA
from .._jaxpr import equations, inner_jaxprs, traced_program

LAX_NAMES = {
    "all_gather": "lax.all_gather",
    "all_gather_invariant": "lax.all_gather",
    "reduce_scatter": "lax.psum_scatter",
    "psum": "lax.psum (or pmean)",
    "psum_invariant": "lax.psum (or pmean)",
    "pmax": "lax.pmax",
    "pmin": "lax.pmin",
    "all_to_all": "lax.all_to_all",
    "ragged_all_to_all": "lax.ragged_all_to_all",
    "ppermute": "lax.ppermute",
}
"""The collective primitives of a jaxpr, and the `lax` function each comes from."""


class Collective(NamedTuple):
    """One collective of a traced program: its primitive, the mesh axes it runs over, the
    shape of its (first) operand and its parameters."""

    name: str
    axes: tuple[str, ...]
    operand_shape: tuple[int, ...]
    params: dict


def collectives(jaxpr) -> list[Collective]:
    """Every collective of `jaxpr`, nested ones included, in order."""
    found = []
    for eqn in equations(jaxpr):
        if eqn.primitive.name not in LAX_NAMES:
            continue
        axes = eqn.params.get("axis_name", eqn.params.get("axes", ()))
        axes = tuple(axes) if isinstance(axes, (tuple, list)) else (axes,)
        shape = tuple(getattr(eqn.invars[0].aval, "shape", ())) if eqn.invars else ()
        found.append(Collective(eqn.primitive.name, axes, shape, dict(eqn.params)))
    return found


def lax_names(found: list[Collective], *, leave_out: tuple[str, ...] = ()) -> list[str]:
    """The `lax` functions behind the collectives `found`, each once, leaving out primitives."""
    return sorted({LAX_NAMES[c.name] for c in found if c.name not in leave_out})


def ppermute_steps(jaxpr) -> int | None:
    """How many `ppermute`s `jaxpr` runs: those in a `scan` (a `fori_loop` with fixed bounds)
    count once per iteration, a `cond` counts its longest branch; None when one sits in a
    `while_loop`, whose count the jaxpr does not say."""
    total = 0
    for eqn in getattr(jaxpr, "jaxpr", jaxpr).eqns:
        if eqn.primitive.name == "ppermute":
            total += 1
            continue
        found = [ppermute_steps(inner) for inner in inner_jaxprs(eqn)]
        if not found:
            continue
        counts = [count for count in found if count is not None]
        if len(counts) < len(found) or (eqn.primitive.name == "while" and any(counts)):
            return None
        if eqn.primitive.name == "cond":
            total += max(counts)
        else:
            total += eqn.params.get("length", 1) * sum(counts)
    return total


def numpy_hint(what: str) -> tuple:
    """A `call_answer` hint for NumPy (or `jax.device_get`) on a traced block."""
    return (
        jax.errors.TracerArrayConversionError,
        "",
        f"{what} turns a traced array into a NumPy one (np.asarray, np.concatenate, "
        "jax.device_get...): inside shard_map a block is a tracer, which has no values yet. "
        "Build the result with jnp and lax only.",
    )


def require_data_axis_only(found: list[Collective]) -> None:
    """Fails when a collective runs over an axis besides "data"."""
    for collective in found:
        others = [axis for axis in collective.axes if axis != DATA]
        if others:
            raise CheckFailed(
                "the values are right here, where every axis but 'data' has one device, but your "
                f"{LAX_NAMES[collective.name]} runs over {collective.axes}: the exercise works "
                f"over 'data' only. On the chapter's mesh every block is copied on the devices of "
                f"{others[0]!r}, so this would count each block once per copy."
            )


def line_mesh(mesh: Mesh) -> Mesh:
    """All of `mesh`'s devices along "data", every other axis of one device: more devices
    along "data" make wrong orders visible, and the other axis names stay bound."""
    require(
        isinstance(mesh, Mesh),
        f"pass the chapter's mesh (a jax.sharding.Mesh), got {type(mesh).__name__}.",
    )
    require(DATA in mesh.axis_names, f"pass the chapter's mesh, with a {DATA!r} axis.")
    names = (DATA, *(name for name in mesh.axis_names if name != DATA))
    shape = (mesh.size,) + (1,) * (len(names) - 1)
    return jax.make_mesh(shape, names, devices=list(np.asarray(mesh.devices).flat))


def run_per_device(body, mesh: Mesh, x: np.ndarray, what: str, hints: tuple = ()):
    """`body` on each device's rows of `x` (split over "data"): its results stacked by device,
    the collectives of that program, and its jaxpr."""
    require_accepts(body, x[:1], what=what)
    hints = (*hints, numpy_hint(what))

    def checked(block):  # a wrong kind of result gets a hint, not shard_map's error about specs
        out = body(block)
        require(
            isinstance(out, jax.Array) and out.ndim == 2,
            f"{what} should return one 2-D array (rows, columns) for each device's block, got "
            f"{describe(out)}.",
        )
        return out

    spec = P(DATA)
    program = jax.shard_map(checked, mesh=mesh, in_specs=spec, out_specs=spec, check_vma=False)
    with jax.set_mesh(mesh):  # the chapter's own mesh may be set; this one is for these lines
        placed = jax.device_put(jnp.asarray(x), NamedSharding(mesh, spec))
        result = call_answer(program, placed, what=what, hints=hints)
        jaxpr = traced_program(program, placed, what=what, hints=hints)
    return result, collectives(jaxpr), jaxpr


def same_rows(a: np.ndarray, b: np.ndarray) -> bool:
    """True when `a` and `b` hold the same rows, in any order."""
    rows = lambda m: sorted(tuple(row) for row in np.round(np.asarray(m, float), 3))  # noqa: E731
    return a.shape == b.shape and rows(a) == rows(b)
