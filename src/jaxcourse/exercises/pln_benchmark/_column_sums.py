"""Checkers for the PLN benchmark chapter's exercise on fused column sums: the form that writes
the product to memory, the fused form, and the bytes the fused form saves."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from ...checks import call_answer, exercise_checker, require
from ...pln.constants import OAKS100_SHAPE
from ...roofline import cost_of
from .._jaxpr import equations, traced_program

FUSION_SHAPE = OAKS100_SHAPE
"""The size at which the column-sums checker asks XLA what it writes: oaks stacked 100 times."""

COLUMN_SUMS_SHAPES = ((300, 7), (1, 5), (128, 1))
"""Shapes whose column sums the checker compares: rows that are no multiple of a block, a single
row, a single column."""

SAVING_SHAPES = (OAKS100_SHAPE, (4096, 256))
"""Shapes at which the checker compares the estimated saving with the compiled programs'."""

SAVING_RTOL = 0.05
"""How close the estimate must come to the difference of the compiled programs' bytes (the
programs also move a few vectors the size of one row or column, which an estimate may leave out)."""


def _column_sums_values(sums, a, b, w, under_jit: bool, what: str) -> np.ndarray:
    """`sums(a, b, w)`, eagerly or under jit, as NumPy; a failure becomes a hint where it is a
    typical one."""
    blocks = (
        f"{what} cuts the rows into blocks and fails for {a.shape[0]} rows. Column sums must work "
        "for any number of rows."
    )
    product = (
        "the shapes do not fit a product: the weights w have one entry per row, so w @ x needs "
        "x with one row per entry of w, and w[:, None] broadcasts w over the columns."
    )
    numpy = (
        jax.errors.TracerArrayConversionError,
        "",
        "under jit a, b and w are tracers, which NumPy cannot read: use jnp, not np.",
    )
    hints = (numpy,) + tuple(
        (error_class, fragment, hint)
        for error_class in (TypeError, ValueError)
        for fragment, hint in (
            ("reshape", blocks),
            ("dot_general", product),
            ("matmul", product),
            ("does not match previous terms", product),
            ("Incompatible shapes for broadcasting", product),
        )
    )
    answer = jax.jit(sums) if under_jit else sums
    how = "under jax.jit" if under_jit else "eagerly"
    got = call_answer(answer, a, b, w, what=f"{what} ({how})", hints=hints)
    require(got is not None, f"{what} must return the weighted column sums of a * b.")
    require(
        not isinstance(got, (tuple, list, dict, str)),
        f"{what} must return one array of column sums, not a {type(got).__name__}.",
    )
    return np.asarray(got, np.float64)


def _require_column_sums_values(sums, what: str) -> None:
    """The values of `sums(a, b, w)` on random float32 arrays of `COLUMN_SUMS_SHAPES`, eagerly
    and under jit."""
    rng = np.random.default_rng(5)
    for shape in COLUMN_SUMS_SHAPES:
        a, b = (jnp.asarray(rng.normal(size=shape), jnp.float32) for _ in range(2))
        w = jnp.asarray(rng.uniform(0.5, 2.0, size=shape[0]), jnp.float32)
        a64, b64, w64 = (np.asarray(v, np.float64) for v in (a, b, w))
        expected = (w64[:, None] * a64 * b64).sum(axis=0)
        for under_jit in (False, True):
            got = _column_sums_values(sums, a, b, w, under_jit, what)
            require(
                got.shape != (),
                f"for shape {shape} {what} returned one number: that sums every entry. Column sums add "
                "over the rows only, one number per column (axis=0).",
            )
            require(
                got.shape != (shape[0],) or shape[0] == shape[1],
                f"for shape {shape} {what} returned {shape[0]} numbers, one per row: those are row sums. "
                "Column sums add over the rows, one number per column.",
            )
            require(
                got.shape == expected.shape,
                f"for shape {shape} {what} must return shape {expected.shape}, got {got.shape}.",
            )
            how = "under jit" if under_jit else "eagerly"
            if np.allclose(got, expected, rtol=1e-5, atol=1e-5):
                continue
            require(
                not np.allclose(got, (a64 * b64).sum(axis=0), rtol=1e-4, atol=1e-5),
                f"for shape {shape}, {how}, {what} returned the plain column sums of a * b: "
                "multiply row i by its weight w[i] before summing.",
            )
            require(
                not np.allclose(got, expected / shape[0], rtol=1e-4, atol=1e-6),
                f"for shape {shape}, {how}, {what} returned the column MEANS of the weighted "
                "product: the exercise asks for their sums (no division by the number of rows).",
            )
            require(
                not np.allclose(got, a64.sum(axis=0) * b64.sum(axis=0), rtol=1e-4, atol=1e-4),
                f"for shape {shape}, {how}, {what} multiplied the column sums of a and of b: "
                "sum the products a * b, which is not the product of the sums.",
            )
            require(
                np.allclose(got, expected, rtol=1e-5, atol=1e-5),
                f"for shape {shape}, {how}, {what} should give {expected}, got {got}.",
            )


