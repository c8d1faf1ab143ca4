"""The checkers of the PRNG chapter accept the reference solutions and reject typical mistakes."""

import jax
import jax.numpy as jnp
import pytest

from jaxcourse.exercises.prng import check_chunk_means, check_next_normal, check_random_walk

# Exercise 1 ------------------------------------------------------------------------------------


def next_normal(key):
    key, subkey = jax.random.split(key)
    return key, jax.random.normal(subkey)


@pytest.mark.slow
def test_next_normal_solution_passes():
    """Split, draw with one key, return the other: passes under the key-reuse checker."""
    verdict = check_next_normal(next_normal)
    assert verdict, verdict.message


def test_next_normal_stub_is_not_yet():
    """A stub that raises NotImplementedError gets 'not yet'."""

    def stub(key):
        raise NotImplementedError

    verdict = check_next_normal(stub)
    assert not verdict
    assert "no answer yet" in verdict.message


def test_next_normal_returning_the_same_key_fails():
    """Drawing from the key and handing it back unchanged reuses it on the next call."""
    verdict = check_next_normal(lambda key: (key, jax.random.normal(key)))
    assert not verdict
    assert "returned the key it was given" in verdict.message


def test_next_normal_drawing_from_the_returned_key_fails():
    """Drawing x from the key that is returned consumes it before the next call splits it."""

    def wrong(key):
        key, _ = jax.random.split(key)
        return key, jax.random.normal(key)

    verdict = check_next_normal(wrong)
    assert not verdict
    assert "used twice" in verdict.message


def test_next_normal_pair_the_wrong_way_round_fails():
    """(x, key) instead of (key, x) gets a hint about the order."""

    def wrong(key):
        key, subkey = jax.random.split(key)
        return jax.random.normal(subkey), key

    verdict = check_next_normal(wrong)
    assert not verdict
    assert "wrong way round" in verdict.message


def test_next_normal_ignoring_the_key_fails():
    """Drawing from a freshly seeded key on every call gives the same value each time."""

    def wrong(key):
        key, _ = jax.random.split(key)
        return key, jax.random.normal(jax.random.key(0))

    verdict = check_next_normal(wrong)
    assert not verdict
    assert "repeated values" in verdict.message


# Exercise 2 ------------------------------------------------------------------------------------


def chunk_means(key, n_chunks, chunk_size):
    def one_chunk(index):
        chunk_key = jax.random.fold_in(key, index)  # depends on key and index only
        return jnp.mean(jnp.exp(jax.random.normal(chunk_key, (chunk_size,))))

    return jax.vmap(one_chunk)(jnp.arange(n_chunks))


@pytest.mark.slow
def test_chunk_means_solution_passes():
    """vmap over fold_in(key, i), one lognormal mean per chunk."""
    verdict = check_chunk_means(chunk_means)
    assert verdict, verdict.message


@pytest.mark.slow
def test_chunk_means_split_fails_when_the_layout_changes():
    """vmap over split(key, n_chunks): chunk i's key depends on n_chunks with the flag off."""

    def wrong(key, n_chunks, chunk_size):
        one_chunk = lambda k: jnp.mean(jnp.exp(jax.random.normal(k, (chunk_size,))))
        return jax.vmap(one_chunk)(jax.random.split(key, n_chunks))

    verdict = check_chunk_means(wrong)
    assert not verdict
    assert (
        "with jax_threefry_partitionable off" in verdict.message
        and "fold_in(key, i)" in verdict.message
    )


def test_chunk_means_stub_is_not_yet():
    def stub(key, n_chunks, chunk_size):
        raise NotImplementedError

    assert "no answer yet" in check_chunk_means(stub).message


def test_chunk_means_one_shared_key_fails():
    """vmap with in_axes=None over the key gives every chunk the same numbers."""

    def wrong(key, n_chunks, chunk_size):
        one_chunk = lambda k, _: jnp.mean(jnp.exp(jax.random.normal(k, (chunk_size,))))
        return jax.vmap(one_chunk, in_axes=(None, 0))(key, jnp.arange(n_chunks))

    verdict = check_chunk_means(wrong)
    assert not verdict
    assert "same numbers" in verdict.message


@pytest.mark.slow
def test_chunk_means_one_block_fails_with_its_own_hint():
    """Drawing one (n_chunks, chunk_size) block is a valid estimate but not the asked stream."""

    def wrong(key, n_chunks, chunk_size):
        return jnp.mean(jnp.exp(jax.random.normal(key, (n_chunks, chunk_size))), axis=1)

    verdict = check_chunk_means(wrong)
    assert not verdict
    assert "one\n(n_chunks, chunk_size) block" in verdict.message.replace(
        "one (n_chunks", "one\n(n_chunks"
    )


