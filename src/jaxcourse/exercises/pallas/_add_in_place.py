"""Checker for the Pallas chapter's exercise on an output that aliases its input."""

from __future__ import annotations

import jax

from ...checks import call_answer, exercise_checker, require, require_callable
from ._add_vectors import require_vector_layout
from ._common import (
    CALL_HINTS,
    random_array,
    require_close,
    result_of,
)

LENGTHS = (1024, 1000, 7)


def _aliased_bytes(add_in_place, x, y) -> int:
    """The bytes that `jax.jit(add_in_place, donate_argnums=0)`, compiled, aliases."""

    def compiled_aliases(x, y):
        compiled = jax.jit(add_in_place, donate_argnums=0).lower(x, y).compile()
        return compiled.memory_analysis().alias_size_in_bytes

    return call_answer(compiled_aliases, x, y, what="add_in_place, compiled", hints=CALL_HINTS)


@exercise_checker(
    hints=(
        "The kernel is the first exercise's vector add on a grid; what is new is one argument of "
        "pl.pallas_call, input_output_aliases, a dict from input index to output index.",
        "input_output_aliases={0: 0}: output 0 is written into input 0's buffer (x's, not "
        "y's). Under jax.jit with donate_argnums=0 the output then takes no memory of its own.",
    )
)
def check_add_in_place(add_in_place) -> None:
    require_callable(add_in_place, "add_in_place")
    for seed, n in enumerate(LENGTHS):
        x, y = random_array((n,), 2 * seed), random_array((n,), 2 * seed + 1)
        shapes = f"vectors of length {n}"
        layout = require_vector_layout(add_in_place, x, y, "add_in_place")
        aliases = layout.input_output_aliases
        require(
            aliases != ((1, 0),),
            "your pallas_call aliases input 1, y, with the output: the exercise writes x + y "
            "into x's buffer, input_output_aliases={0: 0}.",
        )
        require(
            aliases == ((0, 0),),
            f"your pallas_call's input_output_aliases are {dict(aliases)}; the exercise asks for "
            "{0: 0}: output 0 written into input 0's buffer.",
        )
        got = result_of(add_in_place, (x, y), (n,), "add_in_place", "x + y")
        require_close(got, x + y, shapes=shapes, nan_hint="Write x_ref[...] + y_ref[...].")
    x, y = random_array((1000,), 10), random_array((1000,), 11)
    aliased = _aliased_bytes(add_in_place, x, y)
    require(
        aliased == x.nbytes,
        f"compiled with x donated, your function aliases {aliased} bytes, not x's {x.nbytes}: the "
        "output still has memory of its own.",
    )
