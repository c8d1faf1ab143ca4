"""The errors shown in the vmap chapter, pinned: each test reproduces one error cell."""

import jax
import jax.numpy as jnp
import pytest
from jax import lax


def _predict(w, x):
    return jax.nn.sigmoid(x @ w)


def _logistic_loss(w, x, y):
    z = x @ w
    return jax.nn.softplus(z) - y * z


def test_shared_argument_mapped_by_default_has_inconsistent_sizes():
    """Without in_axes=None for the weights, vmap tries to map them too and the sizes disagree."""
    w, features = jnp.ones(3), jnp.ones((200, 3))
    with pytest.raises(
        ValueError, match="vmap got inconsistent sizes for array axes to be mapped"
    ) as info:
        jax.vmap(_predict)(w, features)
    assert type(info.value) is ValueError


def test_grad_of_vmapped_loss_needs_a_scalar():
    """grad(vmap(loss)) differentiates a vector-valued function, which grad refuses."""
    w, features, labels = jnp.ones(3), jnp.ones((200, 3)), jnp.ones(200)
    batched_loss = jax.vmap(_logistic_loss, in_axes=(None, 0, 0))
    with pytest.raises(
        TypeError,
        match=r"Gradient only defined for scalar-output functions. Output had shape: \(200,\)",
    ) as info:
        jax.grad(batched_loss)(w, features, labels)
    assert type(info.value) is TypeError


def test_arange_of_a_batched_length():
    """jnp.arange(n) has no single shape when n differs between the examples of the batch."""
    with pytest.raises(
        jax.errors.ConcretizationTypeError, match="It arose in the jnp.arange argument 'stop'"
    ) as info:
        jax.vmap(lambda n: jnp.arange(n).sum())(jnp.array([1, 2, 3]))
    assert type(info.value) is jax.errors.ConcretizationTypeError


def test_boolean_mask_under_vmap():
    """row[row > 0] keeps a value-dependent number of entries, which vmap cannot batch."""
    table = jnp.array([[1.0, -2.0, 3.0], [-1.0, 2.0, -3.0]])
    with pytest.raises(
        jax.errors.NonConcreteBooleanIndexError,
        match=r"Array boolean indices must be concrete; got bool\[3\]",
    ) as info:
        jax.vmap(lambda row: row[row > 0].sum())(table)
    assert type(info.value) is jax.errors.NonConcreteBooleanIndexError


def test_python_if_on_a_batched_value():
    """A Python `if` needs one truth value, but a batched comparison has one per example."""

    def leaky(x):
        if x > 0:
            return x
        return 0.1 * x

    with pytest.raises(
        jax.errors.TracerBoolConversionError,
        match=r"Attempted boolean conversion of traced array with shape bool\[\]",
    ) as info:
        jax.vmap(leaky)(jnp.array([-2.0, 3.0]))
    assert type(info.value) is jax.errors.TracerBoolConversionError


def _powers(x, degree):
    return jnp.stack([x**k for k in range(degree)])


def test_vmap_over_a_static_argument():
    """Mapping a jitted function's static argument hands jit a batched tracer, which it cannot hash."""
    powers_jit = jax.jit(_powers, static_argnames="degree")
    with pytest.raises(ValueError, match="Non-hashable static arguments are not supported") as info:
        jax.vmap(powers_jit)(jnp.arange(3.0), jnp.array([2, 3, 4]))
    assert type(info.value) is ValueError
    assert "BatchTracer" in str(info.value)
    assert jax.vmap(powers_jit, in_axes=(0, None))(jnp.arange(3.0), 3).shape == (3, 3)


def test_the_fixes_shown_in_the_chapter_run():
    """The rewrites the chapter gives for each trap run under vmap and give NumPy's answers."""
    max_length = 8
    candidates = jnp.arange(max_length)
    sums = jax.vmap(lambda n: jnp.where(candidates < n, candidates, 0).sum())(jnp.array([1, 2, 3]))
    assert sums.tolist() == [0, 1, 3]
    table = jnp.array([[1.0, -2.0, 3.0], [-1.0, 2.0, -3.0]])
    assert jax.vmap(lambda row: jnp.where(row > 0, row, 0.0).sum())(table).tolist() == [4.0, 2.0]
    leaky = jax.vmap(lambda x: jnp.where(x > 0, x, 0.1 * x))(jnp.array([-2.0, 3.0]))
    assert jnp.allclose(leaky, jnp.array([-0.2, 3.0]))
    selected = jax.vmap(lambda x: lax.cond(x > 0, jnp.sin, jnp.cos, x))(jnp.array([-1.0, 1.0]))
    assert jnp.allclose(selected, jnp.array([jnp.cos(-1.0), jnp.sin(1.0)]))


def test_jit_of_vmap_compiles_per_batch_shape_with_a_program_of_one_size():
    """The benchmark discussion: jit(vmap(f)) traces again for a new batch size, like every jitted
    function, but its jaxpr keeps one size, while an unrolled Python loop's grows with the batch."""
    traces = []

    def one(matrix):
        traces.append(None)
        return jnp.sum(matrix @ matrix)

    batched = jax.jit(jax.vmap(one))
    for k in (2, 4, 4):
        batched(jnp.ones((k, 3, 3)))
    assert len(traces) == 2

    def python_loop(matrices):
        return jnp.stack([one(m) for m in matrices])

    sizes = {k: len(jax.make_jaxpr(jax.vmap(one))(jnp.ones((k, 3, 3))).eqns) for k in (2, 8)}
    unrolled = {k: len(jax.make_jaxpr(python_loop)(jnp.ones((k, 3, 3))).eqns) for k in (2, 8)}
    assert sizes[2] == sizes[8] and unrolled[8] > unrolled[2]


def test_rank_promotion_raise_refuses_the_forgotten_keepdims():
    """A (3, 3) batch divided by its (3,) norms broadcasts silently by default, and raises under
    jax.numpy_rank_promotion("raise"); the same-rank keepdims version and scalars pass."""
    three = jax.random.normal(jax.random.key(0), (3, 3))
    norms = jnp.linalg.norm(three, axis=-1)
    assert (three / norms).shape == (3, 3)  # the default, "allow": no error
    with jax.numpy_rank_promotion("raise"):
        with pytest.raises(
            ValueError,
            match=r"Operands could not be broadcast together for true_divide on shapes \(3, 3\) "
            r"\(3,\) and with the config option jax_numpy_rank_promotion='raise'",
        ) as info:
            three / norms
        assert type(info.value) is ValueError
        assert (three / norms[:, None]).shape == (3, 3)
        assert (2.0 * three).shape == (3, 3)
        assert jax.vmap(lambda v: v / jnp.linalg.norm(v))(three).shape == (3, 3)


def test_rank_promotion_setting_retraces_a_jitted_function_and_misses_where():
    """The chapter's box: a function jitted under "allow" is traced again under "raise" and
    refused; jnp.where still broadcasts (3, 3) against (3,) under "raise"."""
    three = jnp.ones((3, 3))
    traces = []

    def divide_by_norms(a):
        traces.append(1)
        return a / jnp.linalg.norm(a, axis=-1)

    compiled = jax.jit(divide_by_norms)
    compiled(three)
    with jax.numpy_rank_promotion("raise"):
        with pytest.raises(ValueError, match="jax_numpy_rank_promotion='raise'"):
            compiled(three)
        assert jnp.where(three > 0, three, jnp.zeros(3)).shape == (3, 3)
    assert len(traces) == 2
