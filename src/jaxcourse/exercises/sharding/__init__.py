"""Checkers for the exercises of the sharding chapter (shard_map, the data-parallel PLN ELBO).

Test inputs are drawn with NumPy and the learner's function runs first, so a stub gets its
verdict at once; the references are computed on one device. One private module per exercise;
`_collect.export_checkers` puts their checkers in this package, so that
`from jaxcourse.exercises.sharding import check_sharded_grad` keeps working.
"""

from .._collect import export_checkers

export_checkers(__name__, globals())
