"""`jaxcourse.pln.costs.iteration_passes`: one level-5 iteration, pass by pass, at oaks x 100,
and what the momentum's restart test costs in it (the profiling chapter's table)."""

import pytest

from jaxcourse.hlo import pass_totals
from jaxcourse.optim import newton_momentum
from jaxcourse.pln import convergence, level5, load_oaks
from jaxcourse.pln.constants import OAKS100_COPIES
from jaxcourse.pln.costs import iteration_cost, iteration_passes

pytestmark = pytest.mark.slow


SPARSE = convergence.DEFAULT_MONITOR_EVERY
HEAVY_BALL = newton_momentum(1.0, momentum=0.9, restart=False)
ENTRY_RESTART = newton_momentum(1.0, momentum=0.9, restart="entry")


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


SLOPE_OVER_M_AND_S = newton_momentum(1.0, momentum=0.9)


def test_the_restart_test_over_m_costs_one_array_and_over_m_and_s_three(oaks100):
    """The restart on the slope sum(g * v) makes XLA write what it sums (a YNNPACK reduction reads
    its inputs from memory): over M (`level5.NEWTON_MOMENTUM`), the gradient in M, one (n, p)
    array more than plain heavy ball; over M and S, both gradients and 1/S, three more. The
    per-entry restart is elementwise and writes no more than no restart at all."""
    over_m, over_both, plain, entry = (
        written_and_read(iteration_passes(oaks100, optimizer=optimizer, monitor_every=SPARSE))
        for optimizer in (level5.NEWTON_MOMENTUM, SLOPE_OVER_M_AND_S, HEAVY_BALL, ENTRY_RESTART)
    )
    assert over_m[0] == plain[0] + 1
    assert over_both[0] == plain[0] + 3
    assert entry == plain


def test_the_iteration_writes_no_square_of_s(oaks100):
    """An iteration of a sparse fit writes eight (n, p) arrays with Newton momentum: A, the
    residuals, their product with Omega, the gradient in M (for the restart's sum), the two
    velocities and the two new iterates. S^2, which XLA wrote for the column sums of the
    scatter matrix while the rate and the curvature shared it, is not among them; without the
    restart, seven."""
    slope, plain = (
        written_and_read(iteration_passes(oaks100, optimizer=optimizer, monitor_every=SPARSE))
        for optimizer in (level5.NEWTON_MOMENTUM, HEAVY_BALL)
    )
    assert (slope[0], plain[0]) == (8, 7)


def test_a_monitored_iteration_writes_the_gradient_and_curvature_for_the_decrement(oaks100):
    """Computing the decrement's sum(g^2 / c) at an iteration makes XLA:CPU write what it sums
    (a YNNPACK reduction reads its inputs from memory): the gradient in S, both curvatures, 1/S
    and the gradient in M negated, five more arrays than an iteration that skips it. A sparse
    fit pays them once in m iterations because the sum sits in the lax.cond with the Poisson
    sum, whose operands are arrays the step writes anyway."""
    dense, sparse = (
        written_and_read(
            iteration_passes(oaks100, optimizer=level5.NEWTON_MOMENTUM, monitor_every=every)
        )
        for every in (1, SPARSE)
    )
    assert dense[0] == sparse[0] + 5
