"""The errors shown in the chapter 'Tracing, abstract values and static arguments', one test per error cell.

Each test repeats the chapter's minimal code and pins the exception class and a stable fragment of
its message (checked on jax 0.12.0.1). The last tests pin behaviours the chapter states without an
error.
"""

import collections
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxcourse.tracecount import count_traces


def clip_negative(x):
    if x > 0:
        return x
    return 0.0 * x


def repeat_sin(x, n):
    for _ in range(n):
        x = jnp.sin(x)
    return x


def test_python_if_on_tracer_raises_bool_conversion_error():
    """A Python `if` on a traced scalar cannot choose a branch."""
    with pytest.raises(
        jax.errors.TracerBoolConversionError, match="Attempted boolean conversion of traced array"
    ) as info:
        jax.jit(clip_negative)(3.0)
    assert type(info.value) is jax.errors.TracerBoolConversionError
    assert isinstance(info.value, jax.errors.ConcretizationTypeError)


def test_range_of_traced_int_raises_integer_conversion_error():
    """range(n) calls n.__index__(), which a tracer refuses."""
    with pytest.raises(
        jax.errors.TracerIntegerConversionError,
        match=r"The __index__\(\) method was called on traced array",
    ) as info:
        jax.jit(repeat_sin)(1.0, 3)
    assert type(info.value) is jax.errors.TracerIntegerConversionError


def test_traced_boolean_mask_raises_non_concrete_boolean_index_error():
    """x[x > 0] has a data-dependent shape; it is an IndexError subclass."""
    x = jnp.array([-1.0, 2.0, -3.0, 4.0, 5.0])
    with pytest.raises(
        jax.errors.NonConcreteBooleanIndexError, match="Array boolean indices must be concrete"
    ) as info:
        jax.jit(lambda x: x[x > 0].sum())(x)
    assert type(info.value) is jax.errors.NonConcreteBooleanIndexError
    assert isinstance(info.value, IndexError)


def test_unique_without_size_raises_concretization_error():
    """jnp.unique needs size= under jit; the error is the general ConcretizationTypeError."""
    with pytest.raises(
        jax.errors.ConcretizationTypeError,
        match=r"you can specify a concrete value for the size argument",
    ) as info:
        jax.jit(jnp.unique)(jnp.array([3, 1, 3, 2]))
    assert type(info.value) is jax.errors.ConcretizationTypeError


@pytest.mark.parametrize(
    ("fn", "error", "message"),
    [
        (
            lambda x, n: x[:n],
            IndexError,
            r"Array slice indices must have static start/stop/step(.|\n)*x\[jax\.ds\(start, size\)\]",
        ),
        (
            lambda x, n: float(x[0]),
            jax.errors.ConcretizationTypeError,
            "Abstract tracer value encountered where concrete value is expected",
        ),
        (
            lambda x, n: x[0].item(),
            jax.errors.ConcretizationTypeError,
            "Abstract tracer value encountered where concrete value is expected",
        ),
        (
            lambda x, n: np.sin(x),
            jax.errors.TracerArrayConversionError,
            r"The numpy\.ndarray conversion method __array__\(\) was called on traced array",
        ),
    ],
    ids=["slice", "float", "item", "np.sin"],
)
def test_relatives_in_the_errors_table(fn, error, message):
    """The table's relatives: a traced slice bound is a plain IndexError; the others are jax.errors classes."""
    with pytest.raises(error, match=message) as info:
        jax.jit(fn)(jnp.arange(3.0), 2)
    assert type(info.value) is error


def test_lax_select_does_not_broadcast():
    """lax.select needs cases of equal shapes, unlike jnp.where."""
    predicate = jnp.array([True, False, True])
    with pytest.raises(TypeError, match="select cases must have the same shapes") as info:
        jax.lax.select(predicate, jnp.ones(3), 0.0)
    assert type(info.value) is TypeError


