"""Checkers for the exercises of the chapter 'Random numbers with explicit PRNG keys'.

One private module per exercise; this package re-exports their public names, so that
`from jaxcourse.exercises.prng import check_next_normal` keeps working.
"""

from ._chunk_means import CHUNK_CASES as CHUNK_CASES
from ._chunk_means import TRUE_MEAN as TRUE_MEAN
from ._chunk_means import check_chunk_means as check_chunk_means
from ._common import DRAWS as DRAWS
from ._common import KEY_REUSE_HINTS as KEY_REUSE_HINTS
from ._common import require_key_discipline as require_key_discipline
from ._next_normal import N_CALLS as N_CALLS
from ._next_normal import N_DRAWS as N_DRAWS
from ._next_normal import check_next_normal as check_next_normal
from ._random_walk import WALK_LENGTHS as WALK_LENGTHS
from ._random_walk import check_random_walk as check_random_walk
