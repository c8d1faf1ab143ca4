"""Checkers for the exercises of the chapter 'Just-in-time compilation with jax.jit'.

One private module per exercise; `_collect.export_checkers` puts their checkers in this
package, so that `from jaxcourse.exercises.jit import check_apply_boundary` keeps working.
"""

from .._collect import export_checkers
from ._precompile import SERVED_SHAPES as SERVED_SHAPES

export_checkers(__name__, globals())
