"""Checkers for the exercises of the chapter 'Sharding a model': psum from psum_scatter and
all_gather, an FSDP loss that gathers each layer, and a ring all-gather with ppermute.

Each learner function is a per-device body; the checker runs it in a `jax.shard_map` itself,
compares the result with the collective JAX provides (or the single-device step), and reads
the collectives used from the jaxpr. One private module per exercise;
`_collect.export_checkers` puts their checkers in this package, so that
`from jaxcourse.exercises.sharding_models import check_fsdp_loss` keeps working.
"""

from .._collect import export_checkers

export_checkers(__name__, globals())
