"""Level 5: the profiled ELBO with analytic gradients in a while_loop that stops on `tol`."""

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest
import torch

from jaxcourse.hlo import intermediate_arrays, passes
from jaxcourse.pln import (
    ADAM,
    Variational,
    as_float64,
    init_variational,
    level2,
    level5,
    load_oaks,
    profiled,
    profiled_elbo,
    simulate,
    stirling_correction,
)
from jaxcourse.pln.constants import BEST_KNOWN_ELBO_OAKS_STIRLING
from jaxcourse.tracecount import count_compilations

# More than a few seconds: left out of the fast tier (scripts/test.sh --fast).
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def oaks():
    return load_oaks()


def wobbly_start(data):
    """A start away from the optimum, with structure in every entry."""
    start = init_variational(data)
    shape = start.latent_mean.shape
    wobble = jnp.sin(jnp.arange(np.prod(shape), dtype=start.latent_mean.dtype).reshape(shape))
    return Variational(start.latent_mean + 0.3 * wobble, start.latent_sqrt_var + 0.1 * wobble**2)


def test_profiled_elbo_equals_pyplnmodels_in_float64(oaks):
    """Our exact-convention ELBO plus the Stirling correction equals pyPLNmodels' to 1e-9."""
    from pyPLNmodels.calculations.elbos import profiled_elbo_pln

    with jax.enable_x64(True):
        data = as_float64(oaks)
        start = wobbly_start(data)
        ours, _ = profiled.profiled_elbo_and_grad(data, start)
        ours_stirling = float(ours) + stirling_correction(oaks.counts)
    tensor = lambda a: torch.tensor(np.asarray(a), dtype=torch.float64)  # noqa: E731
    theirs = profiled_elbo_pln(
        endog=tensor(data.counts),
        exog=tensor(data.covariates),
        offsets=tensor(data.offsets),
        latent_mean=tensor(start.latent_mean),
        latent_sqrt_variance=tensor(start.latent_sqrt_var),
    ).item()
    assert abs(ours_stirling - theirs) <= 1e-9 * abs(theirs)


def entry_by_entry_constant(counts):
    from scipy.special import gammaln

    counts = np.asarray(counts, dtype=np.float64)
    log_counts = np.log(np.where(counts > 0, counts, 1.0))
    return np.sum(counts * log_counts - counts - gammaln(counts + 1.0))


def test_log_factorial_constant_is_summed_in_float64(oaks):
    """`prepare`'s data constant sum(Y log Y - Y - log Y!) is exact to float32 rounding of the
    result: computed term by term in float32 (JAX's gammaln), it was off by 0.035 nats on
    oaks and by 3.3 nats on oaks x 100."""
    exact = entry_by_entry_constant(oaks.counts)
    ours = float(profiled.prepare(oaks).log_factorial_constant)
    assert abs(ours - exact) <= 2 * np.spacing(np.float32(abs(exact)))


def test_the_rewrite_recovers_most_of_what_the_naive_hoist_loses(oaks):
    """pln-benchmark.qmd's float32 section, at a fitted oaks point against float64: summing
    log Y! apart loses a few hundredths of a nat; level 5's rewrite wins most of it back, to
    within one float32 rounding step of the ELBO of gammaln in every iteration (its shifted
    offsets are rounded once from float64), under 10^-6 of the ELBO."""
    from jax.scipy.special import gammaln

    mean, sqrt_var = level5.fit(oaks, 1000).variational
    problem = profiled.prepare(oaks)

    def poisson_parts(counts, offsets, mean, sqrt_var):  # as the chapter writes them
        rate = jnp.exp(offsets + mean + 0.5 * sqrt_var**2)
        log_s = jnp.log(jnp.abs(sqrt_var))
        every_iteration = jnp.sum(counts * (offsets + mean) - rate + log_s - gammaln(counts + 1))
        hoisted = jnp.sum(counts * (offsets + mean) - rate + log_s) - jnp.sum(gammaln(counts + 1))
        return every_iteration, hoisted

    with jax.enable_x64(True):
        exact = float(poisson_parts(*as_float64((oaks.counts, oaks.offsets, mean, sqrt_var)))[0])
    with jax.default_matmul_precision("highest"):
        in_loop, hoisted = poisson_parts(oaks.counts, oaks.offsets, mean, sqrt_var)
        rewritten = profiled.poisson_sum(problem, (mean, sqrt_var)) + problem.log_factorial_constant
    in_loop, hoisted, rewritten = (abs(float(v) - exact) for v in (in_loop, hoisted, rewritten))
    assert rewritten < hoisted / 5 and rewritten < 1e-6 * abs(exact)
    assert rewritten <= in_loop + abs(np.spacing(np.float32(exact))), (rewritten, in_loop)


