"""Checkers of chapters/control-flow.qmd: the reference solutions pass, typical mistakes get a hint."""

import jax
import jax.numpy as jnp
import pytest
from jax import lax

from jaxcourse.exercises.control_flow import check_ewma, check_horner, check_kepler, check_soft_ramp


def not_implemented(*args):
    raise NotImplementedError


@pytest.mark.parametrize("checker", [check_horner, check_ewma, check_soft_ramp, check_kepler])
def test_stub_is_not_yet(checker):
    """A stub that raises NotImplementedError, or no answer at all, gets 'not yet', never an exception."""
    for answer in (not_implemented, None):
        verdict = checker(answer)
        assert not verdict
        assert "no answer yet" in verdict.message


@pytest.mark.parametrize("checker", [check_horner, check_ewma, check_soft_ramp, check_kepler])
def test_checker_never_raises_on_nonsense(checker):
    """Even an answer that is not a function gives a verdict."""
    verdict = checker(42)
    assert not verdict
    assert "should be a function" in verdict.message


# Exercise 1: Horner's rule with fori_loop ------------------------------------------------------


def horner(coeffs, x):
    def body(i, result):
        return result * x + coeffs[i]

    return lax.fori_loop(0, coeffs.shape[0], body, jnp.zeros_like(x))


def horner_python_loop(coeffs, x):
    """A Python loop over the coefficients: the right values, but under jit it unrolls into one
    multiply-add per coefficient, with no loop in the program."""
    result = jnp.zeros_like(x)
    for c in coeffs:
        result = result * x + c
    return result


def horner_reversed(coeffs, x):
    n = coeffs.shape[0]
    return lax.fori_loop(0, n, lambda i, r: r * x + coeffs[n - 1 - i], jnp.zeros_like(x))


def horner_skips_first(coeffs, x):
    return lax.fori_loop(1, coeffs.shape[0], lambda i, r: r * x + coeffs[i], jnp.zeros_like(x))


def test_horner_reference_passes():
    verdict = check_horner(horner)
    assert verdict, verdict.message


@pytest.mark.parametrize(
    "wrong, hint",
    [
        (horner_python_loop, "contains no loop"),
        (horner_reversed, "highest degree first"),
        (horner_skips_first, "visit every coefficient"),
        (lambda coeffs, x: jnp.polyval(coeffs, x), "traces to one `polynomial` primitive"),
        (lambda coeffs, x: (horner(coeffs, x), coeffs), "got a tuple of 2 items"),
    ],
)
def test_horner_rejects_typical_mistakes(wrong, hint):
    verdict = check_horner(wrong)
    assert not verdict
    assert hint in verdict.message


# Exercise 2: a moving average over gaps with scan ----------------------------------------------


def ewma(xs, alpha):
    def step(smoothed, x):
        updated = jnp.where(jnp.isnan(smoothed), x, alpha * x + (1 - alpha) * smoothed)
        smoothed = jnp.where(jnp.isnan(x), smoothed, updated)
        return smoothed, smoothed

    return lax.scan(step, jnp.full((), jnp.nan, xs.dtype), xs)[1]


def ewma_seen_flag(xs, alpha):
    """Another design: a flag in the carry says whether a reading has been seen."""

    def step(carry, x):
        smoothed, seen = carry
        gap = jnp.isnan(x)
        smoothed = jnp.where(gap, smoothed, jnp.where(seen, alpha * x + (1 - alpha) * smoothed, x))
        return (smoothed, seen | ~gap), jnp.where(seen | ~gap, smoothed, jnp.nan)

    return lax.scan(step, (jnp.zeros((), xs.dtype), jnp.array(False)), xs)[1]


def ewma_plain(xs, alpha):
    """The gap-free moving average: the skip-the-skill answer, where a NaN spreads."""
    return lax.scan(lambda s, x: (alpha * x + (1 - alpha) * s,) * 2, xs[0], xs)[1]


def ewma_gaps_as_zero(xs, alpha):
    return ewma_plain(jnp.nan_to_num(xs), alpha)


def ewma_starts_at_first_value(xs, alpha):
    """Skips gaps, but starts the carry at xs[0], which may itself be a gap."""

    def step(s, x):
        s = jnp.where(jnp.isnan(x), s, alpha * x + (1 - alpha) * s)
        return s, s

    return lax.scan(step, xs[0], xs)[1]


