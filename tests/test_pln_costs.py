"""`jaxcourse.pln.costs.iteration_passes`: one level-5 iteration, pass by pass, at oaks x 100,
and what the momentum's restart test costs in it (the profiling chapter's table)."""

import pytest

from jaxcourse.hlo import pass_totals
from jaxcourse.optim import newton_momentum
from jaxcourse.pln import level5, load_oaks
from jaxcourse.pln.constants import OAKS100_COPIES
from jaxcourse.pln.costs import iteration_cost, iteration_passes

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def oaks100():
    return load_oaks(OAKS100_COPIES)


def written_and_read(passes):
    totals = pass_totals(passes)
    return totals.writes, totals.reads


def test_the_passes_add_up_to_the_iterations_bytes(oaks100):
    """The passes' bytes are the iteration's bytes, as XLA's cost analysis counts them, within
    the few scalars it counts otherwise; and every (n, p) array written is also read."""
    passes = iteration_passes(oaks100, optimizer=level5.NEWTON_MOMENTUM)
    total = iteration_cost(5, oaks100, optimizer=level5.NEWTON_MOMENTUM).bytes_accessed
    assert pass_totals(passes).bytes == pytest.approx(total, rel=1e-2)
    written, read = written_and_read(passes)
    assert 0 < written < read


def test_the_restart_test_costs_three_arrays_and_the_entry_restart_none(oaks100):
    """The restart on the slope sum(g * v) makes XLA write the two gradients and 1/S to memory:
    three more (n, p) arrays than plain heavy ball. The per-entry restart is elementwise and
    writes no more than no restart at all."""
    slope = written_and_read(iteration_passes(oaks100, optimizer=level5.NEWTON_MOMENTUM))
    plain = written_and_read(
        iteration_passes(oaks100, optimizer=newton_momentum(1.0, momentum=0.9, restart=False))
    )
    entry = written_and_read(
        iteration_passes(oaks100, optimizer=newton_momentum(1.0, momentum=0.9, restart="entry"))
    )
    assert slope[0] == plain[0] + 3
    assert entry == plain


def test_the_iteration_writes_no_square_of_s(oaks100):
    """One Newton-momentum iteration writes ten (n, p) arrays: A, 1/S, the residuals, their
    product with Omega, the two gradients (for the restart's sum), the two velocities and the
    two new iterates. S^2, which XLA wrote for the column sums of the scatter matrix while the
    rate and the curvature shared it, is not among them; without the restart, seven."""
    slope = written_and_read(iteration_passes(oaks100, optimizer=level5.NEWTON_MOMENTUM))
    plain = written_and_read(
        iteration_passes(oaks100, optimizer=newton_momentum(1.0, momentum=0.9, restart=False))
    )
    assert (slope[0], plain[0]) == (10, 7)
