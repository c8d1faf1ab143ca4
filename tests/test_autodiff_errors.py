"""The errors shown in the autodiff chapter, pinned, and the claims its prose makes about them."""

from functools import partial

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.test_util import check_grads

# More than a few seconds: left out of the fast tier (scripts/test.sh --fast).
pytestmark = pytest.mark.slow

TOY_DATA = jnp.array([0.5, -1.0, 2.0, 0.0])


def value_and_slope(data, w):
    """The chapter's forward function: log sum exp(data * w) and its derivative in w."""
    scores = data * w
    return jax.nn.logsumexp(scores), jnp.sum(jax.nn.softmax(scores) * data)


@jax.custom_vjp
def log_partition(data, w):
    return value_and_slope(data, w)[0]


log_partition.defvjp(value_and_slope, lambda slope, ct: (None, ct * slope))


def reference_log_partition(data, w):
    return jax.nn.logsumexp(data * w)


def test_grad_of_a_non_scalar_output():
    """Cell 'jax.grad(jnp.sin)(jnp.arange(3.0))'."""
    with pytest.raises(
        TypeError,
        match=r"Gradient only defined for scalar-output functions. Output had shape: \(3,\)",
    ):
        jax.grad(jnp.sin)(jnp.arange(3.0))


def test_grad_with_respect_to_an_integer():
    """Cell 'jax.grad(cubic)(3)'."""
    with pytest.raises(
        TypeError, match="grad requires real- or complex-valued inputs .* but got int32"
    ):
        jax.grad(lambda x: x**3 - 2.0 * x)(3)


def test_custom_vjp_backward_without_the_data_cotangent():
    """Cell 'jax.jit(jax.grad(log_partition_missing_cotangent, argnums=1))': one cotangent per
    argument."""

    @jax.custom_vjp
    def log_partition_missing_cotangent(data, w):
        return value_and_slope(data, w)[0]

    log_partition_missing_cotangent.defvjp(value_and_slope, lambda slope, ct: (ct * slope,))
    with pytest.raises(
        TypeError, match="Custom VJP bwd rule must produce an output with the same container"
    ):
        jax.jit(jax.grad(log_partition_missing_cotangent, argnums=1))(TOY_DATA, 0.7)


def test_nondiff_argnums_with_an_array_fails_under_jit_only():
    """Cells of `log_partition_nondiff_data`: eager works, jit raises UnexpectedTracerError."""

    @partial(jax.custom_vjp, nondiff_argnums=(0,))
    def log_partition_nondiff_data(data, w):
        return value_and_slope(data, w)[0]

    log_partition_nondiff_data.defvjp(value_and_slope, lambda data, slope, ct: (ct * slope,))
    eager = jax.grad(log_partition_nondiff_data, argnums=1)(TOY_DATA, 0.7)
    expected = jax.grad(reference_log_partition, argnums=1)(TOY_DATA, 0.7)
    assert float(eager) == pytest.approx(float(expected), rel=1e-6)
    with pytest.raises(
        jax.errors.UnexpectedTracerError,
        match="Tracers cannot be passed as non-differentiable arguments",
    ):
        jax.jit(jax.grad(log_partition_nondiff_data, argnums=1))(TOY_DATA, 0.7)


def test_custom_vjp_has_no_forward_mode():
    """Cell 'jax.jvp(lambda w: log_partition(toy_data, w), ...)'."""
    with pytest.raises(
        TypeError, match=r"can't apply forward-mode autodiff \(jvp\) to a custom_vjp function"
    ):
        jax.jvp(lambda w: log_partition(TOY_DATA, w), (0.7,), (1.0,))


def test_check_grads_catches_a_wrong_backward_rule():
    """Cell 'check_grads(softplus_wrong_rule, ...)': sigmoid(-x) instead of sigmoid(x)."""

    @jax.custom_vjp
    def softplus_wrong_rule(x):
        return jnp.logaddexp(x, 0.0)

    softplus_wrong_rule.defvjp(
        lambda x: (softplus_wrong_rule(x), x), lambda x, ct: (ct * jax.nn.sigmoid(-x),)
    )
    with pytest.raises(AssertionError, match="VJP cotangent projection"):
        check_grads(softplus_wrong_rule, (1.5,), order=1, modes=("rev",))