def ewma_nan_at_gaps(xs, alpha):
    """Keeps the carry over a gap but emits NaN there instead of the held average."""

    def step(s, x):
        updated = jnp.where(jnp.isnan(s), x, alpha * x + (1 - alpha) * s)
        s = jnp.where(jnp.isnan(x), s, updated)
        return s, jnp.where(jnp.isnan(x), jnp.nan, s)

    return lax.scan(step, jnp.full((), jnp.nan, xs.dtype), xs)[1]


def ewma_final_only(xs, alpha):
    return lax.scan(
        lambda s, x: (jnp.where(jnp.isnan(s), x, alpha * x + (1 - alpha) * s), None), xs[0], xs
    )[0]


def ewma_lagged(xs, alpha):
    def step(s, x):
        updated = jnp.where(jnp.isnan(s), x, alpha * x + (1 - alpha) * s)
        return jnp.where(jnp.isnan(x), s, updated), s

    return lax.scan(step, jnp.full((), jnp.nan, xs.dtype), xs)[1]


def ewma_swapped(xs, alpha):
    return ewma(xs, 1 - alpha)


def ewma_python_loop(xs, alpha):
    smoothed, out = jnp.nan, []
    for x in xs:
        updated = jnp.where(jnp.isnan(smoothed), x, alpha * x + (1 - alpha) * smoothed)
        smoothed = jnp.where(jnp.isnan(x), smoothed, updated)
        out.append(smoothed)
    return jnp.stack(out)


def ewma_scan_per_value(xs, alpha):
    """A Python loop over the values that runs a one-step scan each time: still unrolled."""
    smoothed, out = jnp.full((), jnp.nan, xs.dtype), []
    for t in range(xs.shape[0]):
        smoothed, ys = lax.scan(
            lambda s, x: (
                (
                    jnp.where(
                        jnp.isnan(x), s, jnp.where(jnp.isnan(s), x, alpha * x + (1 - alpha) * s)
                    ),
                )
                * 2
            ),
            smoothed,
            xs[t : t + 1],
        )
        out.append(ys[0])
    return jnp.stack(out)


@pytest.mark.slow_after_first
@pytest.mark.parametrize("answer", [ewma, ewma_seen_flag])
def test_ewma_reference_and_another_design_pass(answer):
    verdict = check_ewma(answer)
    assert verdict, verdict.message


@pytest.mark.slow_after_first
@pytest.mark.parametrize(
    "wrong, hint",
    [
        (ewma_plain, "must not poison the average"),
        (ewma_gaps_as_zero, "not a reading of 0"),
        (ewma_starts_at_first_value, "starts with a gap"),
        (ewma_nan_at_gaps, "hold its last value"),
        (ewma_final_only, "stacked outputs"),
        (ewma_lagged, "lag one step"),
        (ewma_swapped, "alpha weighs the new observation"),
        (ewma_python_loop, "contains no scan"),
        (ewma_scan_per_value, "grows with the series"),
        (
            lambda xs, alpha: lax.scan(lambda s, x: (alpha * x + (1 - alpha) * s,) * 2, xs[0], xs),
            "(final carry, ys)",
        ),
    ],
)
def test_ewma_rejects_typical_mistakes(wrong, hint):
    verdict = check_ewma(wrong)
    assert not verdict
    assert hint in verdict.message


# Exercise 3: a differentiable piecewise function with switch -----------------------------------


def soft_ramp(x):
    index = (x >= 0).astype(jnp.int32) + (x >= 1).astype(jnp.int32)
    branches = [jnp.zeros_like, lambda x: x**2 / 2, lambda x: 2 * jnp.sqrt(x) - 1.5]
    return lax.switch(index, branches, x)


def soft_ramp_where(x):
    return jnp.where(x < 0, 0.0, jnp.where(x < 1, x**2 / 2, 2 * jnp.sqrt(x) - 1.5))


def soft_ramp_python_if(x):
    if x < 0:
        return 0.0 * x
    if x < 1:
        return x**2 / 2
    return 2 * jnp.sqrt(x) - 1.5


