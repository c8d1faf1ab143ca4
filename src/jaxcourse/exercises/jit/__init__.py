"""Checkers for the exercises of the chapter 'Just-in-time compilation with jax.jit'.

One private module per exercise; this package re-exports their public names, so that
`from jaxcourse.exercises.jit import check_apply_boundary` keeps working.
"""

from ._agrees_with_float64 import check_agrees_with_float64 as check_agrees_with_float64
from ._apply_boundary import check_apply_boundary as check_apply_boundary
from ._precompile import SERVED_SHAPES as SERVED_SHAPES
from ._precompile import check_precompile as check_precompile
from ._shrink_path import check_shrink_path as check_shrink_path
from ._time_blocked import check_time_blocked as check_time_blocked