def test_grad_of_a_complex_output():
    """Cell 'jax.grad(lambda z: z**2)(z0)'."""
    with pytest.raises(
        TypeError,
        match="grad requires real-valued outputs .* For holomorphic differentiation, pass holomorphic=True",
    ):
        jax.grad(lambda z: z**2)(1.0 + 2.0j)


def test_where_gradient_is_nan_and_double_where_fixes_it():
    """Section sec-autodiff-where-nan: NaN at 0 with one where, 0 with the double where."""
    assert np.isnan(jax.grad(lambda x: jnp.where(x > 0, jnp.sqrt(x), 0.0))(0.0))

    def safe(x):
        positive = x > 0
        return jnp.where(positive, jnp.sqrt(jnp.where(positive, x, 1.0)), 0.0)

    assert jax.grad(safe)(0.0) == 0.0
    assert jax.grad(safe)(4.0) == pytest.approx(0.25)


def test_softplus_where_has_a_nan_gradient_that_custom_jvp_removes():
    """Section sec-autodiff-custom-jvp: the where form's gradient at 100 is NaN; the rule's is 1."""

    def softplus_where(x):
        return jnp.where(x > 30.0, x, jnp.log1p(jnp.exp(x)))

    assert float(softplus_where(100.0)) == 100.0
    assert np.isnan(jax.grad(softplus_where)(100.0))

    softplus = jax.custom_jvp(softplus_where)
    softplus.defjvp(
        lambda primals, tangents: (softplus(primals[0]), jax.nn.sigmoid(primals[0]) * tangents[0])
    )
    assert float(jax.jit(jax.grad(softplus))(100.0)) == 1.0


def test_complex_gradient_is_the_conjugate_of_pytorchs():
    """Section sec-autodiff-complex: JAX gives d/dx - i d/dy, PyTorch d/dx + i d/dy."""
    torch = pytest.importorskip("torch")
    z = torch.tensor(1.0 + 2.0j, dtype=torch.complex64, requires_grad=True)
    (z.abs() ** 2).backward()
    assert complex(jax.grad(lambda z: jnp.abs(z) ** 2)(1.0 + 2.0j)) == pytest.approx(2.0 - 4.0j)
    assert complex(z.grad) == pytest.approx(2.0 + 4.0j)


# Claims of the chapter's prose, pinned (issue 23) ------------------------------------------------


def test_vjp_backward_returns_a_tuple_one_cotangent_per_argument():
    """Section sec-autodiff-jaxpr: grad(f)(x) is vjp(f, x)[1](1.0)[0]."""
    f = lambda x: jnp.sin(x) * x
    cotangents = jax.vjp(f, 1.0)[1](1.0)
    assert isinstance(cotangents, tuple) and len(cotangents) == 1
    assert float(cotangents[0]) == pytest.approx(float(jax.grad(f)(1.0)))
    assert len(jax.vjp(lambda x, y: x * jnp.sin(y), 2.0, 1.0)[1](1.0)) == 2


def test_debug_nans_on_the_gradient_stops_at_mul_and_debug_infs_at_div():
    """Section sec-autodiff-where-nan: the NaN appears in the backward mul, the inf in the div."""
    sqrt_or_zero = lambda x: jnp.where(x > 0, jnp.sqrt(x), 0.0)
    with pytest.raises(FloatingPointError, match=r"invalid value \(nan\) encountered in mul"):
        with jax.debug_nans(True):
            jax.grad(sqrt_or_zero)(0.0)
    with pytest.raises(FloatingPointError, match=r"invalid value \(inf\) encountered in div"):
        with jax.debug_infs(True):
            jax.grad(sqrt_or_zero)(0.0)


def test_double_where_gives_the_selected_branchs_derivative_a_taylor_branch_the_true_one():
    """Section sec-autodiff-where-nan: log1p(x)/x has derivative -1/2 at 0."""

    def log1p_ratio(x, small_branch):
        small = jnp.abs(x) < 1e-3
        safe = jnp.where(small, 1.0, x)
        return jnp.where(small, small_branch(x), jnp.log1p(safe) / safe)

    assert float(jax.grad(log1p_ratio)(0.0, jnp.ones_like)) == 0.0
    assert float(jax.grad(log1p_ratio)(0.0, lambda x: 1.0 - x / 2.0 + x**2 / 3.0)) == -0.5


