"""Checkers for the exercises of the sharding chapter (shard_map, the data-parallel PLN ELBO).

Test inputs are drawn with NumPy and the learner's function runs first, so a stub gets its
verdict at once; the references are computed on one device. One private module per exercise;
this package re-exports their public names, so that
`from jaxcourse.exercises.sharding import check_sharded_grad` keeps working.
"""

from ._grad import check_sharded_grad as check_sharded_grad
from ._profiled_elbo import check_sharded_profiled_elbo as check_sharded_profiled_elbo
from ._standardise import check_global_standardise as check_global_standardise
