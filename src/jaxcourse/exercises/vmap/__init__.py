"""Checkers for the exercises of the chapter 'Automatic vectorisation with jax.vmap'.

One private module per exercise; this package re-exports their public names, so that
`from jaxcourse.exercises.vmap import check_predict_all` keeps working.
"""

from ._clipped_mean_grad import check_clipped_mean_grad as check_clipped_mean_grad
from ._clipped_mean_grad import logistic_loss as logistic_loss
from ._clipped_mean_grad import poisson_loss as poisson_loss
from ._common import _vmap_depth as _vmap_depth
from ._pairwise_sq_dists import check_pairwise_sq_dists as check_pairwise_sq_dists
from ._positive_mean import check_positive_mean as check_positive_mean
from ._predict_all import check_predict_all as check_predict_all