def test_custom_jvp_accepts_a_traced_nondiff_argument_under_jit():
    """Section sec-autodiff-custom-vjp: the traced nondiff_argnums refusal is custom_vjp's only."""

    @partial(jax.custom_jvp, nondiff_argnums=(0,))
    def scaled_sine(scale, x):
        return scale * jnp.sin(x)

    @scaled_sine.defjvp
    def _(scale, primals, tangents):
        return scaled_sine(scale, primals[0]), scale * jnp.cos(primals[0]) * tangents[0]

    assert float(jax.jit(jax.grad(scaled_sine, argnums=1))(jnp.array(2.0), 0.0)) == 2.0


def test_the_custom_vjp_agrees_with_autodiff_in_w_and_gives_the_data_silent_zeros():
    """Section sec-autodiff-custom-vjp: d/dw as autodiff; d/d data zero through the rule only."""
    ours = jax.jit(jax.grad(log_partition, argnums=(0, 1)))(TOY_DATA, 0.7)
    theirs = jax.jit(jax.grad(reference_log_partition, argnums=(0, 1)))(TOY_DATA, 0.7)
    assert float(ours[1]) == pytest.approx(float(theirs[1]), rel=1e-6)
    assert float(jnp.max(jnp.abs(ours[0]))) == 0.0
    assert float(jnp.max(jnp.abs(theirs[0]))) > 0.0


def _softplus_slightly_off():
    @jax.custom_vjp
    def softplus_slightly_off(x):
        return jnp.logaddexp(x, 0.0)

    softplus_slightly_off.defvjp(
        lambda x: (softplus_slightly_off(x), x), lambda x, ct: (ct * jax.nn.sigmoid(x) * 1.001,)
    )
    return softplus_slightly_off


def test_check_grads_float32_tolerance_is_named_and_passes_a_rule_a_tenth_of_a_percent_off():
    """The checking-gradients section: float32's default tolerances are rtol = atol = 0.002 (the
    wrong rule's message names them), loose enough for a derivative 0.1% off."""
    with pytest.raises(AssertionError, match=r"rtol=0.002, atol=0.002"):
        wrong = jax.custom_vjp(lambda x: jnp.logaddexp(x, 0.0))
        wrong.defvjp(lambda x: (jnp.logaddexp(x, 0.0), x), lambda x, ct: (ct * jax.nn.sigmoid(-x),))
        check_grads(wrong, (1.5,), order=1, modes=("rev",))
    check_grads(_softplus_slightly_off(), (1.5,), order=1, modes=("rev",))


def test_check_grads_in_float64_catches_the_rule_a_tenth_of_a_percent_off():
    """The section's error cell: in float64 the tolerances are 1e-05 and the 0.1% error fails."""
    with jax.enable_x64(True), pytest.raises(AssertionError, match=r"rtol=1e-05, atol=1e-05"):
        check_grads(_softplus_slightly_off(), (jnp.float64(1.5),), order=1, modes=("rev",))


def test_the_toy_rule_passes_check_grads_in_float64():
    """Section sec-autodiff-check-grads: the log_partition rule agrees with finite differences."""
    with jax.enable_x64(True):
        data64 = jnp.asarray(TOY_DATA, jnp.float64)
        for w in (-1.5, 0.0, 0.7, 3.0):
            check_grads(
                lambda w: log_partition(data64, w), (jnp.float64(w),), order=1, modes=("rev",)
            )


def test_optax_does_not_conjugate_complex_gradients():
    """Section sec-autodiff-complex: five steps of optax.sgd(0.1) on |z|^2 from 1 + 2i climb."""
    optax = pytest.importorskip("optax")

    def five_steps(conjugate):
        optimiser, z = optax.sgd(0.1), jnp.asarray(1.0 + 2.0j, jnp.complex64)
        state = optimiser.init(z)
        for _ in range(5):
            gradient = jax.grad(lambda z: jnp.abs(z) ** 2)(z)
            updates, state = optimiser.update(jnp.conj(gradient) if conjugate else gradient, state)
            z = optax.apply_updates(z, updates)
        return float(jnp.abs(z) ** 2)

    assert five_steps(conjugate=False) == pytest.approx(24.874, rel=1e-3)  # from 5.0: it climbs
    assert five_steps(conjugate=True) == pytest.approx(
        5.0 * 0.64**5, rel=1e-4
    )  # |z|^2 shrinks by 0.64 a step


