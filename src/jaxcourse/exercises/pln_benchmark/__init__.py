"""Checkers for the PLN benchmark chapter's exercises, one private module per exercise."""

from ._column_sums import COLUMN_SUMS_SHAPES as COLUMN_SUMS_SHAPES
from ._column_sums import FUSION_SHAPE as FUSION_SHAPE
from ._column_sums import SAVING_RTOL as SAVING_RTOL
from ._column_sums import SAVING_SHAPES as SAVING_SHAPES
from ._column_sums import check_bytes_saved as check_bytes_saved
from ._column_sums import check_sums_in_one_loop as check_sums_in_one_loop
from ._column_sums import check_sums_through_memory as check_sums_through_memory
from ._latent_mean_gradient import check_latent_mean_gradient as check_latent_mean_gradient
from ._momentum_update import check_momentum_update as check_momentum_update
from ._rprop_step import RPROP_CASES as RPROP_CASES
from ._rprop_step import check_rprop_step as check_rprop_step
from ._time_to_target import check_time_to_target as check_time_to_target
