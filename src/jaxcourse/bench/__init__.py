"""The benchmark harness: honest timings of JAX code, and the environment they ran in."""

from ._environment import environment as environment
from ._environment import environment_line as environment_line
from ._timing import Timing as Timing
from ._timing import time_call as time_call
from ._timing import timings_table as timings_table
