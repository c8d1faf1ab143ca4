"""Checker for the PLN benchmark chapter's exercise on the time to reach a target ELBO."""

from __future__ import annotations

import numpy as np

from ...checks import call_answer, exercise_checker, require


@exercise_checker(
    hints=(
        "Find the indices where elbo >= target (np.flatnonzero) and look the first one up "
        "in times.",
        "Return the time at the FIRST index (the trace goes up and down, so not the last "
        "crossing and not a search that assumes it is sorted), as a number, not the index; "
        ">= counts a trace that equals the target; return None when no entry reaches it.",
    )
)
def check_time_to_target(time_to_target):
    """`time_to_target(elbo, times, target)`: the first time the trace reaches `target`, or None."""
    require(
        callable(time_to_target), "pass the function itself: check_time_to_target(time_to_target)."
    )
    elbo = np.array([-9.0, -5.0, -6.0, -2.0, -1.0, -3.0])
    times = np.array([0.5, 1.0, 1.5, 2.0, 2.5, 3.0])
    cases = [(-5.5, 1.0), (-5.0, 1.0), (-2.5, 2.0), (-1.0, 2.5), (-9.5, 0.5)]
    for target, expected in cases:
        got = call_answer(time_to_target, elbo, times, target, what="time_to_target")
        require(
            got is None or (not isinstance(got, (tuple, list, dict, str)) and np.ndim(got) == 0),
            f"return one time (a number) or None; got {type(got).__name__}.",
        )
        require(
            got is not None, f"for target {target} you returned None, but the trace reaches it."
        )
        require(
            not (isinstance(got, (int, np.integer)) and float(got) != expected),
            f"for target {target} you returned {got}: that looks like an index; return the time "
            "at that index.",
        )
        if abs(float(got) - expected) < 1e-12:
            continue
        strictly = np.flatnonzero(elbo > target)
        below = np.flatnonzero(elbo <= target)
        reached = np.flatnonzero(elbo >= target)
        require(
            not (strictly.size and float(got) == times[strictly[0]]),
            f"for target {target} you returned {got}, the first time the ELBO is strictly above "
            f"the target; at {expected} it equals the target, which counts as reached (>=, not >).",
        )
        require(
            not (below.size and float(got) == times[below[0]]),
            f"for target {target} you returned {got}, the first time the ELBO is at or BELOW the "
            "target: the ELBO rises towards it, so reached means elbo >= target.",
        )
        require(
            not (reached.size > 1 and float(got) == times[reached[-1]]),
            f"for target {target} you returned {got}, the LAST time the ELBO is at least the "
            f"target; expected {expected}, the FIRST time it is. The trace is not monotone.",
        )
        require(
            False,
            f"for target {target} expected {expected} (the FIRST time the ELBO is at least the "
            f"target, elbo >= target), got {got}.",
        )
    require(
        call_answer(time_to_target, elbo, times, 0.0, what="time_to_target") is None,
        "a target the trace never reaches must give None, not a time.",
    )