@pytest.mark.parametrize("largest", [0, 5, 3000, 10**7])
def test_log_factorial_constant_by_histogram_or_entry_by_entry(largest):
    """Small counts go through a histogram, huge ones entry by entry: the same float64 sum."""
    counts = (
        np.random.default_rng(largest).integers(0, largest + 1, size=(40, 7)).astype(np.float32)
    )
    counts[0, 0] = largest
    np.testing.assert_allclose(
        profiled.log_factorial_constant(counts), entry_by_entry_constant(counts), rtol=1e-12
    )


def test_analytic_gradient_equals_autodiff(oaks):
    """The hand-derived dJ/dM and dJ/dS equal jax.grad of `profiled_elbo` (float64)."""
    with jax.enable_x64(True):
        data = as_float64(oaks)
        start = wobbly_start(data)
        value, grad = profiled.profiled_elbo_and_grad(data, start)
        auto_value, auto_grad = jax.value_and_grad(lambda v: profiled_elbo(data, v))(start)
        np.testing.assert_allclose(float(value), float(auto_value), rtol=1e-12)
        for ours, theirs in zip(grad, auto_grad):
            np.testing.assert_allclose(np.asarray(ours), np.asarray(theirs), rtol=1e-9, atol=1e-9)


def test_curvature_is_minus_the_hessian_diagonal_with_sigma_fixed(key):
    """`curvature` is minus the diagonal of the Hessian of the ELBO at fixed (B, Sigma)."""
    from jaxcourse.pln import elbo

    with jax.enable_x64(True):
        data = as_float64(simulate(5, 3, key=key).data)
        start = wobbly_start(data)
        evaluation = profiled.evaluate(profiled.prepare(data), start)
        flat, unravel = jax.flatten_util.ravel_pytree(start)
        hessian = jax.hessian(lambda x: elbo(data, unravel(x), evaluation.params))(flat)
        expected = unravel(-jnp.diagonal(hessian))
        for ours, theirs in zip(evaluation.curvature, expected):
            np.testing.assert_allclose(np.asarray(ours), np.asarray(theirs), rtol=1e-9)


def test_jit_equals_eager(key):
    """The compiled fit and the same loop run op by op (`jax.disable_jit`) agree."""
    data = simulate(30, 5, key=key).data
    compiled = level5.fit(data, 15, tol=0.0)
    with jax.disable_jit():
        eager = level5.fit(data, 15, tol=0.0)
    np.testing.assert_allclose(
        np.asarray(compiled.elbo_trace), np.asarray(eager.elbo_trace), rtol=1e-5
    )
    np.testing.assert_allclose(
        np.asarray(compiled.variational.latent_mean),
        np.asarray(eager.variational.latent_mean),
        rtol=1e-4,
        atol=1e-4,
    )


def test_same_optimizer_gives_the_levels_trace(oaks):
    """With levels 0-4's Adam and tol=0, level 5 follows level 2's trace: the profiled gradient
    equals the full-ELBO gradient at the closed-form (B, Sigma) the levels recompute."""
    ours = np.asarray(level5.fit(oaks, 50, optimizer=ADAM, tol=0.0, monitor_every=1).elbo_trace)
    theirs = np.asarray(level2.fit(oaks, 50).elbo_trace)
    np.testing.assert_allclose(ours, theirs, rtol=1e-4)


