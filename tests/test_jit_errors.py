"""The errors shown in the jit chapter, pinned. Its jit-versus-eager checks are in test_jit_vs_eager.py."""

from functools import partial

import jax
import jax.numpy as jnp
import numpy as np
import pytest


def test_unhashable_static_argument_is_rejected():
    """Cell 'power(jnp.ones(3), k=[2])': a static argument must be hashable (a list is not)."""

    @partial(jax.jit, static_argnames="k")
    def power(x, k):
        return x**k

    with pytest.raises(ValueError, match="Non-hashable static arguments are not supported"):
        power(jnp.ones(3), k=[2])


def test_compiled_executable_rejects_other_shapes():
    """Cell 'compiled(jnp.ones(10))': an AOT-compiled executable never recompiles."""

    def chain(x):
        return jnp.tanh(x) * 2.0 + jnp.sin(x) ** 2 - jnp.exp(-x) / (1.0 + x * x)

    compiled = jax.jit(chain).lower(jax.ShapeDtypeStruct((1_000,), jnp.float32)).compile()
    with pytest.raises(
        TypeError,
        match="Argument types differ from the types for which this computation was compiled",
    ):
        compiled(jnp.ones(10))


def test_item_assignment_is_rejected():
    """Cell 'x_jax[0] = 10.0': JAX arrays are immutable and the error names .at[]."""
    x_jax = jnp.arange(5.0)
    with pytest.raises(
        TypeError, match=r"JAX arrays are immutable and do not support in-place item assignment"
    ):
        x_jax[0] = 10.0


def test_donated_input_is_deleted():
    """The donation cell: a donated input is marked deleted after the call."""

    def update_three(x, i, value):
        x = x.at[i].set(value)
        x = x.at[i + 1].add(value)
        return x.at[0].multiply(2.0)

    x = jnp.zeros(8)
    y = jax.jit(update_three, donate_argnums=0)(x, 3, 1.0)
    assert x.is_deleted()
    np.testing.assert_array_equal(np.asarray(y), [0, 0, 0, 1, 1, 0, 0, 0])


def test_donated_input_cannot_be_used_again():
    """Cell 'x_donated + 1.0': reading, computing with or re-passing a donated array raises RuntimeError."""
    double = jax.jit(lambda x: 2.0 * x, donate_argnums=0)
    x = jnp.zeros(8)
    double(x)
    for use in (lambda: x + 1.0, lambda: np.asarray(x), lambda: double(x)):
        with pytest.raises(RuntimeError, match=r"Array has been deleted with shape=float32\[8\]"):
            use()


def test_jax_numpy_rejects_a_list_where_numpy_accepts_it():
    """Cells 'jnp.sum([1.0, 2.0])' and 'jnp.sin((0.0, 1.0))' (and the sharp-bits row): a list or
    tuple where an array is expected is a TypeError; NumPy converts it; sequence functions accept it."""
    assert np.sum([1.0, 2.0]) == 3.0
    with pytest.raises(
        TypeError,
        match=r"sum requires ndarray or scalar arguments, got <class 'list'> at position 0",
    ):
        jnp.sum([1.0, 2.0])
    with pytest.raises(
        TypeError,
        match=r"sin requires ndarray or scalar arguments, got <class 'tuple'> at position 0",
    ):
        jnp.sin((0.0, 1.0))
    assert float(jnp.sum(jnp.asarray([1.0, 2.0]))) == 3.0
    assert jnp.stack([1.0, 2.0]).shape == (2,)


def _copies(fn, *args, **jit_options) -> int:
    text = jax.jit(fn, **jit_options).lower(*args).compile().as_text()
    return text[text.index("ENTRY") :].count(" copy(")


def _bytes_held(fn, x, **jit_options) -> int:
    stats = jax.jit(fn, **jit_options).lower(x).compile().memory_analysis()
    return (
        stats.argument_size_in_bytes
        + stats.output_size_in_bytes
        + stats.temp_size_in_bytes
        - stats.alias_size_in_bytes
    )


def _two_versions(x):
    return x.at[0].set(1.0), x.at[1].set(2.0)


def _update_and_sum(x):
    return x.at[0].set(1.0), jnp.sum(x)


@pytest.mark.parametrize(
    ("fn", "plain_copies"),
    [(_two_versions, 2), (_update_and_sum, 1)],
    ids=["two_versions", "update_and_sum"],
)
def test_donating_an_input_whose_old_value_is_still_needed_adds_a_copy_and_saves_no_byte(
    fn, plain_copies
):
    """The in-place section and summary: when the old value of x is still needed (a second updated
    version, or a sum of x), XLA copies x for the update; donating x makes it first copy x out of
    the buffer the first result must be written into, one copy more, and the bytes the program
    holds (arguments + outputs + temporaries - aliased) stay the same (pinned jax, XLA:CPU)."""
    x = jnp.zeros(256)
    donated_text = jax.jit(fn, donate_argnums=0).lower(x).compile().as_text()
    assert "input_output_alias={ {0}: (0," in donated_text.splitlines()[0]
    assert _copies(fn, x) == plain_copies
    assert _copies(fn, x, donate_argnums=0) == plain_copies + 1
    assert _bytes_held(fn, x, donate_argnums=0) == _bytes_held(fn, x)


