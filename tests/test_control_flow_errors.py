"""The errors shown in chapters/control-flow.qmd, one test per error cell, in page order."""

import re

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
    the same function written with where has a NaN in both orders. Eager and jitted (the page jits)."""
    with_cond, with_where = _zero_unless_positive(fn, "cond"), _zero_unless_positive(fn, "where")
    for wrap in (lambda f: f, jax.jit):
        for order in (jax.vmap(jax.grad(with_cond)), _grad_of_vmap(with_cond)):
            assert jnp.array_equal(wrap(order)(XS), jnp.array([0.0, 0.0, 0.25]))
        for order in (jax.vmap(jax.grad(with_where)), _grad_of_vmap(with_where)):
            assert jnp.isnan(wrap(order)(XS)[1])


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


def _combine_steps(earlier, later):
    (a1, b1), (a2, b2) = earlier, later
    return a1 * a2, a2 * b1 + b2


@pytest.mark.slow  # compiling associative_scan at n = 1024 takes seconds on XLA:CPU
def test_reverse_scan_and_associative_scan_agree_with_scan():
    """The reverse/associative section: scan(reverse=True) gives suffix sums (flipped cumsum), as
    associative_scan(jnp.add, reverse=True) does; a linear recurrence by associative_scan matches
    the sequential scan to float32 rounding."""

    def running_total(total, x):
        return total + x, total + x

    rewards = jnp.arange(1.0, 6.0)
    suffix = lax.scan(running_total, 0.0, rewards, reverse=True)[1]
    assert jnp.array_equal(suffix, jnp.array([15.0, 14.0, 12.0, 9.0, 5.0]))
    assert jnp.array_equal(lax.associative_scan(jnp.add, rewards, reverse=True), suffix)

    a = jax.random.uniform(jax.random.key(1), (1024,), minval=0.5, maxval=1.0)
    b = jax.random.normal(jax.random.key(2), (1024,))

    def step(h, a_and_b):
        h = a_and_b[0] * h + a_and_b[1]
        return h, h

    by_scan = jax.jit(lambda a, b: lax.scan(step, 0.0, (a, b))[1])(a, b)
    by_parallel = jax.jit(lambda a, b: lax.associative_scan(_combine_steps, (a, b))[1])(a, b)
    assert float(jnp.max(jnp.abs(by_scan - by_parallel))) < 1e-5


@pytest.mark.parametrize("n", [16, 256, 4096])
def test_associative_scan_takes_two_log2_n_rounds_and_about_twice_the_work(n):
    """The section's counts: combine is called 2 log2(n) times while tracing (rounds), on between
    1.5n and 2n elements in all, against n - 1 steps of a scan; each round adds 12 jaxpr equations."""
    calls = []

    def counted(earlier, later):
        calls.append(earlier[0].size)
        return _combine_steps(earlier, later)

    jaxpr = jax.make_jaxpr(lambda a, b: lax.associative_scan(counted, (a, b)))(
        jnp.ones(n), jnp.ones(n)
    )
    assert len(calls) == 2 * (n.bit_length() - 1)
    assert 1.5 * n < sum(calls) < 2 * n
    assert len(jaxpr.jaxpr.eqns) == 12 * len(calls)


def _per_example(x):
    mixing = jnp.linspace(-1.0, 1.0, 32 * 32).reshape(32, 32) / 32
    return jnp.sum(jnp.tanh(jnp.outer(x, x) @ mixing))


def _stack_and_length(fn, xs):
    text = str(jax.make_jaxpr(fn)(xs))
    stacks = [int(lead or 1) for lead in re.findall(r"f32\[(?:(\d+),)?32,32\]", text)]
    lengths = re.findall(r"length=(\d+)", text)
    return max(stacks), int(lengths[0]) if lengths else 1


def test_lax_map_batch_size_is_a_scan_over_vmapped_batches_with_the_remainder_after():
    """The lax.map section: map holds one 32x32 product per step over 1024 steps, batch_size=8 holds
    8 over 128 steps, vmap 1024 at once without a loop; all agree. With 50 examples and
    batch_size=16: 48 rows reshaped to (3, 16, 32), a scan of length 3, the 2 left over batched
    after the loop, then a concatenate."""
    xs = jnp.linspace(-1.0, 1.0, 1024 * 32).reshape(1024, 32)
    reference = jax.vmap(_per_example)(xs)
    for fn, expected in [
        (lambda xs: lax.map(_per_example, xs), (1, 1024)),
        (lambda xs: lax.map(_per_example, xs, batch_size=8), (8, 128)),
        (jax.vmap(_per_example), (1024, 1)),
    ]:
        assert _stack_and_length(fn, xs) == expected
        assert jnp.allclose(jax.jit(fn)(xs), reference, rtol=1e-5, atol=1e-6)

    jaxpr = jax.make_jaxpr(lambda xs: lax.map(_per_example, xs, batch_size=16))(xs[:50])
    shapes = {(e.primitive.name, str(e.outvars[0].aval)) for e in jaxpr.jaxpr.eqns}
    assert {
        ("reshape", "float32[3,16,32]"),
        ("slice", "float32[2,32]"),
        ("concatenate", "float32[50]"),
    } <= shapes
    (scan,) = [e for e in jaxpr.jaxpr.eqns if e.primitive.name == "scan"]
    assert scan.params["length"] == 3
    assert any(
        e.primitive.name == "dot_general" and str(e.outvars[0].aval) == "float32[2,32,32]"
        for e in jaxpr.jaxpr.eqns
    )


def test_reverse_mode_goes_through_associative_scan_and_a_batched_map():
    """The summary table: grad of a cumulative product by associative_scan is the sum of the
    products each entry takes part in; grad through lax.map with batch_size is cos."""
    x = jnp.arange(1.0, 5.0)
    assert jnp.array_equal(
        jax.grad(lambda x: lax.associative_scan(jnp.multiply, x).sum())(x),
        jnp.array([33.0, 16.0, 10.0, 6.0]),
    )
    xs = jnp.arange(1.0, 6.0)
    assert jnp.allclose(
        jax.grad(lambda x: lax.map(jnp.sin, x, batch_size=2).sum())(xs), jnp.cos(xs)
    )
