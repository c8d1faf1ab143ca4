"""Checkers for the exercises of the chapter 'Fitting PLN at five levels of JIT', one private
module per exercise."""

from ._common import default_optimizer as default_optimizer
from ._donating_step import check_donating_step as check_donating_step
from ._fit_with_learning_rate import check_fit_with_learning_rate as check_fit_with_learning_rate
from ._level2_from_pieces import LEVEL2_ITERATIONS as LEVEL2_ITERATIONS
from ._level2_from_pieces import SECOND_OPTIMIZER as SECOND_OPTIMIZER
from ._level2_from_pieces import check_level2_from_pieces as check_level2_from_pieces
from ._scan_loop import check_scan_loop as check_scan_loop
