"""Checkers for the exercises of the chapter 'Loops and branches with lax control flow', one private
module per exercise."""

from .._collect import export_checkers
from ._kepler import MAX_ITER as MAX_ITER
from ._kepler import TOL as TOL

export_checkers(__name__, globals())
