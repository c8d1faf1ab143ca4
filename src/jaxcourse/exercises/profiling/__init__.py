"""Checkers for the exercises of the chapter 'Where the time goes: profiles, rooflines and memory',
one private module per exercise."""

from ._donated_state import check_donated_state as check_donated_state
from ._donated_state import ema_step as ema_step
from ._donated_state import sgd_step as sgd_step
from ._intensity import check_intensity as check_intensity
from ._limited_by import check_limited_by as check_limited_by
from ._low_memory_grad import check_low_memory_grad as check_low_memory_grad
from ._low_memory_grad import scan_loss as scan_loss
from ._low_memory_grad import wide_body as wide_body
from ._most_expensive_op import check_most_expensive_op as check_most_expensive_op
