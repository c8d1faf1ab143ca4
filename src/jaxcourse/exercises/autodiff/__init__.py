"""Checkers for the exercises of the chapter 'Automatic differentiation', one private module per
exercise."""

from ._curvatures import check_curvatures as check_curvatures
from ._exprel import check_exprel as check_exprel
from ._jacobian_rows import check_jacobian_rows as check_jacobian_rows
from ._loss_and_grad import check_loss_and_grad as check_loss_and_grad
