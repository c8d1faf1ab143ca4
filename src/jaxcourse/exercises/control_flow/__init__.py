"""Checkers for the exercises of the chapter 'Loops and branches with lax control flow', one private
module per exercise."""

from ._ewma import HINTS as _EWMA_HINTS
from ._ewma import check_ewma as check_ewma
from ._horner import HINTS as _HORNER_HINTS
from ._horner import check_horner as check_horner
from ._kepler import HINTS as _KEPLER_HINTS
from ._kepler import MAX_ITER as MAX_ITER
from ._kepler import TOL as TOL
from ._kepler import check_kepler as check_kepler
from ._soft_ramp import HINTS as _SOFT_RAMP_HINTS
from ._soft_ramp import check_soft_ramp as check_soft_ramp

HINTS: dict[str, tuple[str, ...]] = {
    **_HORNER_HINTS,
    **_EWMA_HINTS,
    **_SOFT_RAMP_HINTS,
    **_KEPLER_HINTS,
}
"""Each checker's name -> its hints, from a first nudge to the shape of the answer."""
