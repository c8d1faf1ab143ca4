"""Checkers for the exercises of the chapter 'Automatic differentiation', one private module per
exercise."""

from ._curvatures import HINTS as _curvatures_hints
from ._curvatures import check_curvatures as check_curvatures
from ._exprel import HINTS as _exprel_hints
from ._exprel import check_exprel as check_exprel
from ._jacobian_rows import HINTS as _jacobian_rows_hints
from ._jacobian_rows import check_jacobian_rows as check_jacobian_rows
from ._loss_and_grad import HINTS as _loss_and_grad_hints
from ._loss_and_grad import check_loss_and_grad as check_loss_and_grad

HINTS: dict[str, tuple[str, ...]] = {
    **_loss_and_grad_hints,
    **_curvatures_hints,
    **_exprel_hints,
    **_jacobian_rows_hints,
}
"""Every checker's hint ladder, merged from the modules that define them."""
