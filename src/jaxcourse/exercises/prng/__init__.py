"""Checkers for the exercises of the chapter 'Random numbers with explicit PRNG keys'.

One private module per exercise; `_collect.export_checkers` puts their checkers in this
package, so that `from jaxcourse.exercises.prng import check_next_normal` keeps working.
"""

from .._collect import export_checkers
from ._chunk_means import CHUNK_CASES as CHUNK_CASES
from ._chunk_means import TRUE_MEAN as TRUE_MEAN
from ._common import DRAWS as DRAWS
from ._common import KEY_REUSE_HINTS as KEY_REUSE_HINTS
from ._common import require_key_discipline as require_key_discipline
from ._next_normal import N_CALLS as N_CALLS
from ._next_normal import N_DRAWS as N_DRAWS
from ._random_walk import WALK_LENGTHS as WALK_LENGTHS

export_checkers(__name__, globals())
