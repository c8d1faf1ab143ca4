"""Checkers for the exercises of the chapter 'Just-in-time compilation with jax.jit'.

One private module per exercise; this package re-exports their public names, so that
`from jaxcourse.exercises.jit import check_apply_boundary` keeps working, and merges their
hint ladders into one `HINTS`.
"""

from . import _agrees_with_float64, _apply_boundary, _precompile, _shrink_path, _time_blocked
from ._agrees_with_float64 import check_agrees_with_float64 as check_agrees_with_float64
from ._apply_boundary import check_apply_boundary as check_apply_boundary
from ._precompile import SERVED_SHAPES as SERVED_SHAPES
from ._precompile import check_precompile as check_precompile
from ._shrink_path import check_shrink_path as check_shrink_path
from ._time_blocked import check_time_blocked as check_time_blocked

HINTS: dict[str, tuple[str, ...]] = {
    **_apply_boundary.HINTS,
    **_time_blocked.HINTS,
    **_shrink_path.HINTS,
    **_precompile.HINTS,
    **_agrees_with_float64.HINTS,
}
"""Every checker's hint ladder: a nudge, then the shape of the answer and its common traps."""