def soft_ramp_wrong_order(x):
    index = (x >= 0).astype(jnp.int32) + (x >= 1).astype(jnp.int32)
    branches = [jnp.zeros_like, lambda x: 2 * jnp.sqrt(jnp.abs(x)) - 1.5, lambda x: x**2 / 2]
    return lax.switch(index, branches, x)


def soft_ramp_double_where(x):
    safe = jnp.where(x >= 1, x, 1.0)
    return jnp.where(x < 0, 0.0, jnp.where(x < 1, x**2 / 2, 2 * jnp.sqrt(safe) - 1.5))


def test_soft_ramp_reference_passes():
    verdict = check_soft_ramp(soft_ramp)
    assert verdict, verdict.message


def test_soft_ramp_clamped_index_also_passes():
    """The alternative named in the solution, relying on switch's clamp, is accepted."""
    verdict = check_soft_ramp(
        lambda x: lax.switch(
            jnp.floor(x).astype(jnp.int32) + 1,
            [jnp.zeros_like, lambda x: x**2 / 2, lambda x: 2 * jnp.sqrt(x) - 1.5],
            x,
        )
    )
    assert verdict, verdict.message


@pytest.mark.parametrize(
    "wrong, hint",
    [
        (soft_ramp_where, "is NaN"),
        (soft_ramp_python_if, "Python `if`/`while`"),
        (soft_ramp_wrong_order, "order of the branches"),
        (soft_ramp_double_where, "contains no cond"),
    ],
)
def test_soft_ramp_rejects_typical_mistakes(wrong, hint):
    verdict = check_soft_ramp(wrong)
    assert not verdict
    assert hint in verdict.message


# Exercise 4: Kepler's equation with while_loop, and its derivative -----------------------------

TOL, MAX_ITER = 1e-6, 50


def newton_step(mean_anomaly, eccentricity, anomaly):
    residual = anomaly - eccentricity * jnp.sin(anomaly) - mean_anomaly
    return residual / (1 - eccentricity * jnp.cos(anomaly))


def kepler_loop(mean_anomaly, eccentricity):
    """The while_loop solver alone: a copy of the chapter's sqrt_newton, with no derivative."""

    def keep_going(carry):
        _, step, n_iter = carry
        return (jnp.abs(step) > TOL) & (n_iter < MAX_ITER)

    def body(carry):
        anomaly, _, n_iter = carry
        step = newton_step(mean_anomaly, eccentricity, anomaly)
        return anomaly - step, step, n_iter + 1

    anomaly, _, n_iter = lax.while_loop(keep_going, body, (mean_anomaly, jnp.inf, 0))
    return anomaly, n_iter


def implicit(solver, tangent_solve=lambda g, y: y / g(1.0)):
    """`solver(M, e) -> (E, n_iter)` with its root differentiated by custom_root."""

    def solve(mean_anomaly, eccentricity):
        return lax.custom_root(
            lambda anomaly: anomaly - eccentricity * jnp.sin(anomaly) - mean_anomaly,
            mean_anomaly,
            lambda f, guess: solver(mean_anomaly, eccentricity),
            tangent_solve,
            has_aux=True,
        )

    return solve


solve_kepler = implicit(kepler_loop)


def kepler_one_step_from_root(mean_anomaly, eccentricity):
    """Another design: one Newton step taken from the stopped root has the implicit derivative."""
    anomaly, n_iter = kepler_loop(mean_anomaly, eccentricity)
    root = lax.stop_gradient(anomaly)
    return root - newton_step(mean_anomaly, eccentricity, root), n_iter


def kepler_unrolled_gradient(mean_anomaly, eccentricity):
    """The loop for the count, and a fixed-length loop, differentiated step by step, for E."""
    _, n_iter = kepler_loop(mean_anomaly, eccentricity)
    anomaly = lax.fori_loop(
        0, 8, lambda i, a: a - newton_step(mean_anomaly, eccentricity, a), mean_anomaly
    )
    return anomaly, n_iter


def kepler_forward_through_loop(mean_anomaly, eccentricity):
    """A custom_vjp whose backward pass runs forward mode through the while_loop."""

    @jax.custom_vjp
    def anomaly_of(mean):
        return kepler_loop(mean, eccentricity)[0]

    def forward(mean):
        return anomaly_of(mean), mean

    def backward(mean, cotangent):
        return (cotangent * jax.jvp(lambda m: kepler_loop(m, eccentricity)[0], (mean,), (1.0,))[1],)

    anomaly_of.defvjp(forward, backward)
    return anomaly_of(mean_anomaly), kepler_loop(mean_anomaly, eccentricity)[1]


