"""The Poisson-lognormal (PLN) case study: data, model maths, and the fitting levels.

The level contract, stated once: every level module in `LEVELS` (`level0` ... `level6`) has

    fit(data, n_iter, *, optimizer=<its default>, **level_options) -> FitResult

which takes at most `n_iter` optimizer steps on (M, S), records the ELBO before each step in
`elbo_trace` (`(n_iter,)`), and returns the steps taken as `n_steps`. Levels 0-4
(`SHARED_ALGORITHM_LEVELS`) run one algorithm (a gradient step, then the closed-form B and
Sigma; default optimizer `ADAM`) and give the same trace; they always take `n_iter` steps.
Levels 5 and 6 differ where their docstrings say: the profiled ELBO (`profiled`), a loop that
stops on a tolerance (`convergence`), default optimizer `level5.RPROP`, and options `tol`,
`monitor_every`, `blas_threads` (and `mesh` for level 6). Level 3 adds `container`.

Modules: `constants` (facts of the case study), `_data` (loading, simulation, checks),
`_model` (the ELBO and closed forms), `_algorithm` (the shared algorithm and `FitResult`),
`profiled` and `convergence` (the core of levels 5 and 6), `_sharded` (a data-parallel
ELBO), `_reference` (pyPLNmodels), `separation` (quasi-separation), `bootstrap` (a parametric
bootstrap of B's standard errors), `coverage` (how often the sandwich's and the bootstrap's
intervals hold the truth, on data simulated from a known model), `formula` (covariates from a
model formula, with the optional formulaic).
"""

from . import bootstrap as bootstrap
from . import constants as constants
from . import convergence as convergence
from . import coverage as coverage
from . import custom_gradient as custom_gradient
from . import formula as formula
from . import level0 as level0
from . import level1 as level1
from . import level2 as level2
from . import level3 as level3
from . import level4 as level4
from . import level5 as level5
from . import level6 as level6
from . import profiled as profiled
from . import separation as separation
from ._algorithm import ADAM as ADAM
from ._algorithm import LEARNING_RATE as LEARNING_RATE
from ._algorithm import FitDivergedWarning as FitDivergedWarning
from ._algorithm import FitResult as FitResult
from ._algorithm import init_variational as init_variational
from ._algorithm import negative_elbo as negative_elbo
from ._algorithm import update_step as update_step
from ._data import FLOAT32_EXACT_COUNT as FLOAT32_EXACT_COUNT
from ._data import LOG_OFFSET_LIMIT as LOG_OFFSET_LIMIT
from ._data import OffsetScaleWarning as OffsetScaleWarning
from ._data import PLNData as PLNData
from ._data import Simulation as Simulation
from ._data import as_float64 as as_float64
from ._data import design_matrix as design_matrix
from ._data import load_oaks as load_oaks
from ._data import load_oaks_table as load_oaks_table
from ._data import make_data as make_data
from ._data import simulate as simulate
from ._model import ElboStatistics as ElboStatistics
from ._model import ModelParams as ModelParams
from ._model import Variational as Variational
from ._model import closed_form_coef as closed_form_coef
from ._model import closed_form_covariance as closed_form_covariance
from ._model import closed_form_params as closed_form_params
from ._model import elbo as elbo
from ._model import elbo_from_statistics as elbo_from_statistics
from ._model import elbo_statistics as elbo_statistics
from ._model import log_det_from_cholesky as log_det_from_cholesky
from ._model import log_det_spd as log_det_spd
from ._model import log_factorial as log_factorial
from ._model import log_factorial_stirling as log_factorial_stirling
from ._model import profiled_elbo as profiled_elbo
from ._model import stirling_correction as stirling_correction
from ._reference import ReferenceFit as ReferenceFit
from ._reference import ReferenceTrace as ReferenceTrace
from ._reference import fit_pyplnmodels as fit_pyplnmodels
from ._reference import load_scrna_table as load_scrna_table
from ._reference import trace_pyplnmodels as trace_pyplnmodels
from ._sharded import sharded_elbo as sharded_elbo
from .formula import design_from_formula as design_from_formula

LEVELS = {0: level0, 1: level1, 2: level2, 3: level3, 4: level4, 5: level5, 6: level6}
"""Level number -> module, for all seven levels; each module's `fit` follows the contract above."""

SHARED_ALGORITHM_LEVELS = (0, 1, 2, 3, 4)
"""The levels that run one algorithm and therefore give the same ELBO trace."""
