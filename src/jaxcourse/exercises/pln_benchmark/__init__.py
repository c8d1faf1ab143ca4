"""Checkers for the PLN benchmark chapter's exercises, one private module per exercise."""

from ._column_sums import COLUMN_SUMS_SHAPES as COLUMN_SUMS_SHAPES
from ._column_sums import FUSION_SHAPE as FUSION_SHAPE
from ._column_sums import HINTS as _COLUMN_SUMS_HINTS
from ._column_sums import SAVING_RTOL as SAVING_RTOL
from ._column_sums import SAVING_SHAPES as SAVING_SHAPES
from ._column_sums import check_bytes_saved as check_bytes_saved
from ._column_sums import check_sums_in_one_loop as check_sums_in_one_loop
from ._column_sums import check_sums_through_memory as check_sums_through_memory
from ._latent_mean_gradient import HINTS as _LATENT_MEAN_GRADIENT_HINTS
from ._latent_mean_gradient import check_latent_mean_gradient as check_latent_mean_gradient
from ._momentum_update import HINTS as _MOMENTUM_UPDATE_HINTS
from ._momentum_update import check_momentum_update as check_momentum_update
from ._rprop_step import HINTS as _RPROP_STEP_HINTS
from ._rprop_step import RPROP_CASES as RPROP_CASES
from ._rprop_step import check_rprop_step as check_rprop_step
from ._time_to_target import HINTS as _TIME_TO_TARGET_HINTS
from ._time_to_target import check_time_to_target as check_time_to_target

HINTS: dict[str, tuple[str, ...]] = {
    **_TIME_TO_TARGET_HINTS,
    **_LATENT_MEAN_GRADIENT_HINTS,
    **_RPROP_STEP_HINTS,
    **_MOMENTUM_UPDATE_HINTS,
    **_COLUMN_SUMS_HINTS,
}
"""Each checker's name -> its hints, from a first nudge to the shape of the answer."""
