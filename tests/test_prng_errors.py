"""Every error shown in the PRNG chapter, pinned: the class and a stable part of its message."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

# More than a few seconds: left out of the fast tier (scripts/test.sh --fast).
pytestmark = pytest.mark.slow


def test_reusing_a_typed_key_raises_key_reuse_error():
    """Cell 'Catching reuse': a second draw from a consumed key, with the checker on."""
    with jax.debug_key_reuse(True):
        key = jax.random.key(42)
        jax.random.normal(key, (4,))
        with pytest.raises(
            jax.errors.KeyReuseError,
            match="Previously-consumed key passed to jit-compiled function",
        ):
            jax.random.normal(key, (4,))


def test_reusing_a_key_inside_jit_raises_key_reuse_error():
    """Cell 'weights_and_noise': two draws from one key inside a jitted function."""

    @jax.jit
    def weights_and_noise(key):
        return jax.random.normal(key, (4,)), jax.random.normal(key, (4,))

    with jax.debug_key_reuse(True):
        with pytest.raises(jax.errors.KeyReuseError, match="argument 0 is already consumed"):
            weights_and_noise(jax.random.key(42))


def test_reuse_of_a_legacy_key_is_not_detected():
    """The chapter's claim: the checker cannot see reuse of a uint32 PRNGKey (no error)."""
    with jax.debug_key_reuse(True):
        old_key = jax.random.PRNGKey(42)
        first, second = jax.random.normal(old_key, (2,)), jax.random.normal(old_key, (2,))
    np.testing.assert_array_equal(first, second)


def test_arithmetic_on_a_typed_key_raises_type_error():
    """Cell 'Typed keys are not integers': key + 1."""
    with pytest.raises(TypeError, match=r"add does not accept dtypes key<fry>, int32"):
        jax.random.key(0) + 1


def test_converting_a_typed_key_to_numpy_raises_type_error():
    """Cell 'Typed keys are not integers': np.asarray(key) points to key_data."""
    with pytest.raises(
        TypeError, match=r"cannot be converted to a NumPy array\. Use jax\.random\.key_data"
    ):
        np.asarray(jax.random.key(0))


def test_scan_body_drawing_from_a_closed_over_key_is_flagged():
    """The chapter's claim: the checker flags a scan body that reuses a key from outside."""

    def walk_with_one_key(key, n_steps):
        def step(position, _):
            position = position + jax.random.normal(key)
            return position, position

        return jax.lax.scan(step, 0.0, None, length=n_steps)[1]

    with jax.debug_key_reuse(True):
        with pytest.raises(jax.errors.KeyReuseError, match="scan body function leads to key reuse"):
            walk_with_one_key(jax.random.key(0), 3)


def test_fold_in_and_split_of_one_key_coincide_unflagged():
    """The chapter's claim: fold_in(key, i) equals split(key, n)[i] here, and nothing is flagged."""
    with jax.debug_key_reuse(True):
        key = jax.random.key(1)
        split_keys = jax.random.split(key, 4)
        folded = jax.vmap(lambda i: jax.random.fold_in(key, i))(jax.numpy.arange(4))
    np.testing.assert_array_equal(jax.random.key_data(split_keys), jax.random.key_data(folded))


def test_legacy_prngkey_works_without_a_warning_and_matches_the_typed_key():
    """The chapter's claims: PRNGKey raises no warning, holds key_data's bits, draws the same numbers."""
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        legacy = jax.random.PRNGKey(0)
    assert legacy.dtype == np.uint32 and legacy.shape == (2,)
    assert "legacy" in jax.random.PRNGKey.__doc__
    typed = jax.random.key(0)
    np.testing.assert_array_equal(jax.random.key_data(typed), legacy)
    np.testing.assert_array_equal(jax.random.normal(typed, (3,)), jax.random.normal(legacy, (3,)))
    assert jax.random.split(typed, 4).shape == (4,) and jax.random.split(legacy, 4).shape == (4, 2)


def test_partitionable_threefry_is_the_default_stream():
    """The chapter's claim: jax_threefry_partitionable is on, so key(0) no longer gives the old tutorials' numbers."""
    assert jax.config.jax_threefry_partitionable
    np.testing.assert_allclose(
        jax.random.normal(jax.random.key(0), (3,)), [1.6226, 2.0253, -0.4336], atol=1e-4
    )


def test_draws_of_two_distributions_from_one_key_are_tied():
    """The reuse figure and the workshop's pitfall: uniform and normal draws from one key are not
    identical but tied, the normal draw an increasing function of the uniform one."""
    key = jax.random.key(42)
    u, z = jax.random.uniform(key, (500,)), jax.random.normal(key, (500,))
    assert not np.allclose(u, z)
    assert np.all(np.diff(np.asarray(z)[np.argsort(np.asarray(u))]) >= 0)


def test_a_prefix_of_a_draw_is_the_smaller_draw_only_with_the_partitionable_layout():
    """The batch section and the pytrees chapter: 'the first three of ten draws are the draw of three'
    and 'the bias copies the weights' hold for the default jax_threefry_partitionable=True layout,
    not with the flag off (the layout of the 2021 tutorials), and never for a column slice."""
    key = jax.random.key(0)

    def facts():
        return (
            bool(jnp.array_equal(jax.random.normal(key, (10,))[:3], jax.random.normal(key, (3,)))),
            bool(
                jnp.array_equal(
                    jax.random.normal(key, (5,)), jax.random.normal(key, (5, 10))[0, :5]
                )
            ),
            bool(
                jnp.array_equal(
                    jax.random.normal(key, (4, 6))[:, :3], jax.random.normal(key, (4, 3))
                )
            ),
        )

    assert facts() == (True, True, False)
    with jax.threefry_partitionable(False):
        assert facts() == (False, False, False)


@pytest.mark.parametrize("impl", ["rbg", "unsafe_rbg"])
def test_vmap_over_rbg_keys_draws_from_the_first_key_only(impl):
    """Section sec-prng-impl: under vmap, a batch of RBG keys gives one draw of the batch's size
    from its first key, not a draw per key; threefry keys map exactly."""
    keys = jax.random.split(jax.random.key(0, impl=impl), 4)
    mapped = jax.vmap(jax.random.normal)(keys)
    looped = jnp.stack([jax.random.normal(k) for k in keys])
    assert jnp.array_equal(mapped, jax.random.normal(keys[0], (4,)))
    assert not jnp.array_equal(mapped, looped)
    threefry_keys = jax.random.split(jax.random.key(0), 4)
    assert jnp.array_equal(
        jax.vmap(jax.random.normal)(threefry_keys),
        jnp.stack([jax.random.normal(k) for k in threefry_keys]),
    )


def test_key_implementations_and_their_key_data():
    """Section sec-prng-impl: each impl shows in the key's dtype; rbg key data is 4 uint32, and
    wrap_key_data needs the same impl back."""
    dtypes = {impl: str(jax.random.key(0, impl=impl).dtype) for impl in ("threefry2x32", "rbg")}
    assert dtypes == {"threefry2x32": "key<fry>", "rbg": "key<rbg>"}
    data = jax.random.key_data(jax.random.key(0, impl="rbg"))
    assert data.shape == (4,) and data.dtype == jnp.uint32
    assert str(jax.random.wrap_key_data(data, impl="rbg").dtype) == "key<rbg>"
    with pytest.raises(TypeError, match=r"expected key_data.shape to end with \(2,\)"):
        jax.random.wrap_key_data(data)
    assert jax.config.jax_threefry_partitionable is True
    assert jax.config.jax_default_prng_impl == "threefry2x32"
