"""The benchmark harness: honest timings of JAX code, the environment they ran in, and the PLN benchmark."""

from ._environment import environment as environment
from ._environment import environment_line as environment_line
from ._timing import Timing as Timing
from ._timing import time_call as time_call
from ._timing import timings_table as timings_table
from ._pln import MONITOR_EVERY as MONITOR_EVERY
from ._pln import first_time_at_least as first_time_at_least
from ._pln import float64_profiled_elbo as float64_profiled_elbo
from ._pln import load_size as load_size
from ._pln import measure_floor as measure_floor
from ._pln import plot_elbo_vs_time as plot_elbo_vs_time
from ._pln import run_pln_benchmark as run_pln_benchmark
from ._pln import runs_table as runs_table
from ._pln import summary_line as summary_line
from ._pln import summary_markdown as summary_markdown
