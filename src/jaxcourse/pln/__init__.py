"""The Poisson-lognormal (PLN) case study: data, model maths, and the fitting levels.

Every level module (`level0` ... `level6`) exposes `fit(data, n_iter, *, optimizer) -> FitResult`.
Levels 0-4 run one shared algorithm (Adam, then closed forms) and are collected in `LEVELS`;
levels 5 (profiled ELBO, Rprop, a tolerance) and 6 (data-parallel, and `vmap` over restarts)
go beyond them, with their own defaults.
"""

from . import level0 as level0
from . import level1 as level1
from . import level2 as level2
from . import level3 as level3
from . import level4 as level4
from . import level5 as level5
from . import level6 as level6
from ._algorithm import DEFAULT_OPTIMIZER as DEFAULT_OPTIMIZER
from ._algorithm import LEARNING_RATE as LEARNING_RATE
from ._algorithm import FitResult as FitResult
from ._algorithm import init_variational as init_variational
from ._algorithm import negative_elbo as negative_elbo
from ._algorithm import update_step as update_step
from ._data import PLNData as PLNData
from ._data import as_float64 as as_float64
from ._data import Simulation as Simulation
from ._data import load_oaks as load_oaks
from ._data import make_data as make_data
from ._data import simulate as simulate
from ._reference import ReferenceFit as ReferenceFit
from ._sharded import sharded_elbo as sharded_elbo
from ._reference import fit_pyplnmodels as fit_pyplnmodels
from ._model import ModelParams as ModelParams
from ._model import Variational as Variational
from ._model import closed_form_coef as closed_form_coef
from ._model import closed_form_covariance as closed_form_covariance
from ._model import closed_form_params as closed_form_params
from ._model import ElboStatistics as ElboStatistics
from ._model import elbo as elbo
from ._model import elbo_from_statistics as elbo_from_statistics
from ._model import elbo_statistics as elbo_statistics
from ._model import log_det_from_cholesky as log_det_from_cholesky
from ._model import log_det_spd as log_det_spd
from ._model import log_factorial as log_factorial
from ._model import log_factorial_stirling as log_factorial_stirling
from ._model import profiled_elbo as profiled_elbo
from ._model import stirling_correction as stirling_correction

LEVELS = {0: level0, 1: level1, 2: level2, 3: level3, 4: level4}
"""Level number -> module for the five levels that share one algorithm (same ELBO trace)."""
