"""jit's pipeline, drawn from a real compilation: Python function -> tracers -> jaxpr -> StableHLO
-> executable, and the cache in front of it."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import jax

from .. import hlo
from ._drawing import arrow, box, new_axes, parameter_names

BOX_COLORS = {
    "python": "#fde0c5",
    "trace": "#fff2b3",
    "jaxpr": "#d4ecd0",
    "hlo": "#cfe2f3",
    "run": "#e4d7f0",
}


@dataclass(frozen=True)
class JitPipeline:
    """What `jax.jit` makes of one function at one set of argument types, stage by stage."""

    name: str
    arg_names: tuple[str, ...] | None  # None when the arguments are not one array each
    abstract_args: tuple[str, ...]
    jaxpr_lines: tuple[str, ...]
    primitives: tuple[str, ...]
    stablehlo_ops: tuple[str, ...]
    compiled_ops: tuple[str, ...]

    @property
    def fusions(self) -> int:
        """How many of the compiled instructions are fused kernels."""
        return self.compiled_ops.count("fusion")


_STABLEHLO_OP = re.compile(r"= stablehlo\.(?P<op>[\w.]+)")
_HLO_OPCODE = re.compile(r"=\s.*?\s(?P<op>[a-z][a-z0-9\-]*)\(")


def jit_pipeline(fun: Callable, *args) -> JitPipeline:
    """Traces, lowers and compiles `jax.jit(fun)(*args)`, and records what each stage produced.

    Args:
        fun: a function of arrays (not already jitted: its name labels the picture).
        *args: example arguments; only their shapes and dtypes matter.

    Returns:
        the abstract values the tracers carried, the jaxpr's lines and primitives, the StableHLO
        operations, and the instructions of the compiled program's entry computation (parameters
        left out), all in program order.
    """
    if not callable(fun):
        raise TypeError(f"jit_pipeline needs a function, got {type(fun).__name__}")
    closed = jax.make_jaxpr(fun)(*args)
    stablehlo = jax.jit(fun).lower(*args).as_text()
    entry = hlo.entry_computation(fun, *args).splitlines()
    leaves = jax.tree.leaves(args)
    return JitPipeline(
        name=getattr(fun, "__name__", "f"),
        arg_names=parameter_names(fun, len(args)) if len(leaves) == len(args) else None,
        abstract_args=tuple(str(jax.typeof(leaf)) for leaf in leaves),
        jaxpr_lines=tuple(str(closed).splitlines()),
        primitives=tuple(eqn.primitive.name for eqn in closed.jaxpr.eqns),
        stablehlo_ops=tuple(match["op"] for match in _STABLEHLO_OP.finditer(stablehlo)),
        compiled_ops=tuple(
            match["op"]
            for line in entry
            if (match := _HLO_OPCODE.search(line)) and match["op"] != "parameter"
        ),
    )


def _excerpt(lines: Sequence[str], n_lines: int, width: int) -> str:
    """The first `n_lines` of `lines`, each cut to `width` characters, then '…' if any were left."""
    shown = [line if len(line) <= width else line[: width - 1] + "…" for line in lines[:n_lines]]
    return "\n".join(shown + (["…"] if len(lines) > n_lines else []))


def _first_names(names: Sequence[str], n: int = 4) -> str:
    return "\n".join([*names[:n], *(["…"] if len(names) > n else [])])


def plot_jit_pipeline(pipeline: JitPipeline, *, ax=None):
    """Draws `pipeline` (from `jit_pipeline`): a call looks up the cache; a hit runs the stored
    executable, a miss makes tracers, runs the Python function on them into a jaxpr, lowers it to
    StableHLO and compiles it. Each stage shows what it produced. Returns the axes."""
    ax = new_axes(ax, (10, 4.6))
    ax.set_xlim(0, 12.1)
    ax.set_ylim(0.0, 5.3)
    if pipeline.arg_names is None:
        names, args = "...", "\n".join(pipeline.abstract_args)
    else:
        names = ", ".join(pipeline.arg_names)
        args = "\n".join(
            f"{name}: {kind}" for name, kind in zip(pipeline.arg_names, pipeline.abstract_args)
        )
    row, size, step = 1.2, (1.85, 2.1), 2.5
    jaxpr_head = [line.strip() for line in pipeline.jaxpr_lines[1:-1]]
    compiled = f"{len(pipeline.compiled_ops)} instruction(s)\n{pipeline.fusions} fused kernel(s)"
    stages = [
        ("tracers", f"{args}\n\nshape and dtype,\nno values", "trace", False),
        (
            "Python function",
            f"{pipeline.name}({names})\nruns once;\neach jnp call\nis recorded",
            "python",
            False,
        ),
        (
            "jaxpr",
            f"{len(pipeline.primitives)} equations\n\n{_excerpt(jaxpr_head, 4, 21)}",
            "jaxpr",
            True,
        ),
        (
            "StableHLO",
            f"{len(pipeline.stablehlo_ops)} operations\n\n{_first_names(pipeline.stablehlo_ops)}",
            "hlo",
            True,
        ),
        ("XLA executable", f"{compiled}\n\n{_first_names(pipeline.compiled_ops)}", "run", True),
    ]
    centers = [1.05 + step * k for k in range(len(stages))]
    for x, (title, body, color, mono) in zip(centers, stages):
        box(ax, (x, row), size, title, body, color=BOX_COLORS[color], mono_body=mono)
    for x0, x1, label in zip(centers, centers[1:], ["call", "record", "lower", "compile"]):
        arrow(ax, (x0 + size[0] / 2, row + 0.6), (x1 - size[0] / 2, row + 0.6), label)

    top, edge = 4.6, row + size[1] / 2
    box(ax, (centers[0], top), (2.0, 1.0), "call", f"jit({pipeline.name})({names})")
    box(
        ax,
        (centers[2] - 0.6, top),
        (3.2, 1.0),
        "cache lookup",
        "key: argument shapes and dtypes,\nstatic arguments, the function",
        color="#f4f4f4",
    )
    box(
        ax, (centers[-1], top), (2.0, 1.0), "run", "the stored\nexecutable", color=BOX_COLORS["run"]
    )
    arrow(ax, (centers[0] + 1.0, top), (centers[2] - 2.2, top))
    hit, miss = "#2a7a2a", "#b03a2e"
    arrow(
        ax,
        (centers[2] + 1.0, top),
        (centers[-1] - 1.0, top),
        "hit: no tracing, no compiling",
        color=hit,
    )
    arrow(
        ax,
        (centers[2] - 1.6, top - 0.5),
        (centers[0] + 0.4, edge),
        "miss",
        label_offset=(0.45, -0.1),
        color=miss,
    )
    arrow(ax, (centers[-1], edge), (centers[-1], top - 0.5), "store", label_offset=(-0.35, -0.1))
    return ax
