"""Checkers for the exercises of the chapter 'Automatic vectorisation with jax.vmap'.

One private module per exercise; `_collect.export_checkers` puts their checkers in this
package, so that `from jaxcourse.exercises.vmap import check_predict_all` keeps working.
"""

from .._collect import export_checkers
from ._clipped_mean_grad import logistic_loss as logistic_loss
from ._clipped_mean_grad import poisson_loss as poisson_loss
from ._common import _vmap_depth as _vmap_depth

export_checkers(__name__, globals())
