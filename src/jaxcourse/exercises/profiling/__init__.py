"""Checkers for the exercises of the chapter 'Where the time goes: profiles, rooflines and memory',
one private module per exercise."""

from ._donated_state import HINTS as _DONATED_STATE_HINTS
from ._donated_state import check_donated_state as check_donated_state
from ._donated_state import ema_step as ema_step
from ._donated_state import sgd_step as sgd_step
from ._intensity import HINTS as _INTENSITY_HINTS
from ._intensity import check_intensity as check_intensity
from ._limited_by import HINTS as _LIMITED_BY_HINTS
from ._limited_by import check_limited_by as check_limited_by
from ._low_memory_grad import HINTS as _LOW_MEMORY_GRAD_HINTS
from ._low_memory_grad import check_low_memory_grad as check_low_memory_grad
from ._low_memory_grad import scan_loss as scan_loss
from ._low_memory_grad import wide_body as wide_body
from ._most_expensive_op import HINTS as _MOST_EXPENSIVE_OP_HINTS
from ._most_expensive_op import check_most_expensive_op as check_most_expensive_op

HINTS: dict[str, tuple[str, ...]] = {
    **_INTENSITY_HINTS,
    **_LIMITED_BY_HINTS,
    **_LOW_MEMORY_GRAD_HINTS,
    **_MOST_EXPENSIVE_OP_HINTS,
    **_DONATED_STATE_HINTS,
}
"""Each checker's name -> its hints, from a first nudge to the shape of the answer."""
