"""Wrong answers to the PRNG chapter's exercises, written from the exercise texts alone as a hurried
learner would (issue 27, point 4): each fails, and its hint names what the answer actually did."""

import itertools

import jax
import jax.numpy as jnp
import pytest
from wrong_answers import assert_fails_with

from jaxcourse.exercises.prng import check_chunk_means, check_next_normal, check_random_walk

# Exercise 1: next_normal(key) -> (new_key, x) ----------------------------------------------


def _split_and_draw_from_the_same_key(key):
    return jax.random.split(key)[0], jax.random.normal(key)


def _uniform(key):
    key, subkey = jax.random.split(key)
    return key, jax.random.uniform(subkey)


def _truncated(key):
    key, subkey = jax.random.split(key)
    return key, jax.random.truncated_normal(subkey, -1.5, 1.5)


def _python_float(key):
    key, subkey = jax.random.split(key)
    return key, float(jax.random.normal(subkey))


_calls = itertools.count()


def _counter_in_a_global(key):
    """State kept from one call to the next: a global counter folded into the drawing key."""
    key, subkey = jax.random.split(key)
    return key, jax.random.normal(jax.random.fold_in(subkey, next(_calls)))


def _shape_one(key):
    key, subkey = jax.random.split(key)
    return key, jax.random.normal(subkey, (1,))


WRONG_NEXT_NORMAL = {
    "splits the key and draws from it too": (_split_and_draw_from_the_same_key, ("2 times",)),
    "uniform draws": (_uniform, ("jax.random.uniform",)),
    "truncated normal": (_truncated, ("variance",)),
    "x as a Python float": (_python_float, ("float(",)),
    "a call counter kept between calls": (_counter_in_a_global, ("different draws",)),
    "x of shape (1,)": (_shape_one, ("shape ()",)),
}


@pytest.mark.slow_after_first
@pytest.mark.parametrize("case", list(WRONG_NEXT_NORMAL), ids=list(WRONG_NEXT_NORMAL))
def test_next_normal_wrong_answer(case):
    answer, fragments = WRONG_NEXT_NORMAL[case]
    assert_fails_with(check_next_normal(answer), *fragments)


# Exercise 2: chunk_means(key, n_chunks, chunk_size) ----------------------------------------


def _chunks(key, n_chunks, chunk_size, one_chunk):
    return jax.vmap(lambda i: one_chunk(jax.random.fold_in(key, i)))(jnp.arange(n_chunks))


def _exp_of_mean(key, n_chunks, chunk_size):
    return _chunks(
        key, n_chunks, chunk_size, lambda k: jnp.exp(jnp.mean(jax.random.normal(k, (chunk_size,))))
    )


def _divided_by_size_minus_one(key, n_chunks, chunk_size):
    return _chunks(
        key,
        n_chunks,
        chunk_size,
        lambda k: jnp.sum(jnp.exp(jax.random.normal(k, (chunk_size,)))) / (chunk_size - 1),
    )


def _chunk_sums(key, n_chunks, chunk_size):
    return _chunks(
        key, n_chunks, chunk_size, lambda k: jnp.sum(jnp.exp(jax.random.normal(k, (chunk_size,))))
    )


def _mean_of_exp(key, n_chunks, chunk_size):
    return _chunks(
        key, n_chunks, chunk_size, lambda k: jnp.mean(jnp.exp(jax.random.normal(k, (chunk_size,))))
    )


def _float_inside(key, n_chunks, chunk_size):
    return _chunks(
        key,
        n_chunks,
        chunk_size,
        lambda k: float(jnp.mean(jnp.exp(jax.random.normal(k, (chunk_size,))))),
    )


_runs = itertools.count()


def _run_counter(key, n_chunks, chunk_size):
    """State kept from one call to the next: each run starts its chunks where the last one ended."""
    offset = 1000 * next(_runs)
    return jax.vmap(
        lambda i: jnp.mean(jnp.exp(jax.random.normal(jax.random.fold_in(key, i), (chunk_size,))))
    )(jnp.arange(n_chunks) + offset)


def _first_of_a_fixed_split(key, n_chunks, chunk_size):
    """Extendable up to 4096 chunks only, and all 4096 keys made every time."""
    keys = jax.random.split(key, 4096)[:n_chunks]
    return jax.vmap(lambda k: jnp.mean(jnp.exp(jax.random.normal(k, (chunk_size,)))))(keys)


WRONG_CHUNK_MEANS = {
    "the first n_chunks of split(key, 4096)": (
        _first_of_a_fixed_split,
        ("splits the key into 4096 keys and keeps the first 16",),
    ),
    "exp of the mean": (_exp_of_mean, ("exp(z)",)),
    "divided by chunk_size - 1": (_divided_by_size_minus_one, ("chunk_size - 1",)),
    "chunk sums, not means": (_chunk_sums, ("you summed exp(z)",)),
    "float() on a chunk mean": (_float_inside, ("float()",)),
    "a run counter kept between calls": (_run_counter, ("same key gave different results",)),
}


@pytest.mark.slow
@pytest.mark.parametrize("case", list(WRONG_CHUNK_MEANS), ids=list(WRONG_CHUNK_MEANS))
def test_chunk_means_wrong_answer(case):
    answer, fragments = WRONG_CHUNK_MEANS[case]
    assert_fails_with(check_chunk_means(answer), *fragments)


# Exercise 3: random_walk(key, n_steps) with lax.scan ---------------------------------------


def _scan_walk(step_keys, draw=jax.random.normal):
    def step(position, step_key):
        position = position + draw(step_key)
        return position, position

    return jax.lax.scan(step, 0.0, step_keys)[1]


def _one_key_too_many(key, n_steps):
    return _scan_walk(jax.random.split(key, n_steps + 1)[1:])


def _folded_step_keys(key, n_steps):
    return _scan_walk(jax.vmap(lambda t: jax.random.fold_in(key, t))(jnp.arange(n_steps)))


def _uniform_steps(key, n_steps):
    return _scan_walk(jax.random.split(key, n_steps), draw=jax.random.uniform)


def _start_included(key, n_steps):
    return jnp.concatenate([jnp.zeros(1), _scan_walk(jax.random.split(key, n_steps))])


def _steps_not_positions(key, n_steps):
    def step(position, step_key):
        move = jax.random.normal(step_key)
        return position + move, move

    return jax.lax.scan(step, 0.0, jax.random.split(key, n_steps))[1]


def _drawn_before_the_scan(key, n_steps):
    """Every step drawn up front; the scan only adds: the keys never travel through it."""
    steps = jax.vmap(jax.random.normal)(jax.random.split(key, n_steps))
    return jax.lax.scan(lambda position, move: (position + move, position + move), 0.0, steps)[1]


WRONG_RANDOM_WALK = {
    "every step drawn before a scan that only adds": (
        _drawn_before_the_scan,
        ("you drew every step before the scan",),
    ),
    "split into n_steps + 1 keys": (_one_key_too_many, ("n_steps + 1",)),
    "step keys by fold_in": (_folded_step_keys, ("partitionable off",)),
    "uniform steps": (_uniform_steps, ("uniform",)),
    "the start 0 returned too": (_start_included, ("shape (40,)",)),
    "the steps returned, not the positions": (_steps_not_positions, ("not the positions",)),
}


@pytest.mark.slow
@pytest.mark.parametrize("case", list(WRONG_RANDOM_WALK), ids=list(WRONG_RANDOM_WALK))
def test_random_walk_wrong_answer(case):
    answer, fragments = WRONG_RANDOM_WALK[case]
    assert_fails_with(check_random_walk(answer), *fragments)
