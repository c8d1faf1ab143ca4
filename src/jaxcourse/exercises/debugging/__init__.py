"""Checkers for the exercises of the chapter 'Debugging and the sharp bits', one private module per
exercise."""

from ._first_wrong_size import HINTS as _first_wrong_size_hints
from ._first_wrong_size import check_first_wrong_size as check_first_wrong_size
from ._nan_source import HINTS as _nan_source_hints
from ._nan_source import check_nan_source as check_nan_source
from ._normalise_weights import HINTS as _normalise_weights_hints
from ._normalise_weights import check_normalise_weights as check_normalise_weights
from ._shift_counts import HINTS as _shift_counts_hints
from ._shift_counts import check_shift_counts as check_shift_counts

HINTS: dict[str, tuple[str, ...]] = {
    **_nan_source_hints,
    **_normalise_weights_hints,
    **_shift_counts_hints,
    **_first_wrong_size_hints,
}
"""Every checker's hint ladder, merged from the modules that define them."""
