"""Checkers for the exercises of the chapter 'Shipping a compiled program, and choosing its
precision', one private module per exercise."""

from .._collect import export_checkers
from ._cheapest_dtype import CANDIDATES as CANDIDATES
from ._cheapest_dtype import matmul_in as matmul_in

export_checkers(__name__, globals())
