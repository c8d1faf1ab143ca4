"""What a compiled program writes to memory: the arrays between its fused loops."""

from __future__ import annotations

import re
from typing import Callable

import jax

_COMPUTATION = re.compile(r"^(?:ENTRY\s+)?%(?P<name>[\w.\-]+)\s.*\{$")
_INSTRUCTION = re.compile(r"^\s*(?:ROOT\s+)?%(?P<name>[\w.\-]+)\s*=\s*[a-z]+\d*\[(?P<dims>[\d,]*)\]")
_FUSED_BODY = re.compile(r"kind=k\w+, calls=%(?P<name>[\w.\-]+)")


def _computations(text: str) -> dict[str, list[str]]:
    """The compiled module's computations: name -> instruction lines."""
    computations, current = {}, None
    for line in text.splitlines():
        header = _COMPUTATION.match(line)
        if header:
            current = computations.setdefault(header["name"], [])
        elif line.startswith("}"):
            current = None
        elif current is not None:
            current.append(line)
    return computations


def intermediate_arrays(fn: Callable, *args, shape: tuple[int, ...]) -> list[str]:
    """The arrays of `shape` that `jax.jit(fn)(*args)`, once compiled, writes to memory
    between its loops: the results of the instructions outside fused loops (in the entry
    computation and in the bodies of `while` and `cond`), other than parameters, results and
    tuple plumbing. Values computed inside one fused loop never reach memory and are not
    listed. Names are XLA's, such as `wrapped_multiply`; the list is what to compare.
    """
    text = jax.jit(fn).lower(*args).compile().as_text()
    computations = _computations(text)
    fused_bodies = {match["name"] for match in _FUSED_BODY.finditer(text)}
    wanted = ",".join(str(size) for size in shape)
    found = []
    for name, lines in computations.items():
        if name in fused_bodies:
            continue
        for line in lines:
            match = _INSTRUCTION.match(line)
            if not match or match["dims"] != wanted or line.lstrip().startswith("ROOT"):
                continue
            if re.search(r" (parameter|get-tuple-element|bitcast)\(", line):
                continue
            found.append(match["name"])
    return found