def test_gradients_at_kinks():
    """Section sec-autodiff-kinks: equal functions, different gradients at 0; ties are split."""
    assert float(jax.grad(lambda x: jnp.maximum(x, 0.0))(0.0)) == 0.5
    assert float(jax.grad(jax.nn.relu)(0.0)) == 0.0
    assert float(jax.grad(lambda x: jnp.where(x > 0, x, 0.0))(0.0)) == 0.0
    assert float(jax.grad(jnp.abs)(0.0)) == 1.0
    assert float(jax.grad(lambda x: jnp.clip(x, 0.0, 1.0))(0.0)) == 0.5
    assert float(jax.grad(lambda x: jnp.clip(x, 0.0, 1.0))(1.0)) == 0.5
    tied = jnp.array([1.0, 1.0, 0.0])
    np.testing.assert_array_equal(jax.grad(jnp.max)(tied), [0.5, 0.5, 0.0])
    np.testing.assert_array_equal(jax.grad(lambda x: jnp.sort(x)[-1])(tied), [0.0, 1.0, 0.0])


def test_linearize_keeps_only_the_linear_part_and_vmaps():
    """Section sec-autodiff-linearize: sin's linear map is one mul; vmap gives J V and U J."""
    _, sin_jvp = jax.linearize(jnp.sin, 1.0)
    assert [e.primitive.name for e in jax.make_jaxpr(sin_jvp)(1.0).eqns] == ["mul"]
    f = lambda x: jnp.tanh(jnp.arange(15.0).reshape(3, 5) @ jnp.sin(x))
    x = jnp.linspace(0.0, 1.0, 5)
    jacobian = jax.jacrev(f)(x)
    v, u = jnp.ones((4, 5)), jnp.ones((2, 3))
    np.testing.assert_allclose(jax.vmap(jax.linearize(f, x)[1])(v), v @ jacobian.T, atol=1e-5)
    np.testing.assert_allclose(
        jax.vmap(lambda c: jax.vjp(f, x)[1](c)[0])(u), u @ jacobian, atol=1e-5
    )
    assert float(jax.linear_transpose(sin_jvp, 1.0)(1.0)[0]) == pytest.approx(float(jnp.cos(1.0)))


def test_checkpoint_keeps_only_the_inputs_as_residuals(capsys):
    """Section sec-autodiff-memory: print_saved_residuals lists 4 residuals, 1 under checkpoint."""
    from jax.ad_checkpoint import print_saved_residuals

    f = lambda x: jnp.sum(jnp.sin(jnp.sin(x)) * x)
    print_saved_residuals(f, jnp.ones(3))
    plain = capsys.readouterr().out.strip().splitlines()
    print_saved_residuals(jax.checkpoint(f), jnp.ones(3))
    remat = capsys.readouterr().out.strip().splitlines()
    assert len(plain) == 4 and len(remat) == 1 and "from the argument" in remat[0]


def test_custom_root_differentiates_a_while_loop_solver_implicitly():
    """Section sec-autodiff-implicit: d sqrt(a) / da = 1 / (2 sqrt a), jitted and vmapped."""

    def newton(f, x0):
        def step(carry):
            x, _ = carry
            new = x - f(x) / jax.grad(f)(x)
            return new, new - x

        return jax.lax.while_loop(lambda c: jnp.abs(c[1]) > 1e-6, step, (x0, jnp.inf))[0]

    implicit_sqrt = lambda a: jax.lax.custom_root(
        lambda x: x**2 - a, a, newton, lambda g, y: y / g(1.0)
    )
    a = jnp.array([2.0, 9.0, 0.25])
    np.testing.assert_allclose(
        jax.jit(jax.vmap(jax.grad(implicit_sqrt)))(a), 0.5 / jnp.sqrt(a), rtol=1e-6
    )
    with pytest.raises(
        ValueError, match="Reverse-mode differentiation does not work for lax.while_loop"
    ):
        jax.grad(lambda a: newton(lambda x: x**2 - a, a))(2.0)


def test_allow_int_gives_float0_gradients():
    """Section sec-autodiff-integers."""
    grads = jax.grad(lambda p: p["weight"] * p["count"], allow_int=True)(
        {"weight": 2.0, "count": 3}
    )
    assert grads["count"].dtype == jax.dtypes.float0 and grads["count"].shape == ()
    assert float(grads["weight"]) == 3.0
    assert jax.vjp(lambda w, n: w * n, 2.0, 3)[1](1.0)[1].dtype == jax.dtypes.float0
