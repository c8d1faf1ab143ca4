"""The coverage chapter's exercise checker accepts the reference solution and rejects typical
mistakes, each with the hint that names it."""

import numpy as np
import pytest

from jaxcourse.exercises import pln_coverage as exercises


def coverage_and_error(lower, upper, truth):
    present = np.isfinite(lower) & np.isfinite(upper)
    n_intervals = present.sum(axis=0)
    share = (present & (lower <= truth) & (truth <= upper)).sum(axis=0) / n_intervals
    return share, np.sqrt(share * (1 - share) / n_intervals)


def stub(lower, upper, truth):
    raise NotImplementedError


def strict_ends(lower, upper, truth):
    present = np.isfinite(lower) & np.isfinite(upper)
    n_intervals = present.sum(axis=0)
    share = (present & (lower < truth) & (truth < upper)).sum(axis=0) / n_intervals
    return share, np.sqrt(share * (1 - share) / n_intervals)


def nan_is_a_miss(lower, upper, truth):
    share = ((lower <= truth) & (truth <= upper)).mean(axis=0)
    return share, np.sqrt(share * (1 - share) / lower.shape[0])


def one_overall_share(lower, upper, truth):
    share, error = coverage_and_error(lower, upper, truth)
    return share.mean(), error.mean()


def root_outside(lower, upper, truth):
    share, _ = coverage_and_error(lower, upper, truth)
    n_intervals = (np.isfinite(lower) & np.isfinite(upper)).sum(axis=0)
    return share, np.sqrt(share * (1 - share)) / n_intervals


def all_replicates_in_error(lower, upper, truth):
    share, _ = coverage_and_error(lower, upper, truth)
    return share, np.sqrt(share * (1 - share) / lower.shape[0])


def test_the_solution_passes():
    assert exercises.check_coverage_and_error(coverage_and_error)


def test_a_stub_is_not_yet():
    verdict = exercises.check_coverage_and_error(stub)
    assert not verdict and not verdict.tried and "no answer yet" in verdict.message


@pytest.mark.parametrize(
    ("wrong", "hint"),
    [
        (strict_ends, "lower <= truth <= upper"),
        (nan_is_a_miss, "NaN interval was counted as a miss"),
        (one_overall_share, "one value per entry"),
        (root_outside, "outside the square root"),
        (all_replicates_in_error, "replicates that have an interval"),
    ],
)
def test_coverage_and_error_mistakes_fail(wrong, hint):
    verdict = exercises.check_coverage_and_error(wrong)
    assert not verdict and hint in verdict.message, verdict.message