def _operands(shape) -> list:
    """a, b and w for `shape`, as shapes and dtypes."""
    return [jax.ShapeDtypeStruct(shape, jnp.float32)] * 2 + [
        jax.ShapeDtypeStruct(shape[:1], jnp.float32)
    ]


def _require_not_a_python_loop(sums, what: str) -> None:
    rows = COLUMN_SUMS_SHAPES[0]
    n_operations = len(traced_program(sums, *_operands(rows), what=what).jaxpr.eqns)
    require(
        n_operations < rows[0],
        f"{what} adds the rows one by one in a Python loop: jit unrolls it into {n_operations} "
        f"operations for {rows[0]} rows. Let one jnp operation add up the rows.",
    )


def _require_elementwise_product(sums, what: str) -> None:
    """The program multiplies a by b entry by entry (a `mul`), rather than through a matrix
    product such as diag(a' b), which has the same values and p times the arithmetic."""
    shape = COLUMN_SUMS_SHAPES[0]
    jaxpr = traced_program(sums, *_operands(shape), what=what)
    size = shape[0] * shape[1]
    matrix_products = [
        eqn
        for eqn in equations(jaxpr)
        if eqn.primitive.name == "dot_general"
        and all(np.prod(getattr(v.aval, "shape", ())) == size for v in eqn.invars)
    ]
    require(
        not matrix_products,
        f"the numbers are right, but {what} multiplies the two whole matrices, never a by b entry "
        "by entry: a matrix product such as diag(a' b) has the same values, through a p x p product (p times the "
        "arithmetic) that never forms a * b. Compute a * b, then add up its rows.",
    )


def _require_writes_the_product(sums) -> None:
    """For `a, b` at `FUSION_SHAPE`, XLA writes an array as large as `a * b` before summing."""
    from ...hlo import intermediate_arrays

    _require_not_a_python_loop(sums, "sums_through_memory")
    _require_elementwise_product(sums, "sums_through_memory")
    written = intermediate_arrays(sums, *_operands(FUSION_SHAPE), shape=FUSION_SHAPE)
    require(
        bool(written),
        f"the numbers are right, but for sums_through_memory XLA writes nothing as large as a * b on "
        f"jax {jax.__version__}: it computes the products inside the summing loop. Make the product "
        "the operand of an instruction of its own, for example the product of w with a * b, "
        "which becomes a dot that reads a * b from memory.",
    )


def _require_one_loop(sums) -> None:
    """For `a, b` at `FUSION_SHAPE`, XLA writes no array as large as `a * b` before summing."""
    from ...hlo import intermediate_arrays

    _require_not_a_python_loop(sums, "sums_in_one_loop")
    _require_elementwise_product(sums, "sums_in_one_loop")
    written = intermediate_arrays(sums, *_operands(FUSION_SHAPE), shape=FUSION_SHAPE)
    if not written:
        return
    primitives = {
        eq.primitive.name
        for eq in traced_program(sums, *_operands(FUSION_SHAPE), what="sums_in_one_loop").jaxpr.eqns
    }
    version = f"jax {jax.__version__}"
    require(
        not {"reshape", "dot_general"} <= primitives,
        f"the numbers are right, but to cut a * b into blocks of rows XLA writes it to memory, "
        f"rearranged (it wrote {written}). On {version} the blocks cost a pass instead of saving one.",
    )
    require(
        "dot_general" not in primitives,
        f"the numbers are right, but for sums_in_one_loop XLA writes a * b to memory before it sums "
        f"(it wrote {written}): on {version} a product of w with a matrix is a dot of its own, "
        "outside the loop that computes a * b. A plain reduction over the rows of the weighted "
        "product is fused.",
    )
    require(
        False,
        f"the numbers are right, but for sums_in_one_loop XLA writes {written} to memory before it sums.",
    )


def _compiled_bytes(sums, shape) -> float:
    return cost_of(jax.jit(sums), *_operands(shape)).bytes_accessed


def _reference_forms():
    """The two forms: the product of w with a * b (writes a * b) and the plain reduction."""
    return (lambda a, b, w: w @ (a * b)), (lambda a, b, w: jnp.sum(w[:, None] * a * b, axis=0))


