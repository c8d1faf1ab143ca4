"""Checkers for the exercises of the chapter 'Sharding a model': psum from psum_scatter and
all_gather, an FSDP loss that gathers each layer, and a ring all-gather with ppermute.

Each learner function is a per-device body; the checker runs it in a `jax.shard_map` itself,
compares the result with the collective JAX provides (or the single-device step), and reads
the collectives used from the jaxpr. One private module per exercise; this package re-exports
their public names, so that `from jaxcourse.exercises.sharding_models import check_fsdp_loss`
keeps working.
"""

from ._fsdp import check_fsdp_loss as check_fsdp_loss
from ._psum import check_psum_from_pieces as check_psum_from_pieces
from ._ring import check_ring_all_gather as check_ring_all_gather
