"""The five PLN levels run one algorithm: same traces, same compile behaviour, same answer."""

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

from jaxcourse.config import pln_sizes
from jaxcourse.pln import (
    LEVELS,
    SHARED_ALGORITHM_LEVELS,
    PLNData,
    level2,
    level3,
    level4,
    load_oaks,
    stirling_correction,
)
from jaxcourse.tracecount import count_compilations

# More than a few seconds: left out of the fast tier (scripts/test.sh --fast).
pytestmark = pytest.mark.slow

# float32 traces of eager and compiled code differ by rounding only; after 50 Adam steps the
# ELBO (about -3e4) agrees to well under 1e-4 relative (a few nats).
PARITY_RTOL = 1e-4
PARITY_ITERATIONS = 50

# The iteration budget the PLN chapter uses (300 on CPU, 1000 on a GPU), and the ELBO of
# pyPLNmodels' default fit on oaks, in its Stirling convention.
CONVERGENCE_ITERATIONS = pln_sizes().n_iter
assert CONVERGENCE_ITERATIONS <= 1000
PYPLNMODELS_ELBO_STIRLING = -31456.5


@pytest.fixture(scope="module")
def oaks():
    return load_oaks()


@pytest.fixture(scope="module")
def traces(oaks):
    return {
        level: np.asarray(LEVELS[level].fit(oaks, PARITY_ITERATIONS).elbo_trace)
        for level in SHARED_ALGORITHM_LEVELS
    }


@pytest.mark.parametrize("level", SHARED_ALGORITHM_LEVELS)
def test_levels_give_the_same_elbo_trace_as_level_0(traces, level):
    """Every level's 50-step ELBO trace equals the eager baseline's to float32 precision."""
    assert traces[level].shape == (PARITY_ITERATIONS,)
    np.testing.assert_allclose(traces[level], traces[0], rtol=PARITY_RTOL)


@pytest.mark.parametrize("level", sorted(LEVELS))
def test_levels_return_the_documented_shapes(oaks, level):
    """FitResult holds (n, p) variational parameters, a (d, p) coef and a (p, p) covariance."""
    result = LEVELS[level].fit(oaks, 2)
    n, p = oaks.counts.shape
    assert result.variational.latent_mean.shape == (n, p)
    assert result.variational.latent_sqrt_var.shape == (n, p)
    assert result.params.coef.shape == (1, p)
    assert result.params.covariance.shape == (p, p)


def test_the_shared_algorithm_converges_to_pyplnmodels_optimum(oaks):
    """Within the chapter's budget, the ELBO is within 0.1% of pyPLNmodels' default fit."""
    trace = level2.fit(oaks, CONVERGENCE_ITERATIONS).elbo_trace
    final_stirling = float(trace[-1]) + stirling_correction(oaks.counts)
    assert abs(final_stirling - PYPLNMODELS_ELBO_STIRLING) <= 1e-3 * abs(PYPLNMODELS_ELBO_STIRLING)
    assert np.all(np.diff(np.asarray(trace)[50:]) > -1.0), "after the first steps the ELBO rises"


def counting_optimizer(base):
    """An optimizer whose update counts how often it is called (i.e. traced under jit)."""
    calls = {"update": 0}

    def update(grads, state, params=None):
        calls["update"] += 1
        return base.update(grads, state, params)

    return optax.GradientTransformation(base.init, update), calls


@pytest.mark.parametrize(
    ("level", "expected_calls"),
    [(0, 2 * 3), (1, 1), (2, 1), (3, 1), (4, 1)],
    ids=["level0-eager-every-step", "level1", "level2", "level3", "level4"],
)
def test_loop_body_is_traced_once_for_jitted_levels(oaks, level, expected_calls):
    """Two fits with the same shapes trace the optimizer update once (levels 1-4), while
    the eager level runs its Python body at every one of the 2 x 3 steps."""
    optimizer, calls = counting_optimizer(optax.adam(0.05))
    LEVELS[level].fit(oaks, 3, optimizer=optimizer)
    LEVELS[level].fit(oaks, 3, optimizer=optimizer)
    assert calls["update"] == expected_calls


def test_level2_compiles_one_program_for_repeated_calls(oaks):
    """A second call with the same shapes and static arguments reuses the compiled program."""
    optimizer = optax.adam(0.05)
    with count_compilations() as counted:
        level2.fit(oaks, 4, optimizer=optimizer)
        level2.fit(oaks, 4, optimizer=optimizer)
    assert counted.traces == 1


def test_level3_plain_class_is_rejected_inside_scan(oaks):
    """The chapter's error: a plain class is not a pytree, so scan cannot carry it."""
    with pytest.raises(TypeError, match=r"PlainContainer.*is not a valid JAX type"):
        level3.fit(oaks, 2, container=level3.PlainContainer)


@pytest.mark.parametrize("container", [level3.NamedTupleContainer, level3.DataclassContainer])
def test_level3_pytree_containers_agree(oaks, container):
    """NamedTuple and registered dataclass carry the same state to the same result."""
    result = level3.fit(oaks, 5, container=container)
    reference = LEVELS[2].fit(oaks, 5)
    np.testing.assert_allclose(result.elbo_trace, reference.elbo_trace, rtol=1e-6)


def test_level3_dataclass_is_frozen(oaks):
    state = level3.initial_container(oaks, optax.adam(0.05), level3.DataclassContainer)
    with pytest.raises(dataclasses.FrozenInstanceError):
        state.params = None


def test_level4_round_trip_keeps_every_field(oaks):
    """tree_unflatten(tree_flatten(model)) restores data, variational and model parameters."""
    model = level4.PLN.initialize(oaks)
    leaves, treedef = jax.tree.flatten(model)
    rebuilt = jax.tree.unflatten(treedef, leaves)
    for name in ("data", "variational", "params"):
        for a, b in zip(
            jax.tree.leaves(getattr(model, name)), jax.tree.leaves(getattr(rebuilt, name))
        ):
            assert a is b
    assert isinstance(rebuilt.data, PLNData)


def test_level4_aux_data_holds_only_hashable_sizes(oaks):
    """The data arrays are children; aux data is a tuple of ints (hashed on every call)."""
    model = level4.PLN.initialize(oaks)
    children, aux = model.tree_flatten()
    assert aux == oaks.counts.shape
    assert all(isinstance(size, int) for size in aux)
    hash(aux)
    assert any(leaf is oaks.counts for leaf in jax.tree.leaves(children))


def test_level4_methods_are_pure(oaks):
    """step returns a new model and leaves the old one untouched (no global writes)."""
    model = level4.PLN.initialize(oaks)
    optimizer = optax.adam(0.05)
    before = model.variational.latent_mean
    new_model, _, _ = model.step(optimizer.init(model.variational), optimizer)
    assert new_model is not model
    assert model.variational.latent_mean is before
    assert not jnp.allclose(new_model.variational.latent_mean, before)