def test_chunk_means_forgetting_exp_fails():
    """Averaging z instead of exp(z) estimates 0, not exp(1/2)."""

    def wrong(key, n_chunks, chunk_size):
        one_chunk = lambda i: jnp.mean(jax.random.normal(jax.random.fold_in(key, i), (chunk_size,)))
        return jax.vmap(one_chunk)(jnp.arange(n_chunks))

    verdict = check_chunk_means(wrong)
    assert not verdict
    assert "exp(1/2)" in verdict.message


def test_chunk_means_global_numpy_state_fails():
    """Noise from NumPy's global generator is not reproducible from the key."""
    import numpy as np

    def wrong(key, n_chunks, chunk_size):
        return jnp.mean(jnp.exp(jnp.asarray(np.random.normal(size=(n_chunks, chunk_size)))), axis=1)

    verdict = check_chunk_means(wrong)
    assert not verdict
    assert "same key gave different results" in verdict.message


def test_chunk_means_wrong_shape_fails():
    verdict = check_chunk_means(lambda key, n, m: jnp.mean(chunk_means(key, n, m)))
    assert not verdict
    assert "one mean per chunk" in verdict.message


# Exercise 3 ------------------------------------------------------------------------------------


def random_walk(key, n_steps):
    def step(position, step_key):
        position = position + jax.random.normal(step_key)
        return position, position

    _, positions = jax.lax.scan(step, 0.0, jax.random.split(key, n_steps))
    return positions


@pytest.mark.slow
def test_random_walk_solution_passes():
    """scan over pre-split keys, position as the carry."""
    verdict = check_random_walk(random_walk)
    assert verdict, verdict.message


def test_random_walk_stub_is_not_yet():
    def stub(key, n_steps):
        raise NotImplementedError

    assert "no answer yet" in check_random_walk(stub).message


def test_random_walk_closing_over_one_key_fails():
    """A scan body that draws from the closed-over key moves by the same step every time."""

    def wrong(key, n_steps):
        def step(position, _):
            position = position + jax.random.normal(key)
            return position, position

        return jax.lax.scan(step, 0.0, None, length=n_steps)[1]

    verdict = check_random_walk(wrong)
    assert not verdict
    assert "closes over" in verdict.message


def test_random_walk_carried_key_fails_with_its_own_hint():
    """Splitting the key in the carry is a correct walk with a different stream."""

    def wrong(key, n_steps):
        def step(carry, _):
            position, key = carry
            key, subkey = jax.random.split(key)
            position = position + jax.random.normal(subkey)
            return (position, key), position

        return jax.lax.scan(step, (0.0, key), None, length=n_steps)[1]

    verdict = check_random_walk(wrong)
    assert not verdict
    assert "carry the key" in verdict.message


def test_random_walk_cumsum_without_scan_fails():
    """A cumsum of vmapped draws matches the stream but is not the scan the exercise asks for."""

    def wrong(key, n_steps):
        return jnp.cumsum(jax.vmap(jax.random.normal)(jax.random.split(key, n_steps)))

    verdict = check_random_walk(wrong)
    assert not verdict
    assert "lax.scan" in verdict.message


def test_random_walk_all_at_once_fails():
    """Steps drawn as one vector from the key itself are a different stream."""

    def wrong(key, n_steps):
        def step(position, z):
            position = position + z
            return position, position

        return jax.lax.scan(step, 0.0, jax.random.normal(key, (n_steps,)))[1]

    verdict = check_random_walk(wrong)
    assert not verdict
    assert "all the steps at once" in verdict.message


def test_random_walk_recording_the_start_fails():
    """Emitting the position before the step shifts the walk by one."""

    def wrong(key, n_steps):
        def step(position, step_key):
            return position + jax.random.normal(step_key), position

        return jax.lax.scan(step, 0.0, jax.random.split(key, n_steps))[1]

    verdict = check_random_walk(wrong)
    assert not verdict
    assert "not the start 0" in verdict.message


# Wrong answers of the classes the checkers must catch by property -------------------------------


def test_next_normal_uniform_sampler_fails_on_its_shape():
    """A 'normal' built on the uniform distribution, even with mean 0 and variance 1, is caught by
    the shape of many draws (kurtosis 1.8), not by a bound."""

    def uniform_normal(key):
        key, subkey = jax.random.split(key)
        return key, jax.random.uniform(subkey, minval=-(3**0.5), maxval=3**0.5)

    verdict = check_next_normal(uniform_normal)
    assert not verdict and "kurtosis" in verdict.message


def test_next_normal_wrong_scale_fails_on_the_variance():
    """Draws of the right shape and the wrong scale are blamed on the variance."""

    def scaled(key):
        key, subkey = jax.random.split(key)
        return key, 2.0 * jax.random.normal(subkey)

    verdict = check_next_normal(scaled)
    assert not verdict and "variance" in verdict.message


