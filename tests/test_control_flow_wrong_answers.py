"""More wrong answers to the control-flow chapter's exercises, written from the exercise texts alone
as a hurried learner would (issue 27): each must fail, with a hint that names what it did."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax import lax
from wrong_answers import assert_fails_with

from jaxcourse.exercises.control_flow import (
    MAX_ITER,
    TOL,
    check_ewma,
    check_horner,
    check_kepler,
    check_soft_ramp,
)

# Exercise 1: Horner's rule with fori_loop ------------------------------------------------------


def horner_starts_at_first_coefficient(coeffs, x):
    """Starts the result at coeffs[0], then also adds coeffs[0] in the first iteration."""
    init = jnp.full_like(x, coeffs[0])
    return lax.fori_loop(0, coeffs.shape[0], lambda i, r: r * x + coeffs[i], init)


def horner_stops_one_short(coeffs, x):
    """range(len - 1): the constant term is never added."""
    return lax.fori_loop(0, coeffs.shape[0] - 1, lambda i, r: r * x + coeffs[i], jnp.zeros_like(x))


def horner_minus(coeffs, x):
    """A sign slip in the multiply-add."""
    return lax.fori_loop(0, coeffs.shape[0], lambda i, r: r * x - coeffs[i], jnp.zeros_like(x))


def horner_powers_lowest_first(coeffs, x):
    """Sums coeffs[i] * x**i: reads the coefficients lowest degree first."""
    return lax.fori_loop(0, coeffs.shape[0], lambda i, r: r + coeffs[i] * x**i, jnp.zeros_like(x))


def horner_scalar_start(coeffs, x):
    """Starts the carry at a scalar 0.0, whatever the shape of x."""
    return lax.fori_loop(0, coeffs.shape[0], lambda i, r: r * x + coeffs[i], 0.0)


def horner_numpy_inside(coeffs, x):
    """Converts the inputs with NumPy: fine eagerly, fails under jit."""
    coeffs, x = np.asarray(coeffs), np.asarray(x)
    return lax.fori_loop(0, len(coeffs), lambda i, r: r * x + coeffs[i], np.zeros_like(x))


@pytest.mark.parametrize(
    "wrong,hint",
    [
        (horner_starts_at_first_coefficient, "started from coeffs[0]"),
        (horner_stops_one_short, "every coefficient"),
        (horner_minus, "negatives"),
        (horner_powers_lowest_first, "lowest degree first"),
        (horner_scalar_start, "jnp.zeros_like(x)"),
        (horner_numpy_inside, "under jax.jit"),
    ],
)
def test_horner_wrong_answers(wrong, hint):
    assert_fails_with(check_horner(wrong), hint)


# Exercise 2: a moving average over gaps with scan ----------------------------------------------


def _ewma_step(alpha):
    def step(smoothed, x):
        updated = jnp.where(jnp.isnan(smoothed), x, alpha * x + (1 - alpha) * smoothed)
        smoothed = jnp.where(jnp.isnan(x), smoothed, updated)
        return smoothed, smoothed

    return step


def ewma_starts_at_xs0(xs, alpha):
    """Starts the carry at xs[0], as the formula s_0 = x_0 says: wrong when xs[0] is a gap."""

    def step(smoothed, x):
        updated = alpha * x + (1 - alpha) * smoothed
        smoothed = jnp.where(jnp.isnan(x), smoothed, updated)
        return smoothed, smoothed

    return lax.scan(step, xs[0], xs)[1]


def ewma_starts_at_zero(xs, alpha):
    """Starts the carry at 0 and holds it over gaps."""

    def step(smoothed, x):
        smoothed = jnp.where(jnp.isnan(x), smoothed, alpha * x + (1 - alpha) * smoothed)
        return smoothed, smoothed

    return lax.scan(step, jnp.zeros((), xs.dtype), xs)[1]


def ewma_nan_test_with_equality(xs, alpha):
    """Tests for a gap with x == jnp.nan, which is never true."""

    def step(smoothed, x):
        updated = jnp.where(jnp.isnan(smoothed), x, alpha * x + (1 - alpha) * smoothed)
        smoothed = jnp.where(x == jnp.nan, smoothed, updated)
        return smoothed, smoothed

    return lax.scan(step, jnp.full((), jnp.nan, xs.dtype), xs)[1]


def ewma_python_if_on_alpha(xs, alpha):
    """A Python shortcut for alpha = 1: fine eagerly, fails when alpha is traced."""
    if alpha == 1:
        return xs
    return lax.scan(_ewma_step(alpha), jnp.full((), jnp.nan, xs.dtype), xs)[1]


def ewma_drops_the_gaps(xs, alpha):
    """Removes the gaps first with a boolean mask: one value per reading, not per entry."""
    readings = xs[~jnp.isnan(xs)]
    return lax.scan(_ewma_step(alpha), jnp.full((), jnp.nan, xs.dtype), readings)[1]


def ewma_previous_reading(xs, alpha):
    """Averages each reading with the previous reading, not with the previous average."""

    def step(previous, x):
        return x, alpha * x + (1 - alpha) * jnp.where(jnp.isnan(previous), x, previous)

    return lax.scan(step, jnp.full((), jnp.nan, xs.dtype), xs)[1]


def ewma_at_set_loop(xs, alpha):
    """A Python loop filling an output array: unrolled, one step per entry."""
    out, smoothed = jnp.full_like(xs, jnp.nan), jnp.full((), jnp.nan, xs.dtype)
    step = _ewma_step(alpha)
    for t in range(xs.shape[0]):
        smoothed, _ = step(smoothed, xs[t])
        out = out.at[t].set(smoothed)
    return out


@pytest.mark.slow_after_first
@pytest.mark.parametrize(
    "wrong,hint",
    [
        (ewma_starts_at_xs0, "cannot start from xs[0]"),
        (ewma_starts_at_zero, "started at 0"),
        (ewma_nan_test_with_equality, "a gap (NaN) must not poison the average"),
        (ewma_python_if_on_alpha, "Python"),
        (ewma_drops_the_gaps, "one value per entry of xs"),
        (ewma_previous_reading, "previous reading"),
        (ewma_at_set_loop, "unrolled"),
    ],
)
def test_ewma_wrong_answers(wrong, hint):
    assert_fails_with(check_ewma(wrong), hint)


# Exercise 3: a differentiable piecewise function with switch -----------------------------------

_PIECES = [jnp.zeros_like, lambda x: x**2 / 2, lambda x: 2 * jnp.sqrt(x) - 1.5]


def soft_ramp_wrong_constant(x):
    """2 sqrt(x) - 1: the constant of the last piece is wrong."""
    index = (x >= 0).astype(jnp.int32) + (x >= 1).astype(jnp.int32)
    return lax.switch(index, [_PIECES[0], _PIECES[1], lambda x: 2 * jnp.sqrt(x) - 1], x)


def soft_ramp_forgot_half(x):
    """x**2 on the middle piece."""
    index = (x >= 0).astype(jnp.int32) + (x >= 1).astype(jnp.int32)
    return lax.switch(index, [_PIECES[0], lambda x: x**2, _PIECES[2]], x)


def soft_ramp_bool_index(x):
    """(x >= 0) + (x >= 1) stays a bool in JAX."""
    return lax.switch((x >= 0) + (x >= 1), _PIECES, x)


def soft_ramp_python_index(x):
    """A Python int for the index: fine eagerly, fails under jit."""
    return lax.switch(int(x >= 0) + int(x >= 1), _PIECES, x)


def soft_ramp_floor_index(x):
    """floor(x) as the index: 0 on [0, 1), 1 from 1 on (2 only from x = 2), clamped below 0."""
    return lax.switch(jnp.floor(x).astype(jnp.int32), _PIECES, x)


def soft_ramp_two_branches(x):
    """Forgot the zero piece: two branches, the clamp sends x < 0 to the first."""
    return lax.switch((x >= 1).astype(jnp.int32), _PIECES[1:], x)


def soft_ramp_sqrt_outside(x):
    """Computes sqrt(x) once, before the switch, and closes over it in the last branch."""
    root = jnp.sqrt(x)
    index = (x >= 0).astype(jnp.int32) + (x >= 1).astype(jnp.int32)
    return lax.switch(index, [_PIECES[0], _PIECES[1], lambda x: 2 * root - 1.5], x)


@pytest.mark.slow_after_first
@pytest.mark.parametrize(
    "wrong,hint",
    [
        (soft_ramp_wrong_constant, "formula of the piece x >= 1"),
        (soft_ramp_forgot_half, "formula of the piece 0 <= x < 1"),
        (soft_ramp_bool_index, "bool"),
        (soft_ramp_python_index, "Python"),
        (soft_ramp_floor_index, "the formula of the piece x < 0"),
        (soft_ramp_two_branches, "the formula of the piece 0 <= x < 1"),
        (soft_ramp_sqrt_outside, "computed before lax.switch"),
    ],
)
def test_soft_ramp_wrong_answers(wrong, hint):
    assert_fails_with(check_soft_ramp(wrong), hint)


# Exercise 4: Kepler's equation and its derivative ----------------------------------------------


def _newton(mean_anomaly, eccentricity, *, start, stop_on_residual=False, sign=1.0, cap=MAX_ITER):
    def f(anomaly):
        return anomaly - eccentricity * jnp.sin(anomaly) - mean_anomaly

    def keep_going(carry):
        anomaly, step, n_iter = carry
        size = jnp.abs(f(anomaly)) if stop_on_residual else jnp.abs(step)
        return (size > TOL) & (n_iter < cap)

    def newton_step(carry):
        anomaly, _, n_iter = carry
        step = f(anomaly) / (1 - eccentricity * jnp.cos(anomaly))
        return anomaly - sign * step, step, n_iter + 1

    return lax.while_loop(keep_going, newton_step, (start, jnp.inf, 0)), f


def _with_custom_root(solver_options, tangent_solve=lambda g, y: y / g(1.0)):
    def solve(mean_anomaly, eccentricity):
        def kepler(anomaly):
            return anomaly - eccentricity * jnp.sin(anomaly) - mean_anomaly

        def solver(f, guess):
            (anomaly, _, n_iter), _ = _newton(
                mean_anomaly, eccentricity, start=guess, **solver_options
            )
            return anomaly, n_iter

        return lax.custom_root(kepler, mean_anomaly, solver, tangent_solve, has_aux=True)

    return solve


def kepler_starts_at_zero(mean_anomaly, eccentricity):
    """Starts Newton's method at E = 0 instead of E = M."""

    def kepler(anomaly):
        return anomaly - eccentricity * jnp.sin(anomaly) - mean_anomaly

    def solver(f, guess):
        (anomaly, _, n_iter), _ = _newton(mean_anomaly, eccentricity, start=jnp.zeros_like(guess))
        return anomaly, n_iter

    return lax.custom_root(kepler, mean_anomaly, solver, lambda g, y: y / g(1.0), has_aux=True)