def kepler_fixed_steps(n_steps):
    def solve(mean_anomaly, eccentricity):
        def body(i, anomaly):
            return anomaly - newton_step(mean_anomaly, eccentricity, anomaly)

        return lax.fori_loop(0, n_steps, body, mean_anomaly), n_steps

    return solve


def kepler_python_while(mean_anomaly, eccentricity):
    anomaly, step, n_iter = mean_anomaly, jnp.inf, 0
    while abs(step) > TOL:
        step = newton_step(mean_anomaly, eccentricity, anomaly)
        anomaly, n_iter = anomaly - step, n_iter + 1
    return anomaly, n_iter


def kepler_variant(start=0, cap=lambda n_iter: n_iter < MAX_ITER):
    """The reference with another counter start or cap; cap=None drops the cap."""

    def solver(mean_anomaly, eccentricity):
        def keep_going(carry):
            _, step, n_iter = carry
            converging = jnp.abs(step) > TOL
            return converging if cap is None else converging & cap(n_iter)

        def body(carry):
            anomaly, _, n_iter = carry
            step = newton_step(mean_anomaly, eccentricity, anomaly)
            return anomaly - step, step, n_iter + 1

        anomaly, _, n_iter = lax.while_loop(keep_going, body, (mean_anomaly, jnp.inf, start))
        return anomaly, n_iter

    return implicit(solver)


def kepler_new_anomaly_step(mean_anomaly, eccentricity):
    """The step measured as new E - old E: the same count, in other float32 rounding."""

    def body(carry):
        anomaly, _, n_iter = carry
        new = anomaly - newton_step(mean_anomaly, eccentricity, anomaly)
        return new, new - anomaly, n_iter + 1

    cond = lambda carry: (jnp.abs(carry[1]) >= TOL) & (carry[2] < MAX_ITER)
    anomaly, _, n_iter = lax.while_loop(cond, body, (mean_anomaly, jnp.float32(1.0), 0))
    return anomaly, n_iter


def kepler_anomaly_only(mean_anomaly, eccentricity):
    return solve_kepler(mean_anomaly, eccentricity)[0]


@pytest.mark.slow
@pytest.mark.parametrize(
    "answer",
    [solve_kepler, implicit(kepler_new_anomaly_step), kepler_one_step_from_root],
    ids=["custom_root", "other-rounding", "one-step-from-root"],
)
def test_kepler_reference_and_other_designs_pass(answer):
    """The step counts and the cap case do not depend on how the step is rounded, and the implicit
    derivative may come from custom_root or from the formula (one Newton step from the stopped root)."""
    verdict = check_kepler(answer)
    assert verdict, verdict.message


@pytest.mark.slow_after_first
@pytest.mark.parametrize(
    "wrong, hint",
    [
        (kepler_loop, "jax.grad cannot go through lax.while_loop"),
        (kepler_unrolled_gradient, "differentiates through the Newton iterations"),
        (kepler_forward_through_loop, "differentiates through the Newton iterations"),
        (implicit(kepler_loop, lambda g, y: y), "a finite difference of the root gives"),
        (implicit(kepler_loop, lambda g, y: y * g(1.0)), "not its inverse"),
        (implicit(kepler_loop, lambda g, y: -y / g(1.0)), "wrong sign"),
        (kepler_fixed_steps(50), "you report 50"),
        (kepler_fixed_steps(3), "Stop as soon as |step| < TOL"),
        (kepler_python_while, "Python `if`/`while`"),
        (kepler_anomaly_only, "should return a pair (E, n_iter)"),
        (kepler_variant(start=1), "off by one"),
        (kepler_variant(cap=None), "never compares with MAX_ITER"),
        (kepler_variant(cap=lambda n_iter: n_iter <= MAX_ITER), "you report 51"),
    ],
)
def test_kepler_rejects_typical_mistakes(wrong, hint):
    verdict = check_kepler(wrong)
    assert not verdict
    assert hint in verdict.message
