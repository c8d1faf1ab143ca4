"""What a compiled program writes to memory: the arrays between its fused loops."""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from functools import partial
from typing import NamedTuple

import jax

_COMPUTATION = re.compile(r"^(?:ENTRY\s+)?%(?P<name>[\w.\-]+)\s.*\{$")
_INSTRUCTION_NAME = re.compile(r"^\s*(?:ROOT\s+)?%(?P<name>[\w.\-]+)\s*=")
_INSTRUCTION = re.compile(
    r"^\s*(?:ROOT\s+)?%(?P<name>[\w.\-]+)\s*=\s*[a-z]+\d*\[(?P<dims>[\d,]*)\]"
)
_FUSED_BODY = re.compile(r"kind=k\w+, calls=%(?P<name>[\w.\-]+)")
_NOT_WRITTEN = re.compile(r" (parameter|get-tuple-element|bitcast)\(")
_ENTRY = re.compile(r"^ENTRY\s+%(?P<name>[\w.\-]+)", re.MULTILINE)
_PASSES_ON = re.compile(r"\s(?:tuple|bitcast)\((?P<operands>[^)]*)\)")
_ANNOTATIONS = re.compile(r", (?:metadata|backend_config|frontend_attributes|sharding)=.*$")

_OPCODE = re.compile(r"= \S+ (?P<opcode>[a-z][a-z\-]*)\(")
"""The opcode of an instruction line, as in `%sum = f32[] reduce(...)`."""


def _compiled_text(fn: Callable, *args, **jit_options) -> str:
    return _text(jax.jit(fn, **jit_options).lower(*args).compile())


def _text(compiled: jax.stages.Compiled) -> str:
    """The compiled module's HLO text (None only from a backend that cannot print it)."""
    text = compiled.as_text()
    if text is None:
        raise ValueError("this backend gives no text for its compiled programs.")
    return text


def _entry_name(text: str) -> str:
    """The name of the compiled module's ENTRY computation."""
    match = _ENTRY.search(text)
    if match is None:
        raise ValueError("the compiled module's text has no ENTRY computation.")
    return match["name"]


def _computations(text: str) -> dict[str, list[str]]:
    """The compiled module's computations: name -> instruction lines."""
    computations: dict[str, list[str]] = {}
    current: list[str] | None = None  # the lines of the computation being read
    for line in text.splitlines():
        header = _COMPUTATION.match(line)
        if header:
            current = computations.setdefault(header["name"], [])
        elif line.startswith("}"):
            current = None
        elif current is not None:
            current.append(line)
    return computations


def _shape(dims: str) -> tuple[int, ...]:
    return tuple(int(size) for size in dims.split(",")) if dims else ()


def _results(lines: list[str]) -> set[str]:
    """The names of a computation's results: its ROOT, and what a ROOT tuple or bitcast passes on."""
    by_name = {match["name"]: line for line in lines if (match := _INSTRUCTION_NAME.match(line))}
    root = next(
        match["name"]
        for line in lines
        if line.lstrip().startswith("ROOT") and (match := _INSTRUCTION_NAME.match(line))
    )
    results, pending = set(), [root]
    while pending:
        name = pending.pop()
        results.add(name)
        passes_on = _PASSES_ON.search(by_name[name])
        if passes_on:
            pending += re.findall(r"%([\w.\-]+)", passes_on["operands"])
    return results


def written_arrays(fn: Callable, *args) -> dict[str, tuple[int, ...]]:
    """The arrays that `jax.jit(fn)(*args)`, once compiled, writes to memory between its
    loops, as {XLA's name: shape}.

    These are the results of the instructions outside fused loops (in the entry computation
    and in the bodies of `while` and `cond`), other than parameters, the program's results,
    the ROOT of every body, tuple plumbing and bitcasts (which only rename memory). Values
    computed inside one fused loop never reach memory and are not listed. `args` may be
    arrays or `jax.ShapeDtypeStruct`s.
    """
    text = _compiled_text(fn, *args)
    computations = _computations(text)
    fused_bodies = {match["name"] for match in _FUSED_BODY.finditer(text)}
    results = _results(computations[_entry_name(text)])
    written = {}
    for name, lines in computations.items():
        if name in fused_bodies:
            continue
        for line in lines:
            match = _INSTRUCTION.match(line)
            is_root = line.lstrip().startswith("ROOT")
            if (
                match
                and match["name"] not in results
                and not is_root
                and not _NOT_WRITTEN.search(line)
            ):
                written[match["name"]] = _shape(match["dims"])
    return written