def test_tol_stops_the_loop_and_pads_the_trace(oaks):
    """A loose tol stops early, where the Newton decrement is below tol |ELBO|; the trace past
    the stop repeats the last ELBO, which is the ELBO of the returned parameters; tol=0 runs
    every iteration."""
    loose = level5.fit(oaks, 300, tol=1e-5, monitor_every=1)
    n_steps = int(loose.n_steps)
    assert 0 < n_steps < 300
    trace = np.asarray(loose.elbo_trace)
    assert np.all(trace[n_steps:] == trace[n_steps])
    at_stop = profiled.evaluate(profiled.prepare(oaks), loose.variational)
    decrement = float(profiled.newton_decrement(at_stop))
    assert 0 < decrement < 1e-5 * abs(trace[n_steps])
    with jax.enable_x64(
        True
    ):  # float64: the levels' float32 formula is itself off by ~0.05 nats here
        returned = profiled_elbo(
            as_float64(oaks), Variational(*as_float64(tuple(loose.variational)))
        )
    np.testing.assert_allclose(float(returned), trace[-1], rtol=1e-6)

    tight = level5.fit(oaks, 300, tol=1e-7, monitor_every=1)
    assert int(tight.n_steps) > n_steps
    assert int(level5.fit(oaks, 120, tol=0.0).n_steps) == 120


def test_a_new_tol_does_not_recompile(oaks):
    """tol is traced, so changing it reuses the compiled loop (n_iter and optimizer are static)."""
    level5.fit(oaks, 40, tol=1e-3)
    with count_compilations() as counted:
        level5.fit(oaks, 40, tol=1e-4)
        level5.fit(oaks, 40, tol=0.0)
    assert counted.traces == counted.compiles == 0


def test_a_first_call_compiles_one_program():
    """A fit on a new shape compiles only its loop: its start and `profiled.prepare` are NumPy.
    Op by op, they compiled about ten programs of their own, about a tenth of a plain first
    call, and jitted, two (issue 39)."""
    data = simulate(23, 7, key=jax.random.key(5)).data  # a shape no other test fits
    with count_compilations() as counted:
        level5.fit(data, 17, optimizer=level5.NEWTON_MOMENTUM)
    assert counted.compiles == 1, counted


def test_the_numpy_start_is_init_variational(oaks):
    """Levels 5 and 6 start from `_algorithm.numpy_start`, NumPy's copy of `init_variational`
    (so that a first call compiles nothing for it): the same start up to the rounding of
    log1p(Y) and O, a few float32 steps of theirs, so that a change to one without the other
    fails here."""
    from jaxcourse.pln._algorithm import numpy_start

    copied, reference = numpy_start(oaks), init_variational(oaks)
    for ours, theirs in zip(copied, reference):
        assert ours.shape == theirs.shape and ours.dtype == theirs.dtype
        np.testing.assert_allclose(np.asarray(ours), np.asarray(theirs), rtol=0, atol=1e-6)


def test_converges_on_oaks_to_the_best_known_elbo(oaks):
    """The default fit ends within 0.5 nats of the best known optimum (Stirling convention),
    checked in float64 at the returned parameters."""
    result = level5.fit(oaks, 1000)
    assert int(result.n_steps) < 1000, "the default tol should stop the fit on oaks"
    with jax.enable_x64(True):
        final = float(profiled_elbo(as_float64(oaks), as_float64(result.variational)))
    final_stirling = final + stirling_correction(oaks.counts)
    assert abs(final_stirling - BEST_KNOWN_ELBO_OAKS_STIRLING) <= 0.5


