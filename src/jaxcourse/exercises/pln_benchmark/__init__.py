"""Checkers for the PLN benchmark chapter's exercises, one private module per exercise."""

from .._collect import export_checkers
from ._column_sums import COLUMN_SUMS_SHAPES as COLUMN_SUMS_SHAPES
from ._column_sums import FUSION_SHAPE as FUSION_SHAPE
from ._column_sums import SAVING_RTOL as SAVING_RTOL
from ._column_sums import SAVING_SHAPES as SAVING_SHAPES
from ._rprop_step import RPROP_CASES as RPROP_CASES

export_checkers(__name__, globals())
