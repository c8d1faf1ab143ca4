"""The errors the PLN chapters show, pinned: a JAX or package change that alters them fails here."""

import numpy as np
import pytest

from jaxcourse import pln


def test_negative_counts_error_shown_in_the_model_chapter():
    with pytest.raises(ValueError, match="counts must be non-negative, but 1 are negative"):
        pln.make_data(np.array([[1.0, 2.0], [3.0, -1.0]]))


def test_row_mismatch_error_shown_in_the_model_chapter():
    with pytest.raises(ValueError, match="offsets has 4 rows but counts has 3"):
        pln.make_data(np.ones((3, 2)), offsets=np.zeros((4, 2)))


def test_plain_container_error_shown_in_the_levels_chapter():
    with pytest.raises(TypeError, match=r"Argument '<jaxcourse\.pln\.level3\.PlainContainer object at .*' of type '<class 'jaxcourse\.pln\.level3\.PlainContainer'>' is not a valid JAX type"):
        pln.level3.fit(pln.load_oaks(), 10, container=pln.level3.PlainContainer)


def test_monitor_every_error_shown_in_the_benchmark_chapter():
    with pytest.raises(ValueError, match=r"monitor_every must be a positive divisor of TOL_WINDOW = 50, so that the tolerance test compares two computed ELBOs; got 7"):
        pln.level5.fit(pln.load_oaks(), 100, monitor_every=7)