def test_next_normal_fold_in_and_draw_on_one_key_fails():
    """Folding into a key and drawing from it too breaks the course's fold_in rule."""

    def fold_and_draw(key):
        return jax.random.fold_in(key, 1), jax.random.normal(key)

    verdict = check_next_normal(fold_and_draw)
    assert not verdict and "fold_in" in verdict.message


def test_next_normal_arithmetic_on_key_data_fails():
    """A new key made by adding 1 to the key's data is rejected with a hint about key data."""

    def add_one(key):
        new_key = jax.random.wrap_key_data(jax.random.key_data(key) + 1)
        return new_key, jax.random.normal(key)

    verdict = check_next_normal(add_one)
    assert not verdict and "key data" in verdict.message


def test_next_normal_python_if_on_a_value_fails_under_jit():
    """An answer that works eagerly but branches in Python on a drawn value fails under jit."""

    def branchy(key):
        key, subkey = jax.random.split(key)
        x = jax.random.normal(subkey)
        return key, (x if float(x) > -10 else 0.0 * x)

    verdict = check_next_normal(branchy)
    assert not verdict and "jit" in verdict.message


def test_next_normal_returning_three_values_fails_with_the_expected_structure():
    verdict = check_next_normal(lambda key: (*jax.random.split(key), 0.0))
    assert not verdict and "pair (new_key, x)" in verdict.message


@pytest.mark.slow
def test_chunk_means_python_loop_fails_on_the_method():
    """The same numbers from a Python loop over the keys: the exercise asks for vmap."""

    def looped(key, n_chunks, chunk_size):
        keys = [jax.random.fold_in(key, i) for i in range(n_chunks)]
        return jnp.stack([jnp.mean(jnp.exp(jax.random.normal(k, (chunk_size,)))) for k in keys])

    verdict = check_chunk_means(looped)
    assert not verdict and "jax.vmap" in verdict.message and "loop" in verdict.message


@pytest.mark.slow
def test_chunk_means_lax_map_fails_on_the_method():
    """lax.map draws from one key at a time: same numbers, not vmap."""

    def mapped(key, n_chunks, chunk_size):
        one_chunk = lambda k: jnp.mean(jnp.exp(jax.random.normal(k, (chunk_size,))))
        return jax.lax.map(
            one_chunk, jax.vmap(lambda i: jax.random.fold_in(key, i))(jnp.arange(n_chunks))
        )

    verdict = check_chunk_means(mapped)
    assert not verdict and "one key at a time" in verdict.message


def test_chunk_means_returning_a_tuple_fails_with_the_expected_structure():
    verdict = check_chunk_means(lambda key, n, size: (chunk_means(key, n, size), n))
    assert not verdict and "one array of shape" in verdict.message


def test_chunk_means_fold_in_and_split_of_one_key_fails():
    """Splitting the key and also folding into it mixes the two ways to derive keys."""

    def mixed(key, n_chunks, chunk_size):
        salt = jax.random.normal(jax.random.fold_in(key, 99))
        keys = jax.random.split(key, n_chunks)
        means = jax.vmap(lambda k: jnp.mean(jnp.exp(jax.random.normal(k, (chunk_size,)))))(keys)
        return means + 0.0 * salt

    verdict = check_chunk_means(mixed)
    assert not verdict and "fold_in" in verdict.message


@pytest.mark.slow
def test_chunk_means_hard_coded_chunk_size_fails_on_a_second_size():
    """A chunk size fixed at the typical case's 500 passes it, but not a second size."""

    def fixed_size(key, n_chunks, chunk_size):
        return chunk_means(key, n_chunks, 500)

    verdict = check_chunk_means(fixed_size)
    assert not verdict and "draw chunk_size values per chunk" in verdict.message


def test_random_walk_returning_carry_and_positions_fails_with_the_expected_structure():
    """Returning scan's (carry, ys) pair gets a hint about the structure, not a crash."""

    def pair(key, n_steps):
        step = lambda position, k: (position + jax.random.normal(k),) * 2
        return jax.lax.scan(step, 0.0, jax.random.split(key, n_steps))

    verdict = check_random_walk(pair)
    assert not verdict and "return only the positions" in verdict.message


def test_random_walk_python_if_on_the_position_fails_under_jit():
    """A walk that reads a traced position with float() works eagerly only if never traced; scan
    traces it, and the hint says so."""

    def branchy(key, n_steps):
        def step(position, k):
            position = position + jax.random.normal(k)
            return position, position if float(position) > -100 else position

        return jax.lax.scan(step, 0.0, jax.random.split(key, n_steps))[1]

    verdict = check_random_walk(branchy)
    assert not verdict and (
        "ConcretizationTypeError" in verdict.message or "Python number" in verdict.message
    )