def _require_saving(bytes_saved) -> None:
    """`bytes_saved(n, p, itemsize)` within `SAVING_RTOL` of the difference of the bytes the two
    compiled forms access, at `SAVING_SHAPES`."""
    through_memory, one_loop = _reference_forms()
    for n, p in SAVING_SHAPES:
        measured = _compiled_bytes(through_memory, (n, p)) - _compiled_bytes(one_loop, (n, p))
        got = call_answer(bytes_saved, n, p, 4, what="bytes_saved")
        require(
            isinstance(got, (int, float, np.integer, np.floating)) and not isinstance(got, bool),
            f"bytes_saved must return one number of bytes, got {type(got).__name__}.",
        )
        got = float(got)
        if abs(got - measured) <= SAVING_RTOL * measured:
            continue
        entries = n * p
        require(
            not np.isclose(got, entries * 4, rtol=SAVING_RTOL),
            f"for n={n}, p={p} you counted writing a * b once ({got:,.0f} bytes). The loop that "
            "writes it is followed by one that reads it back: the array crosses memory twice.",
        )
        require(
            not np.isclose(got, 2 * entries, rtol=SAVING_RTOL)
            and not np.isclose(got, entries, rtol=SAVING_RTOL),
            f"for n={n}, p={p} you returned {got:,.0f}: that counts entries. Count bytes: multiply by itemsize.",
        )
        require(
            got < 3 * entries * 4,
            f"for n={n}, p={p} you returned {got:,.0f} bytes, more than both forms share: reading a and "
            "b costs the same in both forms, so it cancels. Count only what the first form moves extra.",
        )
        require(
            False,
            f"for n={n}, p={p} the compiled programs differ by {measured:,.0f} bytes (cost_analysis' "
            f"'bytes accessed'); your estimate is {got:,.0f}.",
        )


@exercise_checker(
    hints=(
        "XLA fuses an elementwise product into the reduction that reads it, unless the "
        "reader is an instruction of its own such as a dot: a weighted sum over the rows "
        "is a product of w with a matrix.",
        "w @ (a * b) sums the weighted rows of a * b through a dot, which makes XLA write "
        "a * b first; a plain reduction over the rows (axis 0) of the weighted product does "
        "not. One number per column, for any number of rows.",
    )
)
def check_sums_through_memory(sums_through_memory):
    """`sums_through_memory(a, b, w)`: the column sums of `w[:, None] * a * b`, eagerly and
    under jit, compiled so that XLA writes `a * b` to memory before it sums."""
    require(
        callable(sums_through_memory),
        "pass the function itself: check_sums_through_memory(sums_through_memory).",
    )
    _require_column_sums_values(sums_through_memory, "sums_through_memory")
    _require_writes_the_product(sums_through_memory)


@exercise_checker(
    hints=(
        "Write the weighted sum as a plain reduction of an elementwise product, and let XLA "
        "fuse the multiplications into it.",
        "Multiply every row of a * b by its weight (w[:, None] broadcasts over the columns) "
        "and sum over axis 0: one sum per column, and no dot (w @ ..., a matmul) whose "
        "operand XLA must write first.",
    )
)
def check_sums_in_one_loop(sums_in_one_loop):
    """`sums_in_one_loop(a, b, w)`: the column sums of `w[:, None] * a * b`, eagerly and under
    jit, compiled so that XLA writes no array as large as `a * b` to memory."""
    require(
        callable(sums_in_one_loop),
        "pass the function itself: check_sums_in_one_loop(sums_in_one_loop).",
    )
    _require_column_sums_values(sums_in_one_loop, "sums_in_one_loop")
    _require_one_loop(sums_in_one_loop)


@exercise_checker(
    hints=(
        "Count what the first form does that the second does not: the product a * b, n * p "
        "entries of itemsize bytes each, goes to memory and comes back.",
        "It is written once and read once: 2 * n * p * itemsize. Reading a and b is common "
        "to both forms and cancels; count bytes (times itemsize), not entries.",
    )
)
def check_bytes_saved(bytes_saved):
    """`bytes_saved(n, p, itemsize)`: the memory traffic the fused column sums of `a * b` save
    over the form that writes `a * b`, checked against the two compiled programs' `cost_analysis`."""
    require(callable(bytes_saved), "pass the function itself: check_bytes_saved(bytes_saved).")
    _require_saving(bytes_saved)
    n, p = SAVING_SHAPES[0]
    for itemsize in (2, 8):
        got = call_answer(bytes_saved, n, p, itemsize, what="bytes_saved")
        expected = 2 * n * p * itemsize
        require(
            isinstance(got, (int, float, np.integer, np.floating))
            and abs(float(got) - expected) <= SAVING_RTOL * expected,
            f"for n={n}, p={p} and itemsize={itemsize} (bfloat16 or float64 entries) you returned "
            f"{got!r}, "
            + (
                "the same as for float32's 4 bytes: use the itemsize argument, not a fixed 4."
                if isinstance(got, (int, float, np.integer, np.floating))
                and np.isclose(float(got), expected / itemsize * 4)
                else f"expected {expected:,}: the saving grows in proportion to itemsize."
            ),
        )