kepler_stops_on_residual = _with_custom_root({"stop_on_residual": True})
kepler_cap_100 = _with_custom_root({"cap": 100})
kepler_step_added = _with_custom_root({"sign": -1.0})
kepler_tangent_multiplies = _with_custom_root({}, tangent_solve=lambda g, y: y * g(1.0))


@jax.custom_jvp
def _anomaly_by_finite_differences(mean_anomaly, eccentricity):
    (anomaly, _, _), _ = _newton(mean_anomaly, eccentricity, start=mean_anomaly)
    return anomaly


@_anomaly_by_finite_differences.defjvp
def _finite_difference_jvp(primals, tangents):
    mean_anomaly, eccentricity = primals
    h = 1e-3
    anomaly = _anomaly_by_finite_differences(mean_anomaly, eccentricity)
    up = _anomaly_by_finite_differences(mean_anomaly + h, eccentricity)
    down = _anomaly_by_finite_differences(mean_anomaly - h, eccentricity)
    return anomaly, (up - down) / (2 * h) * tangents[0]


def kepler_finite_differences(mean_anomaly, eccentricity):
    """The derivative by a finite difference, two more solves: a numerical stand-in."""
    (_, _, n_iter), _ = _newton(mean_anomaly, eccentricity, start=mean_anomaly)
    return _anomaly_by_finite_differences(mean_anomaly, eccentricity), n_iter


def kepler_gradient_stopped(mean_anomaly, eccentricity):
    """'Without differentiating through the iterations': stop_gradient on the result."""
    (anomaly, _, n_iter), _ = _newton(mean_anomaly, eccentricity, start=mean_anomaly)
    return lax.stop_gradient(anomaly), n_iter


@pytest.mark.slow_after_first
@pytest.mark.parametrize(
    "wrong,hint",
    [
        (kepler_starts_at_zero, "started at E = 0"),
        (kepler_stops_on_residual, "stops when the residual"),
        (kepler_cap_100, "MAX_ITER"),
        (kepler_step_added, "E + step"),
        (kepler_tangent_multiplies, "not its inverse"),
        (kepler_finite_differences, "solves again"),
        (kepler_gradient_stopped, "exactly 0"),
    ],
)
def test_kepler_wrong_answers(wrong, hint):
    assert_fails_with(check_kepler(wrong), hint)
