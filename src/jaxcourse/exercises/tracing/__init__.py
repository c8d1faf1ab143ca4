"""Checkers for the exercises of the chapter 'Tracing, abstract values and static arguments'.

One private module per exercise; `_collect.export_checkers` puts their checkers in this
package, so that `from jaxcourse.exercises.tracing import check_prefix_sum` keeps working.
"""

from .._collect import export_checkers
from ._solver_options import solve as solve

export_checkers(__name__, globals())
