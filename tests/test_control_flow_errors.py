"""The errors shown in chapters/control-flow.qmd, one test per error cell, in page order."""

import jax
import jax.numpy as jnp
import pytest
from jax import lax

REVERSE_MODE_LOOP = (
    "Reverse-mode differentiation does not work for lax.while_loop or lax.fori_loop "
    "with dynamic start/stop values"
)


def power_unrolled(x, n):
    y = jnp.ones_like(x)
    for _ in range(n):
        y = y * x
    return y


def power(x, n):
    return lax.fori_loop(0, n, lambda i, y: y * x, jnp.ones_like(x))


def test_range_over_a_traced_trip_count():
    """A Python `range(n)` with `n` traced by jit cannot get an integer."""
    with pytest.raises(
        jax.errors.TracerIntegerConversionError,
        match=r"The __index__\(\) method was called on traced array with shape int32\[\]",
    ):
        jax.jit(power_unrolled)(2.0, 3)


def test_grad_of_fori_loop_with_traced_bounds():
    """Under jit the trip count is traced, fori_loop becomes a while loop, and reverse mode refuses."""
    with pytest.raises(ValueError, match=REVERSE_MODE_LOOP):
        jax.grad(jax.jit(power))(2.0, 3)


def sqrt_newton_python(a, tol=1e-6):
    x, step = a, float("inf")
    while abs(step) > tol:
        new_x = 0.5 * (x + a / x)
        step, x = new_x - x, new_x
    return x


def test_python_while_on_a_traced_condition():
    """A Python `while` needs a concrete boolean; under jit the condition is a tracer."""
    with pytest.raises(
        jax.errors.TracerBoolConversionError,
        match=r"Attempted boolean conversion of traced array with shape bool\[\]",
    ):
        jax.jit(sqrt_newton_python)(2.0)


TOL, MAX_ITER = 1e-6, 50


@jax.jit
def sqrt_newton(a):
    def keep_going(carry):
        _, step, n_iter = carry
        return (jnp.abs(step) > TOL) & (n_iter < MAX_ITER)

    def newton_step(carry):
        x, _, n_iter = carry
        new_x = 0.5 * (x + a / x)
        return new_x, new_x - x, n_iter + 1

    x, _, n_iter = lax.while_loop(keep_going, newton_step, (a, jnp.inf, 0))
    return x, n_iter


def test_grad_of_while_loop():
    """Reverse mode cannot go through a while_loop, whose trip count is only known at run time."""
    with pytest.raises(ValueError, match=REVERSE_MODE_LOOP):
        jax.grad(lambda a: sqrt_newton(a)[0])(2.0)


def test_grad_of_while_loop_works_in_forward_mode():
    """The chapter's way out: forward mode does go through the while loop."""
    assert jnp.allclose(jax.jacfwd(lambda a: sqrt_newton(a)[0])(2.0), 0.5 / jnp.sqrt(2.0))


def running_total(total, x):
    total = total + x
    return total, total


def test_scan_carry_changes_shape():
    """A scalar carry plus a row becomes a vector: scan requires a fixed carry type."""
    with pytest.raises(
        TypeError,
        match=r"scan body function carry input and carry output must have equal types"
        r"(.|\n)*so the shapes do not match",
    ):
        lax.scan(running_total, 0.0, jnp.ones((4, 3)))


def sqrt_or_zero(x):
    if x > 0:
        return jnp.sqrt(x)
    return 0.0


def test_python_if_on_a_traced_value():
    """A Python `if` on a traced predicate raises under jit."""
    with pytest.raises(
        jax.errors.TracerBoolConversionError,
        match=r"Attempted boolean conversion of traced array with shape bool\[\]",
    ):
        jax.jit(sqrt_or_zero)(2.0)


def test_cond_branches_with_different_types():
    """Returning the int 0 from one branch and a float32 array from the other is rejected."""
    with pytest.raises(
        TypeError,
        match=r"cond branches must have equal output types(.|\n)*so the dtypes do not match",
    ):
        lax.cond(jnp.float32(2.0) > 0, jnp.sqrt, lambda x: 0, jnp.float32(2.0))


def test_switch_clamps_an_out_of_range_index():
    """Not an error, but a pinned behaviour the page relies on: the index is clamped, not checked."""
    branches = [jnp.sin, jnp.cos, jnp.tanh]
    assert lax.switch(-3, branches, 0.5) == jnp.sin(0.5)
    assert lax.switch(7, branches, 0.5) == jnp.tanh(0.5)


def _zero_unless_positive(fn, how):
    if how == "cond":
        return lambda x: lax.cond(x > 0, fn, jnp.zeros_like, x)
    return lambda x: jnp.where(x > 0, fn(x), 0.0)


def _grad_of_vmap(f):
    return jax.grad(lambda x: jnp.sum(jax.vmap(f)(x)))


XS = jnp.array([-1.0, 0.0, 4.0])


@pytest.mark.parametrize("fn", [jnp.sqrt, jnp.log], ids=["sqrt", "log"])
def test_batched_cond_keeps_the_gradient_clean_in_both_orders_and_where_does_not(fn):
    """The 'cond under vmap' box: vmap(grad(cond)) and grad(vmap(cond)) have no NaN at -1 and 0;
    the same function written with where has a NaN in both orders."""
    with_cond, with_where = _zero_unless_positive(fn, "cond"), _zero_unless_positive(fn, "where")
    for order in (jax.vmap(jax.grad(with_cond)), _grad_of_vmap(with_cond)):
        assert jnp.array_equal(order(XS), jnp.array([0.0, 0.0, 0.25]))
    for order in (jax.vmap(jax.grad(with_where)), _grad_of_vmap(with_where)):
        assert jnp.isnan(order(XS)[1])


def test_vmap_of_grad_selects_derivatives_and_grad_of_vmap_needs_the_stop_gradient():
    """The box's mechanism, by hand. vmap(grad): a select of the branches' derivatives drops the
    NaN and inf of the unselected sqrt. grad(vmap): a where of both branches gives NaN unless the
    unselected input is stop_gradient'ed, as the batched cond does (its jaxpr holds stop_gradient
    lines in both orders)."""
    sqrt_derivative = 0.5 / jnp.sqrt(XS)
    assert jnp.isnan(sqrt_derivative[0]) and jnp.isinf(sqrt_derivative[1])
    assert jnp.array_equal(jnp.where(XS > 0, sqrt_derivative, 0.0), jnp.array([0.0, 0.0, 0.25]))

    def by_hand(x, protect):
        selected = x > 0
        sqrt_input = jnp.where(selected, x, lax.stop_gradient(x)) if protect else x
        return jnp.where(selected, jnp.sqrt(sqrt_input), 0.0)

    unprotected = jax.grad(lambda x: jnp.sum(by_hand(x, False)))(XS)
    protected = jax.grad(lambda x: jnp.sum(by_hand(x, True)))(XS)
    assert jnp.isnan(unprotected[0]) and jnp.isnan(unprotected[1])
    assert jnp.array_equal(protected, jnp.array([0.0, 0.0, 0.25]))
    with_cond = _zero_unless_positive(jnp.sqrt, "cond")
    for order in (jax.vmap(jax.grad(with_cond)), _grad_of_vmap(with_cond)):
        assert "stop_gradient" in str(jax.make_jaxpr(order)(XS))