def test_lax_select_broadcasts_a_scalar_predicate_only():
    """The chapter's exception: a scalar predicate picks a whole case; a predicate of another
    non-scalar shape is rejected."""
    np.testing.assert_array_equal(
        jax.lax.select(jnp.array(False), jnp.ones(3), jnp.zeros(3)), np.zeros(3)
    )
    with pytest.raises(
        TypeError, match="select `which` must be scalar or have the same shape as cases"
    ):
        jax.lax.select(jnp.array([True, False]), jnp.ones(3), jnp.zeros(3))


def test_python_scalar_arguments_are_traced_weakly_typed():
    """'Every non-static argument is traced, Python numbers too': scale=2.0 arrives as ~float32[]."""
    seen = {}

    @jax.jit
    def scaled_sum(x, scale):
        seen["scale"] = scale
        return scale * jnp.sum(x)

    scaled_sum(jnp.arange(3.0), 2.0)
    assert isinstance(seen["scale"], jax.core.Tracer)
    assert str(jax.typeof(seen["scale"])) == "~float32[]"


def ones_then_zeros(n, total):
    return jnp.concatenate([jnp.ones(n), jnp.zeros(total - n)])


def test_traced_shape_raises_plain_type_error():
    """A shape from a traced argument is a plain TypeError, not a jax.errors class."""
    with pytest.raises(
        TypeError, match="Shapes must be 1D sequences of concrete values of integer type"
    ) as info:
        jax.jit(ones_then_zeros)(2, 5)
    assert type(info.value) is TypeError
    fixed = jax.jit(ones_then_zeros, static_argnames=("n", "total"))(2, 5)
    np.testing.assert_array_equal(fixed, [1.0, 1.0, 0.0, 0.0, 0.0])


@partial(jax.jit, static_argnames="shape")
def filled(shape, value):
    return jnp.full(shape, value)


def test_unhashable_static_argument_raises_value_error():
    """Static arguments are cache keys: a list is rejected, a tuple works."""
    with pytest.raises(ValueError, match="Non-hashable static arguments are not supported") as info:
        filled([2, 2], 1.0)
    assert type(info.value) is ValueError
    assert "unhashable type: 'list'" in str(info.value)
    assert filled((2, 2), 1.0).shape == (2, 2)


class Polynomial:
    def __init__(self, coefficients):
        self.coefficients = coefficients

    @jax.jit
    def __call__(self, x):
        return jnp.polyval(self.coefficients, x)


def test_jit_on_method_of_plain_class_raises_type_error():
    """`self` of a class that is not a pytree cannot become an abstract array."""
    with pytest.raises(
        TypeError,
        match=r"as an abstract array\. The problematic value is of type .*Polynomial.* at path self",
    ) as info:
        Polynomial(jnp.array([1.0, 0.0, -1.0]))(2.0)
    assert type(info.value) is TypeError


# Behaviours the chapter states without an error -----------------------------------------------


def test_grad_without_jit_keeps_values_concrete():
    """A Python `if` on the input works under grad alone."""

    def piecewise(x):
        if x > 0:
            return x**2
        return -x

    assert jax.grad(piecewise)(3.0) == 6.0
    assert jax.grad(piecewise)(-3.0) == -1.0


def test_vmap_alone_abstracts_values_so_a_python_if_fails():
    """The concrete-versus-traced section: unlike grad, vmap without jit gives a tracer, and a
    Python if on it raises TracerBoolConversionError."""

    def piecewise(x):
        if x > 0:
            return x**2
        return -x

    with pytest.raises(
        jax.errors.TracerBoolConversionError, match="Attempted boolean conversion of traced array"
    ):
        jax.vmap(piecewise)(jnp.array([3.0, -3.0]))


def test_retraces_for_new_static_value_shape_and_keyword_call():
    """The cache key holds static values, shapes, and whether an argument came by keyword."""
    counted = count_traces(repeat_sin)
    fast = jax.jit(counted, static_argnames="n")
    expected = [1, 1, 2, 2, 3, 4]
    calls = [
        lambda: fast(jnp.ones(3), 3),
        lambda: fast(jnp.zeros(3), 3),
        lambda: fast(jnp.ones(3), 4),
        lambda: fast(jnp.ones(3), 3),
        lambda: fast(jnp.ones(5), 3),
        lambda: fast(jnp.ones(3), n=3),
    ]
    seen = []
    for call in calls:
        call()
        seen.append(counted.traces)
    assert seen == expected


