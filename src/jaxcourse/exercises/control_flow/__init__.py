"""Checkers for the exercises of the chapter 'Loops and branches with lax control flow', one private
module per exercise."""

from ._ewma import check_ewma as check_ewma
from ._horner import check_horner as check_horner
from ._kepler import MAX_ITER as MAX_ITER
from ._kepler import TOL as TOL
from ._kepler import check_kepler as check_kepler
from ._soft_ramp import check_soft_ramp as check_soft_ramp
