"""Checkers for the exercises of the chapter 'Fitting PLN at five levels of JIT', one private
module per exercise."""

from ._common import default_optimizer as default_optimizer
from ._donating_step import HINTS as _DONATING_STEP_HINTS
from ._donating_step import check_donating_step as check_donating_step
from ._fit_with_learning_rate import HINTS as _FIT_WITH_LEARNING_RATE_HINTS
from ._fit_with_learning_rate import check_fit_with_learning_rate as check_fit_with_learning_rate
from ._level2_from_pieces import HINTS as _LEVEL2_FROM_PIECES_HINTS
from ._level2_from_pieces import LEVEL2_ITERATIONS as LEVEL2_ITERATIONS
from ._level2_from_pieces import SECOND_OPTIMIZER as SECOND_OPTIMIZER
from ._level2_from_pieces import check_level2_from_pieces as check_level2_from_pieces
from ._scan_loop import HINTS as _SCAN_LOOP_HINTS
from ._scan_loop import check_scan_loop as check_scan_loop

HINTS: dict[str, tuple[str, ...]] = {
    **_DONATING_STEP_HINTS,
    **_SCAN_LOOP_HINTS,
    **_FIT_WITH_LEARNING_RATE_HINTS,
    **_LEVEL2_FROM_PIECES_HINTS,
}
"""Each checker's name -> its hints, from a first nudge to the shape of the answer."""