def test_static_values_equal_but_of_another_type_are_new_cache_entries():
    """The hashable section: the static key compares type as well as ==: 1, 1.0, True, np.int32(1)
    and np.int64(1) are equal and hash alike (one dictionary entry) but trace five times; 1 again
    is served from the cache."""
    scale_by = count_traces(lambda x, factor: x * factor)
    scale_by_static = jax.jit(scale_by, static_argnames="factor")
    ones = [1, 1.0, True, np.int32(1), np.int64(1), 1]
    new_trace = []
    for factor in ones:
        before = scale_by.traces
        scale_by_static(jnp.ones(2), factor=factor)
        new_trace.append(scale_by.traces > before)
    assert new_trace == [True, True, True, True, True, False]
    assert len(dict.fromkeys(ones)) == 1


def test_static_self_stops_counting_and_goes_stale():
    """A static `self` runs its Python body once, recompiles per instance and keeps old constants."""

    class CallCounter:
        def __init__(self):
            self.calls = 0

        @partial(jax.jit, static_argnums=0)
        def step(self, x):
            self.calls += 1
            return x + 1.0

    counter = CallCounter()
    for _ in range(3):
        counter.step(0.0)
    assert counter.calls == 1

    traces = collections.Counter()

    class Scaler:
        def __init__(self, factor):
            self.factor = factor

        @partial(jax.jit, static_argnums=0)
        def __call__(self, x):
            traces["Scaler"] += 1
            return x * self.factor

    double, also_double = Scaler(2.0), Scaler(2.0)
    double(1.0), double(2.0), also_double(1.0)
    assert traces["Scaler"] == 2
    double.factor = 10.0
    assert double(1.0) == 2.0  # stale


def test_where_gradient_trap_and_double_where_fix():
    """The unselected log branch makes the gradient nan at 0; a second where fixes it."""
    unsafe = lambda x: jnp.where(x > 0, jnp.log(x), 0.0)  # noqa: E731

    def safe(x):
        positive = x > 0
        return jnp.where(positive, jnp.log(jnp.where(positive, x, 1.0)), 0.0)

    assert np.isnan(jax.grad(unsafe)(0.0))
    assert jax.grad(safe)(0.0) == 0.0
    assert jax.grad(safe)(2.0) == 0.5


def test_unique_default_padding_repeats_the_smallest_value():
    """Without fill_value, jnp.unique pads with the smallest value."""
    labels = jnp.array([3, 1, 3, 3])
    np.testing.assert_array_equal(jnp.unique(labels, size=4), [1, 3, 1, 1])
    np.testing.assert_array_equal(jnp.unique(labels, size=4, fill_value=-1), [1, 3, -1, -1])


def test_only_some_computations_on_a_static_n_are_folded():
    """The folding section's second cell: sum(arange(n)) folds to a constant, but close relatives
    on the same static n stay run-time work (a fusion in the entry computation)."""
    from jaxcourse.hlo import entry_opcodes

    def sum_below(n):
        return jnp.sum(jnp.arange(n, dtype=jnp.float32))

    assert "fusion" not in entry_opcodes(partial(sum_below, 1_000))
    for variant in (
        lambda n: jnp.sum(jnp.arange(n, dtype=jnp.float32) ** 2),
        lambda n: jnp.sum(jnp.sin(jnp.arange(n, dtype=jnp.float32))),
        lambda n: jnp.arange(n, dtype=jnp.float32) * 2.0,
    ):
        assert "fusion" in entry_opcodes(partial(variant, 1_000))


