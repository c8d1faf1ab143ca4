"""Checkers for the exercises of the chapter 'Fitting PLN at five levels of JIT', one private
module per exercise."""

from .._collect import export_checkers
from ._common import default_optimizer as default_optimizer
from ._level2_from_pieces import LEVEL2_ITERATIONS as LEVEL2_ITERATIONS
from ._level2_from_pieces import SECOND_OPTIMIZER as SECOND_OPTIMIZER

export_checkers(__name__, globals())
