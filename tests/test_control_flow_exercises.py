"""Checkers of chapters/control-flow.qmd: the reference solutions pass, typical mistakes get a hint."""

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


# Exercise 2: exponential moving average with scan ----------------------------------------------


def ewma(xs, alpha):
    def step(smoothed, x):
        smoothed = alpha * x + (1 - alpha) * smoothed
        return smoothed, smoothed

    _, smoothed = lax.scan(step, xs[0], xs)
    return smoothed


def ewma_final_only(xs, alpha):
    final, _ = lax.scan(lambda s, x: (alpha * x + (1 - alpha) * s, None), xs[0], xs)
    return final


def ewma_lagged(xs, alpha):
    _, out = lax.scan(lambda s, x: (alpha * x + (1 - alpha) * s, s), xs[0], xs)
    return out


def ewma_swapped(xs, alpha):
    def step(s, x):
        s = alpha * s + (1 - alpha) * x
        return s, s

    return lax.scan(step, xs[0], xs)[1]


def ewma_python_loop(xs, alpha):
    smoothed, out = xs[0], []
    for x in xs:
        smoothed = alpha * x + (1 - alpha) * smoothed
        out.append(smoothed)
    return jnp.stack(out)


def test_ewma_reference_passes():
    verdict = check_ewma(ewma)
    assert verdict, verdict.message


@pytest.mark.parametrize(
    "wrong, hint",
    [
        (ewma_final_only, "stacked outputs"),
        (ewma_lagged, "lag one step"),
        (ewma_swapped, "alpha weighs the new observation"),
        (ewma_python_loop, "contains no scan"),
        (lambda xs, alpha: lax.scan(lambda s, x: (alpha * x + (1 - alpha) * s,) * 2, xs[0], xs), "(final carry, ys)"),
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


# Exercise 4: Kepler's equation with while_loop -------------------------------------------------

TOL, MAX_ITER = 1e-6, 50


def newton_step(mean_anomaly, eccentricity, anomaly):
    residual = anomaly - eccentricity * jnp.sin(anomaly) - mean_anomaly
    return residual / (1 - eccentricity * jnp.cos(anomaly))


def solve_kepler(mean_anomaly, eccentricity):
    def keep_going(carry):
        _, step, n_iter = carry
        return (jnp.abs(step) > TOL) & (n_iter < MAX_ITER)

    def body(carry):
        anomaly, _, n_iter = carry
        step = newton_step(mean_anomaly, eccentricity, anomaly)
        return anomaly - step, step, n_iter + 1

    anomaly, _, n_iter = lax.while_loop(keep_going, body, (mean_anomaly, jnp.inf, 0))
    return anomaly, n_iter


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

    def solve(mean_anomaly, eccentricity):
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

    return solve


def kepler_new_anomaly_step(mean_anomaly, eccentricity):
    """The step measured as new E - old E: the same count, in other float32 rounding."""

    def body(carry):
        anomaly, _, n_iter = carry
        new = anomaly - newton_step(mean_anomaly, eccentricity, anomaly)
        return new, new - anomaly, n_iter + 1

    cond = lambda carry: (jnp.abs(carry[1]) >= TOL) & (carry[2] < MAX_ITER)
    anomaly, _, n_iter = lax.while_loop(cond, body, (mean_anomaly, jnp.float32(1.0), 0))
    return anomaly, n_iter


def test_kepler_variant_with_other_rounding_passes():
    """The exact step counts and the cap case do not depend on how the step is rounded."""
    verdict = check_kepler(kepler_new_anomaly_step)
    assert verdict, verdict.message


def kepler_anomaly_only(mean_anomaly, eccentricity):
    return solve_kepler(mean_anomaly, eccentricity)[0]


def test_kepler_reference_passes():
    verdict = check_kepler(solve_kepler)
    assert verdict, verdict.message


@pytest.mark.parametrize(
    "wrong, hint",
    [
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
