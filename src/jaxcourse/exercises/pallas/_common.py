"""What the Pallas chapter's checkers share: the learner's `pallas_call` read back from the traced
program (grid, block shapes, index maps), and results compared with the `jnp` reference, each
mismatch turned into a hint that names the usual mistake."""

from __future__ import annotations

from collections.abc import Callable
from itertools import product

import jax
import numpy as np

from ...checks import (
    CheckFailed,
    call_answer,
    close,
    require,
    require_accepts,
    require_array,
    shorten,
)
from ...pallas_kernels import BlockMap, CallLayout, pallas_call_layouts

VECTOR_BLOCK = 128
"""The block of the vector exercises (1 and 4)."""
VECTOR_LENGTHS = (1024, 1000, 130, 7)
"""The vector exercises' lengths: only the first divides the block; the last is shorter than one."""

INTERPRET_HINT = (
    "pl.pallas_call raised 'Only interpret mode is supported on CPU backend': a CPU has no "
    "compiled Pallas kernels. Pass interpret=interpret_mode() to pl.pallas_call (True on a CPU, "
    "False on a GPU or TPU)."
)

CALL_HINTS = (
    (ValueError, "Only interpret mode is supported", INTERPRET_HINT),
    (
        ValueError,
        "Invalid shape for `swap`",
        "a write to a ref got a value whose shape is not the ref's: a kernel writes whole "
        "blocks, out_ref[...] = value with value of the block's shape (keepdims=True keeps a "
        "sum's axes)",
    ),
    (
        ValueError,
        "Invalid shape for `addupdate`",
        "an update `ref[...] += value` got a value whose shape is not the ref's block shape",
    ),
    (
        ValueError,
        "Index map function",
        "an index map failed or returned the wrong number of indices: it takes one argument "
        "per grid axis and returns one block index per dimension of the array",
    ),
    (
        TypeError,
        "Index map function",
        "an index map failed: it takes one argument per grid axis (the program's indices) and "
        "returns a tuple of block indices, one per dimension of the array",
    ),
)
"""Errors of a wrong pallas_call, and the hint each gets (`checks.call_answer`'s format)."""


def random_array(shape: tuple[int, ...], seed: int, *, scale: float = 1.0) -> jax.Array:
    """Float32 normal numbers times `scale`, the same for a given `seed`."""
    return scale * jax.random.normal(jax.random.key(seed), shape)


def the_call(answer: Callable, *args, what: str = "your function") -> CallLayout:
    """The one `pl.pallas_call` of `answer(*args)`, read from its traced program; fails with a
    hint when there is none (a `jnp` expression) or more than one."""
    require_accepts(answer, *args, what=what)
    layouts = call_answer(
        lambda *a: pallas_call_layouts(answer, *a), *args, what=what, hints=CALL_HINTS
    )
    require(
        len(layouts) > 0,
        f"{what} contains no pl.pallas_call: the exercise asks for a Pallas kernel, and a jnp "
        "expression, however right its numbers, is not one. Write a kernel on refs and call it "
        "with pl.pallas_call(kernel, out_shape=..., grid=..., in_specs=..., out_specs=...).",
    )
    require(
        len(layouts) == 1,
        f"{what} runs {len(layouts)} pl.pallas_calls: the exercise asks for one kernel that does "
        "all the work in one pass.",
    )
    return layouts[0]


def require_grid(layout: CallLayout, grid: tuple[int, ...], meaning: str, shapes: str) -> None:
    """Fails unless the call's grid is `grid`; `meaning` says in words what each axis counts."""
    if layout.grid == tuple(grid):
        return
    require(
        sorted(layout.grid) != sorted(grid),
        f"for {shapes} your grid is {layout.grid}; the exercise asks for {tuple(grid)} "
        f"({meaning}): the same axes in another order. The order matters: a reduction axis "
        "goes last, so that the programs that share an output block run one after another.",
    )
    short = len(layout.grid) == len(grid) and any(
        got == want - 1 for got, want in zip(layout.grid, grid)
    )
    require(
        not short,
        f"for {shapes} your grid is {layout.grid}, one program short of {tuple(grid)}: integer "
        "division leaves out the last, partial block. Round up with pl.cdiv(size, block).",
    )
    raise CheckFailed(
        f"for {shapes} your grid is {layout.grid}; the exercise asks for {tuple(grid)} ({meaning})."
    )


def require_blocks(blocks: tuple[BlockMap, ...], shape: tuple, kind: str) -> None:
    """Fails unless every BlockSpec in `blocks` has block shape `shape`."""
    for position, block in enumerate(blocks):
        require(
            block.block_shape == tuple(shape),
            f"the BlockSpec of {kind} {position} has block shape {block.block_shape}; the "
            f"exercise asks for {tuple(shape)}.",
        )


def require_index_map(
    block: BlockMap, grid: tuple[int, ...], expected: Callable, name: str
) -> None:
    """Fails unless `block`'s index map returns `expected(*program)` at every program of `grid`,
    with a hint of its own for element offsets in place of block indices."""
    for program in product(*(range(size) for size in grid)):
        try:
            got = block.index_map(*program)
        except Exception as error:  # the learner's index map, evaluated
            raise CheckFailed(
                f"the index map of {name} failed at program {program} ({type(error).__name__}: "
                f"{shorten(str(error), 120)}): it must return a tuple of integer block indices."
            ) from None
        want = tuple(expected(*program))
        if got == want:
            continue
        sizes = [1 if size is None else size for size in block.block_shape]
        offsets = tuple(index * size for index, size in zip(want, sizes))
        require(
            got != offsets,
            f"the index map of {name} returns {got} at program {program}: element offsets. It "
            f"must return block indices, {want}: Pallas multiplies them by the block shape "
            f"{block.block_shape} itself.",
        )
        raise CheckFailed(
            f"the index map of {name} returns {got} at program {program}; that program needs "
            f"block {want}. An index map takes the program's indices, one per grid axis in the "
            "grid's order, and returns the block's index along each dimension."
        )


def result_of(answer: Callable, args: tuple, shape: tuple, what: str, expected: str) -> np.ndarray:
    """`answer(*args)`, run through `call_answer`, as one float array of `shape`."""
    result = call_answer(answer, *args, what=what, hints=CALL_HINTS)
    return require_array(result, shape, what=what, expected=expected)


def require_close(
    got: np.ndarray,
    want,
    *,
    shapes: str,
    nan_hint: str,
    rtol: float = 1e-5,
    atol: float = 1e-5,
) -> None:
    """Fails unless `got` is close to `want`; NaN where `want` has none gets `nan_hint`."""
    want = np.asarray(want)
    nan = np.isnan(got) & ~np.isnan(want)
    require(
        not nan.any(), f"for {shapes}, {int(nan.sum())} entries of your result are NaN. {nan_hint}"
    )
    if not close(got, want, rtol=rtol, atol=atol):
        worst = np.unravel_index(np.argmax(np.abs(got - want)), want.shape)
        raise CheckFailed(
            f"for {shapes}, your result differs from the reference: at index {tuple(map(int, worst))} "
            f"it is {got[worst]:.6g}, not {want[worst]:.6g}."
        )
