"""Checkers for the exercises of the chapter 'Pytrees: nested containers of arrays', one private
module per exercise."""

from .._collect import export_checkers
from ._common import require_hashable_structure as require_hashable_structure
from ._train_state import SCHEDULES as SCHEDULES

export_checkers(__name__, globals())