def intermediate_arrays(fn: Callable, *args, shape: tuple[int, ...]) -> dict[str, tuple[int, ...]]:
    """The arrays that `jax.jit(fn)(*args)` writes between its loops (see `written_arrays`) and
    that hold at least half as many entries as an array of `shape`, as {XLA's name: shape}.

    Size, not shape, because XLA may write an `(n, p)` value in another shape: rearranged into
    blocks, or all but its last rows. Half, because no such array is cheap: writing it costs at
    least half a pass over an array of `shape`.
    """
    at_least = math.prod(shape) / 2
    return {
        name: dims
        for name, dims in written_arrays(fn, *args).items()
        if math.prod(dims) >= at_least
    }


def entry_computation(fn: Callable, *args, **jit_options) -> str:
    """The top level of `jax.jit(fn, **jit_options)(*args)` once compiled: the instructions of
    XLA's entry computation, one per line, without their metadata. Each `fusion` is one loop; an
    array that one instruction passes to another is in memory (a bitcast only renames it).
    `jit_options` are `jax.jit`'s keyword arguments, such as `donate_argnums=0`."""
    text = _compiled_text(fn, *args, **jit_options)
    lines = _computations(text)[_entry_name(text)]
    return "\n".join(_ANNOTATIONS.sub("", line.strip()) for line in lines)


def entry_opcodes(fn: Callable, *args) -> list[str]:
    """The distinct opcodes of `entry_computation(fn, *args)`, sorted: what kinds of instruction
    the compiled program runs (for example only `constant` once XLA has folded everything)."""
    return sorted({match["opcode"] for match in _OPCODE.finditer(entry_computation(fn, *args))})


COLLECTIVE_OPCODES = (
    "all-reduce",
    "all-gather",
    "reduce-scatter",
    "collective-permute",
    "all-to-all",
)
"""The HLO instructions that move data between devices (`collectives.HLO_NAMES` maps `lax` to them)."""

_COLLECTIVE = re.compile(
    # A tuple result type, nested one level in an asynchronous start, marks every fifth
    # element with a comment, `/*index=5*/`.
    r"=\s*(?P<shape>\((?:[^=()]|/\*index=\d+\*/|\((?:[^=()]|/\*index=\d+\*/)*\))*\)"
    r"|[a-z]+\d*\[[\d,]*\]\S*)\s+"
    r"(?P<opcode>all-reduce|all-gather|reduce-scatter|collective-permute|all-to-all)(?:-start)?\("
)
_ARRAY_TYPE = re.compile(r"(?P<dtype>[a-z]+)(?P<bits>\d+)\[(?P<dims>[\d,]*)\]")