@pytest.fixture(scope="module")
def oaks_fits(oaks):
    """600 iterations (no early stop) on oaks with each level-5 optimizer, fitted once."""
    optimizers = {
        "rprop": level5.RPROP,
        "newton-rprop": level5.NEWTON_RPROP,
        "newton-momentum": level5.NEWTON_MOMENTUM,
    }
    return {name: level5.fit(oaks, 600, optimizer=opt, tol=0.0) for name, opt in optimizers.items()}


def iterations_to_reach(result, goal) -> int:
    """The first iteration whose ELBO is at least `goal` (the fit must reach it)."""
    reached = np.flatnonzero(np.asarray(result.elbo_trace) >= goal)
    assert reached.size, "the fit never reached the goal"
    return int(reached[0])


def oaks_goal(oaks):
    """0.5 nats below the best known ELBO of oaks, in the exact convention."""
    return BEST_KNOWN_ELBO_OAKS_STIRLING - 0.5 - stirling_correction(oaks.counts)


def test_newton_rprop_converges_faster_on_oaks(oaks, oaks_fits):
    """The Newton-Rprop option reaches 0.5 nats of the optimum in fewer iterations than Rprop."""
    goal = oaks_goal(oaks)
    assert iterations_to_reach(oaks_fits["newton-rprop"], goal) < iterations_to_reach(
        oaks_fits["rprop"], goal
    )


def test_newton_momentum_converges_fastest_on_oaks(oaks, oaks_fits):
    """Newton momentum reaches 0.5 nats of the optimum in fewer than half Newton-Rprop's iterations,
    and its fit ends at least as high as pyPLNmodels' best known ELBO minus 0.5 nats."""
    goal = oaks_goal(oaks)
    momentum = oaks_fits["newton-momentum"]
    assert np.asarray(momentum.elbo_trace)[-1] >= goal
    assert (
        0
        < iterations_to_reach(momentum, goal)
        < iterations_to_reach(oaks_fits["newton-rprop"], goal) / 2
    )
    assert bool(jnp.all(momentum.variational.latent_sqrt_var > 0))


def test_fit_from_a_given_start_returns_the_documented_shapes(key):
    """FitResult shapes: (n_iter,) trace, (n, p) M and S, (d, p) B, (p, p) Sigma, scalar n_steps."""
    data = simulate(12, 4, key=key, n_covariates=2).data
    result = level5.fit(data, 7, optimizer=optax.adam(0.01), tol=0.0, start=init_variational(data))
    assert result.elbo_trace.shape == (7,)
    assert result.variational.latent_mean.shape == (12, 4)
    assert result.params.coef.shape == (2, 4)
    assert result.params.covariance.shape == (4, 4)
    assert int(result.n_steps) == 7


@pytest.mark.parametrize(
    ("tol", "error"), [(-1.0, ValueError), ("small", TypeError), (float("nan"), ValueError)]
)
def test_bad_tol_is_rejected(oaks, tol, error):
    """A negative, NaN or non-numeric tol is an error, not a silent never-stopping loop."""
    with pytest.raises(error, match="tol"):
        level5.fit(oaks, 5, tol=tol)


def test_monitor_every_computes_the_elbo_at_multiples_only(oaks):
    """With monitor_every=5 the iterates are those of monitor_every=1; the trace has the same
    ELBOs at multiples of 5 and at its last entry, and NaN in between."""
    every = level5.fit(oaks, 23, optimizer=level5.NEWTON_MOMENTUM, tol=0.0, monitor_every=1)
    sparse = level5.fit(oaks, 23, optimizer=level5.NEWTON_MOMENTUM, tol=0.0, monitor_every=5)
    dense_trace, sparse_trace = np.asarray(every.elbo_trace), np.asarray(sparse.elbo_trace)
    computed = np.isfinite(sparse_trace)
    assert np.flatnonzero(computed).tolist() == [0, 5, 10, 15, 20, 22]  # and the last entry
    np.testing.assert_allclose(sparse_trace[computed], dense_trace[computed], rtol=1e-6)
    np.testing.assert_allclose(
        np.asarray(sparse.variational.latent_mean),
        np.asarray(every.variational.latent_mean),
        rtol=1e-6,
        atol=1e-6,
    )


