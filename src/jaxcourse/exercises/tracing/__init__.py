"""Checkers for the exercises of the chapter 'Tracing, abstract values and static arguments'.

One private module per exercise; this package re-exports their public names, so that
`from jaxcourse.exercises.tracing import check_prefix_sum` keeps working.
"""

from ._polynomial_class import check_polynomial_class as check_polynomial_class
from ._polynomial_features import check_polynomial_features as check_polynomial_features
from ._prefix_sum import check_prefix_sum as check_prefix_sum
from ._solver_options import check_solver_options as check_solver_options
from ._solver_options import solve as solve