def test_int_of_a_computation_on_static_values_fails_without_compile_time_eval():
    """The compile-time-eval section's first error cell: under jit even jnp.arange(static) is
    staged, so int() of a result computed from it is a ConcretizationTypeError."""

    @partial(jax.jit, static_argnames="degree")
    def count_large_terms(x, degree):
        weights = jnp.arange(1.0, degree + 1.0)
        return x * int(jnp.sum(weights > 2.0))

    with pytest.raises(
        jax.errors.ConcretizationTypeError,
        match="Abstract tracer value encountered where concrete value is expected",
    ):
        count_large_terms(1.0, degree=5)


def test_compile_time_eval_makes_static_computations_concrete_and_constants():
    """Inside ensure_compile_time_eval the result is a concrete Array, int() works, and the jaxpr
    multiplies by the constant 3.0; a table made there is a 1000-entry jaxpr constant, made
    outside it is computed by the program (no constant)."""

    @partial(jax.jit, static_argnames="degree")
    def count_large_terms_now(x, degree):
        with jax.ensure_compile_time_eval():
            weights = jnp.arange(1.0, degree + 1.0)
            assert isinstance(weights, jax.Array) and not isinstance(weights, jax.core.Tracer)
            n_large = int(jnp.sum(weights > 2.0))
        return x * n_large

    assert count_large_terms_now(1.0, degree=5) == 3.0
    assert "mul a 3.0" in str(jax.make_jaxpr(count_large_terms_now, static_argnums=1)(1.0, 5))

    def weighted_sum(x, precompute):
        if precompute:
            with jax.ensure_compile_time_eval():
                table = jnp.linspace(0.0, 1.0, 1000)
        else:
            table = jnp.linspace(0.0, 1.0, 1000)
        return jnp.sum(x * table)

    consts = {
        p: jax.make_jaxpr(partial(weighted_sum, precompute=p))(1.0).consts for p in (False, True)
    }
    assert consts[False] == [] and [c.shape for c in consts[True]] == [(1000,)]
    sizes = {
        p: len(jax.jit(partial(weighted_sum, precompute=p)).lower(1.0).as_text())
        for p in (False, True)
    }
    assert sizes[True] > sizes[False] + 5_000


def test_compile_time_eval_does_not_make_a_traced_argument_concrete():
    """The section's second error cell: an if on an argument inside the block still fails."""

    @jax.jit
    def sign_flip(x):
        with jax.ensure_compile_time_eval():
            if 2 * x > 0:
                return x
        return -x

    with pytest.raises(
        jax.errors.TracerBoolConversionError, match="Attempted boolean conversion of traced array"
    ):
        sign_flip(1.0)


def test_a_pytree_model_whose_step_returns_a_new_model_traces_once():
    """The section's line fit: weights as a leaf, step returns a new instance, one trace."""
    import dataclasses

    traces = collections.Counter()

    @jax.tree_util.register_dataclass
    @dataclasses.dataclass(frozen=True)
    class LineFit:
        weights: jax.Array

        @jax.jit
        def step(self, x, y):
            traces["step"] += 1
            design = jnp.stack([x, jnp.ones_like(x)], axis=1)
            gradient = 2.0 * design.T @ (design @ self.weights - y) / y.shape[0]
            return LineFit(self.weights - 0.3 * gradient)

    x = jnp.linspace(0.0, 1.0, 20)
    fit = LineFit(jnp.zeros(2))
    for _ in range(100):
        fit = fit.step(x, 3.0 * x - 1.0)
    assert traces["step"] == 1
    np.testing.assert_allclose(fit.weights, [3.0, -1.0], atol=0.1)


def test_a_mask_by_position_keeps_a_fixed_length_for_a_traced_n():
    """The range section's mask: positions compared with a traced n, one trace for every n."""
    counted = count_traces(lambda x, n: jnp.where(jnp.arange(x.shape[0]) >= n, x, 0.0))
    zero_first = jax.jit(counted)
    np.testing.assert_array_equal(zero_first(jnp.arange(1.0, 6.0), 2), [0, 0, 3, 4, 5])
    np.testing.assert_array_equal(zero_first(jnp.arange(1.0, 6.0), 4), [0, 0, 0, 0, 5])
    assert counted.traces == 1
