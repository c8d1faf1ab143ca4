"""Shared test settings: four simulated CPU devices, and small fixtures."""

import jax

# Must happen before any JAX operation; the sharding tests need several devices, and a
# single-device computation is unaffected (it runs on device 0).
jax.config.update("jax_num_cpu_devices", 4)

import pytest  # noqa: E402


@pytest.fixture
def key():
    """A fresh typed PRNG key."""
    return jax.random.key(0)
