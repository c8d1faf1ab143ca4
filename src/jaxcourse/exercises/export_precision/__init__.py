"""Checkers for the exercises of the chapter 'Shipping a compiled program, and choosing its
precision', one private module per exercise."""

from ._cheapest_dtype import CANDIDATES as CANDIDATES
from ._cheapest_dtype import HINTS as _CHEAPEST_DTYPE_HINTS
from ._cheapest_dtype import check_cheapest_dtype as check_cheapest_dtype
from ._cheapest_dtype import matmul_in as matmul_in
from ._export_rows import HINTS as _EXPORT_ROWS_HINTS
from ._export_rows import check_export_rows as check_export_rows
from ._mixed_step import HINTS as _MIXED_STEP_HINTS
from ._mixed_step import check_mixed_step as check_mixed_step
from ._stops_counting import HINTS as _STOPS_COUNTING_HINTS
from ._stops_counting import check_stops_counting as check_stops_counting

HINTS: dict[str, tuple[str, ...]] = {
    **_EXPORT_ROWS_HINTS,
    **_STOPS_COUNTING_HINTS,
    **_MIXED_STEP_HINTS,
    **_CHEAPEST_DTYPE_HINTS,
}
"""Each checker's name -> its hints, from a first nudge to the shape of the answer."""