def test_monitor_every_stops_at_a_computed_elbo(oaks):
    """The tolerance test runs where the ELBO is computed: at multiples of monitor_every until
    a decrement falls below `CLOSE_FACTOR` times the threshold, then at every iteration. The
    sparse trace is NaN only before that switch and off the multiples, the loop stops at a
    computed ELBO, and the padded trace repeats it."""
    result = level5.fit(oaks, 600, optimizer=level5.NEWTON_MOMENTUM, tol=1e-6, monitor_every=10)
    n_steps = int(result.n_steps)
    assert 0 < n_steps < 600
    trace = np.asarray(result.elbo_trace)
    assert np.all(trace[n_steps:] == trace[-1]) and np.isfinite(trace[-1])
    computed = np.flatnonzero(~np.isnan(trace[:n_steps]))
    first_close = computed[computed % 10 != 0].min(initial=n_steps)  # the first one off a multiple
    assert set(computed[computed < first_close]) == set(range(0, first_close, 10))
    assert np.all(np.isfinite(trace[first_close:n_steps])), "every iteration after the switch"


def test_monitor_every_jit_equals_eager(key):
    """The `lax.cond` that skips the ELBO runs the same op by op."""
    data = simulate(30, 5, key=key).data
    compiled = level5.fit(data, 12, tol=0.0, monitor_every=5)
    with jax.disable_jit():
        eager = level5.fit(data, 12, tol=0.0, monitor_every=5)
    np.testing.assert_allclose(
        np.asarray(compiled.elbo_trace), np.asarray(eager.elbo_trace), rtol=1e-5
    )


@pytest.mark.parametrize(
    "monitor_every, error", [(0, ValueError), (-5, ValueError), (2.0, TypeError), (True, TypeError)]
)
def test_monitor_every_must_be_a_positive_int(oaks, monitor_every, error):
    with pytest.raises(error, match="monitor_every"):
        level5.fit(oaks, 10, monitor_every=monitor_every)


def test_cholesky_and_precision_invert_the_covariance():
    """L L^T is the covariance and Omega is its inverse, symmetric (float64)."""
    with jax.enable_x64(True):
        a = np.random.default_rng(3).normal(size=(40, 6))
        covariance = jnp.asarray(a.T @ a / 40 + 0.1 * np.eye(6))
        chol, precision = jax.jit(profiled.cholesky_and_precision)(covariance)
        np.testing.assert_allclose(
            np.asarray(chol @ chol.T), np.asarray(covariance), rtol=1e-12, atol=1e-12
        )
        np.testing.assert_allclose(
            np.asarray(precision), np.linalg.inv(np.asarray(covariance)), rtol=1e-10, atol=1e-10
        )
        np.testing.assert_array_equal(np.asarray(precision), np.asarray(precision).T)


def test_evaluate_writes_no_constant_array(oaks):
    """The Poisson sum takes log|S|, not 0.5 log S^2: inside XLA:CPU's YNNPACK fusion of that sum
    (jax 0.12) the constant 0.5 became an (n, p) array written at every iteration, a pass that
    writes an (n, p) array and reads none. What the compiled evaluation writes: the rate A, 1/S
    (shared by the gradient and the curvature), the residuals and the precision product."""
    problem = profiled.prepare(oaks)
    variational = init_variational(oaks)
    written = intermediate_arrays(profiled.evaluate, problem, variational, shape=oaks.counts.shape)
    n_by_p = sorted(name for name, shape in written.items() if shape == oaks.counts.shape)
    compiled = jax.jit(profiled.evaluate).lower(problem, variational).compile()
    from_nothing = [p.name for p in passes(compiled, oaks.counts.shape) if not p.reads]
    assert not set(from_nothing) & set(n_by_p), from_nothing
    assert len(n_by_p) <= 4, n_by_p
