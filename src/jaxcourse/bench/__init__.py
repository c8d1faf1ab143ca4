"""The benchmark harness: honest timings of JAX code, the environment they ran in, and the PLN benchmark.

Re-exports `jaxcourse.timing` (time_call) and `jaxcourse.environment` (device and versions),
which every chapter uses, and holds the PLN benchmark split by concern: `_sizes` (data),
`_methods` (the registry `METHODS`), `_floor`, `_run` (one method), `_fresh` and `_worker`
(fits in a fresh process: cold first calls, pyPLNmodels in its own process), `_metrics` (P1-P3,
as numbers), `_report` (line, CSV, tables, plot, paragraph), `_params` (B and Sigma compared),
`_sweep` (sizes on simulated data) and `_benchmark` (`run_pln_benchmark`, which ties them
together).
"""

from ..environment import environment as environment
from ..environment import environment_line as environment_line
from ..environment import versions as versions
from ..pln._reference import criterion_trace as criterion_trace
from ..pln._reference import earliest_stop as earliest_stop
from ..pln._reference import pyplnmodels_defaults as pyplnmodels_defaults
from ..pln._reference import pyplnmodels_start as pyplnmodels_start
from ..timing import Timing as Timing
from ..timing import time_call as time_call
from ..timing import timings_table as timings_table
from ._benchmark import cached_first_calls as cached_first_calls
from ._benchmark import run_pln_benchmark as run_pln_benchmark
from ._floor import combine_floors as combine_floors
from ._floor import floor_work as floor_work
from ._floor import measure_floor as measure_floor
from ._fresh import FreshFit as FreshFit
from ._fresh import FreshRun as FreshRun
from ._fresh import run_fresh as run_fresh
from ._methods import METHODS as METHODS
from ._methods import PLAIN_CALL as PLAIN_CALL
from ._methods import Method as Method
from ._methods import method_card as method_card
from ._methods import method_names as method_names
from ._methods import select_methods as select_methods
from ._metrics import P3_GAP_NATS as P3_GAP_NATS
from ._metrics import Metrics as Metrics
from ._metrics import compute_metrics as compute_metrics
from ._metrics import first_time_at_least as first_time_at_least
from ._metrics import target_slack as target_slack
from ._metrics import with_time_to_target as with_time_to_target
from ._params import MANY_ZEROS as MANY_ZEROS
from ._params import compare_params as compare_params
from ._params import correlation as correlation
from ._params import params_float64 as params_float64
from ._params import zero_fractions as zero_fractions
from ._report import GOALS as GOALS
from ._report import FigureWithAlt as FigureWithAlt
from ._report import curves_alt_text as curves_alt_text
from ._report import methods_table as methods_table
from ._report import plot_elbo_vs_time as plot_elbo_vs_time
from ._report import runs_table as runs_table
from ._report import spread as spread
from ._report import summary_line as summary_line
from ._report import summary_markdown as summary_markdown
from ._report import write_csv as write_csv
from ._run import MethodRun as MethodRun
from ._run import float64_profiled_elbo as float64_profiled_elbo
from ._run import run_method as run_method
from ._run import run_reference as run_reference
from ._sizes import SIZES as SIZES
from ._sizes import best_known_elbo as best_known_elbo
from ._sizes import load_size as load_size
from ._sweep import SweepPoint as SweepPoint
from ._sweep import run_sweep as run_sweep
from ._sweep import sweep_data as sweep_data
from ._sweep import sweep_table as sweep_table