def test_the_cache_key_holds_tree_structure_weak_type_and_sharding():
    """The cache section's second cell: a list instead of a tuple, a weakly typed Python float
    against jnp.float32, and a NamedSharding (one-device mesh) each cost a trace; a new float value does not."""
    from jax.sharding import NamedSharding, PartitionSpec

    traces = []

    @jax.jit
    def double(tree):
        traces.append(None)
        return jax.tree.map(lambda leaf: 2 * leaf, tree)

    mesh = jax.make_mesh((1,), ("batch",))
    sharded = jax.device_put(jnp.ones(8), NamedSharding(mesh, PartitionSpec("batch")))
    counts = []
    for call in (
        lambda: double((jnp.ones(8),)),
        lambda: double([jnp.ones(8)]),
        lambda: double(2.0),
        lambda: double(jnp.float32(2.0)),
        lambda: double(3.0),
        lambda: double((sharded,)),
    ):
        call()
        counts.append(len(traces))
    assert counts == [1, 2, 3, 4, 4, 5]


def test_jit_of_the_same_function_shares_its_cache_but_a_wrapper_made_on_the_fly_does_not():
    """The jit chapter's 'jax.jit(normalise) again' case and the PLN levels chapter's level-1 remark:
    jax.jit(f) made twice traces f once; jax.jit(jax.value_and_grad(f)) made twice traces twice."""
    traces = []

    def f(x):
        traces.append(None)
        return jnp.sum(jnp.sin(x) ** 2)

    jax.jit(f)(jnp.ones(3))
    jax.jit(f)(jnp.ones(3))
    assert len(traces) == 1
    jax.jit(jax.value_and_grad(f))(jnp.ones(3))
    jax.jit(jax.value_and_grad(f))(jnp.ones(3))
    assert len(traces) == 3


def test_entry_computation_takes_jit_options_and_donation_removes_the_copy():
    """The .at[] section: without donation the compiled program copies its input first; with
    donate_argnums=0 (passed through hlo.entry_computation) that copy is gone."""
    from jaxcourse.hlo import entry_computation

    def update_three(x, i, value):
        x = x.at[i].set(value)
        x = x.at[i + 1].add(value)
        return x.at[0].multiply(2.0)

    plain = entry_computation(update_three, jnp.zeros(8), 3, 1.0)
    donated = entry_computation(update_three, jnp.zeros(8), 3, 1.0, donate_argnums=0)
    assert plain.count(" copy(") == 1
    assert donated.count(" copy(") == 0
    assert "ROOT" in plain and "kind=kLoop" in plain


def test_block_until_ready_waits_for_a_tuple_and_returns_it():
    """The async section: jax.block_until_ready accepts any pytree of arrays and returns it."""
    pair = (jnp.ones(2), jnp.zeros(3))
    assert jax.block_until_ready(pair) is pair


def test_a_fusion_calls_a_body_that_holds_the_original_operations():
    """The 'reading the compiled program' box: chain's entry computation is one kLoop fusion whose
    called body holds tanh, sine, multiply and exponential."""

    def chain(x):
        return jnp.tanh(x) * 2.0 + jnp.sin(x) ** 2 - jnp.exp(-x) / (1.0 + x * x)

    text = jax.jit(chain).lower(jnp.ones(5)).compile().as_text()
    body = text[text.index("%fused_computation") : text.index("ENTRY")]
    for opcode in ("tanh(", "sine(", "multiply(", "exponential("):
        assert opcode in body
    entry = text[text.index("ENTRY") :]
    assert entry.count(" fusion(") == 1 and "kind=kLoop" in entry


def test_a_closed_over_array_is_a_jaxpr_constant_written_whole_into_the_program():
    """The closed-over-arrays section: the array is a constvar of the jaxpr and a
    stablehlo.constant holding its values; the program text grows with the array (about 8 bytes
    of text per float32) when closed over, and not when the array is an argument."""
    small_table = jnp.arange(4.0)
    closed_jaxpr = jax.make_jaxpr(lambda x: x * small_table)(1.0)
    assert len(closed_jaxpr.consts) == 1 and closed_jaxpr.jaxpr.constvars
    lowered_text = jax.jit(lambda x: x * small_table).lower(1.0).as_text()
    assert (
        "stablehlo.constant dense<[0.000000e+00, 1.000000e+00, 2.000000e+00, 3.000000e+00]>"
        in lowered_text
    )

    def text_sizes(n):
        table = jnp.linspace(0.0, 1.0, n)
        closed = len(jax.jit(lambda x: jnp.sum(x * table)).lower(1.0).as_text())
        passed = len(jax.jit(lambda x, t: jnp.sum(x * t)).lower(1.0, table).as_text())
        return closed, passed

    (closed_small, passed_small), (closed_big, passed_big) = (
        text_sizes(10_000),
        text_sizes(1_000_000),
    )
    assert closed_big - closed_small > 7 * (1_000_000 - 10_000)
    assert passed_big < 1_000 and passed_small < 1_000
