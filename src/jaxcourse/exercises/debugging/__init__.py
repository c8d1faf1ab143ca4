"""Checkers for the exercises of the chapter 'Debugging and the sharp bits', one private module per
exercise."""

from ._first_wrong_size import check_first_wrong_size as check_first_wrong_size
from ._nan_source import check_nan_source as check_nan_source
from ._normalise_weights import check_normalise_weights as check_normalise_weights
from ._shift_counts import check_shift_counts as check_shift_counts