def _result_bytes(shape_text: str) -> int:
    """The bytes of an instruction's result type, `f32[16,8]{1,0}` or a tuple of such."""
    total = 0
    for match in _ARRAY_TYPE.finditer(shape_text):
        total += math.prod(_shape(match["dims"])) * max(int(match["bits"]) // 8, 1)
    return total


def collectives(fn: Callable, *args, **kwargs) -> list[tuple[str, int]]:
    """The collectives of `jax.jit(fn)(*args, **kwargs)` once compiled, in program order, each
    as (HLO opcode, bytes of its result on one device); nested computations (loop bodies)
    included, an asynchronous `...-start`/`...-done` pair counted once.

    `args` may be sharded arrays or `jax.ShapeDtypeStruct`s with shardings: the program is
    compiled for those layouts, and the shapes are per device. A function that is already
    jitted is lowered as it is (its static `kwargs` included), so a program it has already
    compiled for these arguments comes from JAX's cache instead of compiling again.
    """
    lowered = (
        fn.lower(*args, **kwargs)
        if hasattr(fn, "lower")
        else jax.jit(partial(fn, **kwargs)).lower(*args)
    )
    text = _text(lowered.compile())
    return [
        (match["opcode"], _result_bytes(match["shape"])) for match in _COLLECTIVE.finditer(text)
    ]


def collective_counts(fn: Callable, *args, **kwargs) -> dict[str, int]:
    """How many of each collective `collectives(fn, *args, **kwargs)` finds: {HLO opcode: count},
    every opcode of `COLLECTIVE_OPCODES` present (0 when absent)."""
    counts = dict.fromkeys(COLLECTIVE_OPCODES, 0)
    for opcode, _ in collectives(fn, *args, **kwargs):
        counts[opcode] += 1
    return counts


class Pass(NamedTuple):
    """One top-level instruction of a compiled program: a loop over memory (a fusion), a
    library call (a matrix product, a LAPACK routine) or a copy.

    Attributes:
        name: XLA's name for it, such as `add_exponential_fusion`.
        opcode: `fusion`, `dot`, `custom-call`, `copy`, ...
        bytes: the bytes it reads (its operands) and writes (its result), as in memory.
        reads: how many of its operands hold at least half as many entries as `shape`.
        writes: how many of the arrays it writes do: 0 or 1, except for a fusion that writes
            several arrays in one loop (with `CPU_MULTI_OUTPUT_FUSION`).
    """

    name: str
    opcode: str
    bytes: int
    reads: int
    writes: int


_TYPED_INSTRUCTION = re.compile(
    r"^\s*(?:ROOT\s+)?%(?P<name>[\w.\-]+)\s*=\s*(?P<type>\(.*?\)|\S+)\s+(?P<opcode>[a-z][\w\-]*)\((?P<rest>.*)$"
)
_BOOKKEEPING = ("parameter", "get-tuple-element", "tuple", "bitcast", "constant")


def passes(compiled: jax.stages.Compiled, shape: tuple[int, ...]) -> list[Pass]:
    """The passes of `compiled`'s entry computation, in program order (see `Pass`): what one run
    of it reads and writes, instruction by instruction. Parameters, constants, tuple plumbing and
    bitcasts move nothing and are left out. For the body of a loop compiled on its own
    (`roofline.loop_body_program`), the passes of one iteration.

    `reads` and `writes` count the arrays of at least half the size of `shape` (as
    `intermediate_arrays` does): the passes over the `(n, p)` data, in the PLN fits.
    """
    text = _text(compiled)
    lines = _computations(text)[_entry_name(text)]
    types, found = {}, []
    for line in lines:
        match = _TYPED_INSTRUCTION.match(_ANNOTATIONS.sub("", line))
        if match:
            types[match["name"]] = match["type"]
            found.append(match)
    at_least = math.prod(shape) / 2

    def entries(type_text: str) -> int:
        return sum(math.prod(_shape(m["dims"])) for m in _ARRAY_TYPE.finditer(type_text))

    result = []
    for match in found:
        if match["opcode"] in _BOOKKEEPING:
            continue
        operand_text = match["rest"].split("), ")[0]
        operands = [
            types[name] for name in re.findall(r"%([\w.\-]+)", operand_text) if name in types
        ]
        result.append(
            Pass(
                name=match["name"],
                opcode=match["opcode"],
                bytes=_result_bytes(match["type"]) + sum(_result_bytes(t) for t in operands),
                reads=sum(entries(t) >= at_least for t in operands),
                writes=sum(
                    entries(array[0]) >= at_least for array in _ARRAY_TYPE.finditer(match["type"])
                ),
            )
        )
    return result


class PassTotals(NamedTuple):
    """What a list of `Pass`es adds up to: `(n, p)` arrays written and read, and bytes."""

    writes: int
    reads: int
    bytes: int


def pass_totals(found: list[Pass]) -> PassTotals:
    """The sums of `passes(...)`: arrays written, arrays read, bytes."""
    return PassTotals(
        sum(p.writes for p in found), sum(p.reads for p in found), sum(p.bytes for p in found)
    )


CPU_MULTI_OUTPUT_FUSION = "--xla_backend_extra_options=xla_cpu_use_multi_output_fusion"
"""`XLA_FLAGS` that turn on XLA:CPU's multi-output fusion, off by default (checked with jax
0.12.0.1): sibling loops of one shape, such as level 5's velocities of M and of S, then run
as one loop that writes both and reads their common operands once (a loop and the loop that
reads its result stay two). XLA reads `XLA_FLAGS` once, when its backend
starts, so a program compiled with them runs in a fresh process
(`bench.run_fresh(..., xla_flags=CPU_MULTI_OUTPUT_FUSION)`)."""
