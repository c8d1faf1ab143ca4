"""Checkers for the PLN chapters' exercises."""

from __future__ import annotations

from functools import partial

import jax
import jax.numpy as jnp
import numpy as np

from ..checks import exercise_checker, require, require_registered_pytree


def _spd_matrix(p: int, scale: float, seed: int) -> np.ndarray:
    """A well-conditioned SPD matrix whose determinant is about scale**p."""
    rng = np.random.default_rng(seed)
    factor = rng.standard_normal((p, p)) / np.sqrt(p)
    return scale * (np.eye(p) + 0.3 * factor @ factor.T)


@exercise_checker("stable log-determinant")
def check_log_det(log_det):
    """`log_det(matrix)` must return log det of an SPD float32 matrix, even at p = 114."""
    for p, scale in [(3, 1.0), (20, 0.5), (114, 3.0), (114, 0.05)]:
        matrix = _spd_matrix(p, scale, seed=p)
        expected = np.linalg.slogdet(matrix)[1]
        got = float(log_det(jnp.asarray(matrix, dtype=jnp.float32)))
        require(
            np.isfinite(got),
            f"for a {p}x{p} matrix you returned {got}: det itself over- or underflows float32 "
            "(its largest value is about 3e38). Sum the logs of the Cholesky diagonal instead.",
        )
        require(
            abs(got - expected) <= 1e-3 * max(1.0, abs(expected)),
            f"for a {p}x{p} matrix you returned {got:.4f}, expected {expected:.4f}. "
            "Remember det(L L') = prod(diag(L))**2.",
        )
    traced = jax.jit(log_det)(jnp.asarray(_spd_matrix(5, 1.0, 0), dtype=jnp.float32))
    require(jnp.ndim(traced) == 0, "return a scalar, not an array.")


@exercise_checker("a pytree container")
def check_pytree_container(container_cls):
    """`container_cls(latent_mean=..., latent_sqrt_var=..., name=...)` must be a pytree whose
    leaves are the two arrays, whose `name` is static, and which round-trips every field."""
    mean = jnp.arange(6.0).reshape(2, 3)
    sqrt_var = jnp.full((2, 3), 0.5)
    state = container_cls(latent_mean=mean, latent_sqrt_var=sqrt_var, name="oaks")
    require_registered_pytree(
        state,
        "JAX sees your class as a single opaque leaf: register it, e.g. with "
        "@jax.tree_util.register_pytree_node_class and tree_flatten/tree_unflatten.",
    )
    leaves, treedef = jax.tree.flatten(state)
    require(
        len(leaves) == 2 and all(isinstance(leaf, jax.Array) for leaf in leaves),
        f"the leaves should be exactly the two arrays, got {len(leaves)} leaves. "
        "Arrays are children; only small hashable values such as the name go in aux_data.",
    )
    rebuilt = jax.tree.unflatten(treedef, leaves)
    for field in ("latent_mean", "latent_sqrt_var", "name"):
        require(
            hasattr(rebuilt, field),
            f"tree_unflatten lost the field '{field}': rebuild every field from children and aux_data.",
        )
    require(rebuilt.name == "oaks", "tree_unflatten must restore the name from aux_data.")
    require(
        bool(jnp.all(rebuilt.latent_mean == mean)) and bool(jnp.all(rebuilt.latent_sqrt_var == sqrt_var)),
        "the arrays come back in the wrong fields: unflatten them in the order you flattened them.",
    )
    doubled = jax.jit(lambda s: jax.tree.map(lambda x: 2 * x, s))(state)
    require(isinstance(doubled, container_cls), "jit should return an object of your class.")
    require(doubled.name == "oaks", "the name should survive jit as static data.")
    require(bool(jnp.all(doubled.latent_mean == 2 * mean)), "jit changed the arrays unexpectedly.")


def _reference_loop(step, state, n_iter):
    values = []
    for _ in range(n_iter):
        state, value = step(state)
        values.append(value)
    return state, jnp.stack(values)


@exercise_checker("a Python loop moved into scan")
def check_scan_loop(run_steps):
    """`run_steps(step, state, n_iter)` must return `(final_state, stacked_values)` like the
    Python loop, tracing `step` once under jit."""
    traces = {"count": 0}

    def step(state):
        traces["count"] += 1  # counts traces under jit, calls when eager
        mean, velocity = state
        velocity = 0.9 * velocity - 0.1 * (mean - 1.0)
        return (mean + velocity, velocity), jnp.sum((mean - 1.0) ** 2)

    start = (jnp.zeros(3), jnp.ones(3))
    n_iter = 25
    expected_state, expected_values = _reference_loop(step, start, n_iter)
    traces["count"] = 0
    state, values = jax.jit(partial(run_steps, step), static_argnums=1)(start, n_iter)
    require(
        traces["count"] == 1,
        f"under jit your loop traced step {traces['count']} times: a Python loop is unrolled "
        "at trace time. Use jax.lax.scan(body, state, length=n_iter).",
    )
    require(
        jnp.shape(values) == (n_iter,),
        f"the stacked values should have shape ({n_iter},), got {jnp.shape(values)}: "
        "return the per-step value as scan's second output.",
    )
    require(
        bool(jnp.allclose(values, expected_values, rtol=1e-5)),
        "the values differ from the Python loop: record the value returned by each step.",
    )
    require(
        all(bool(jnp.allclose(a, b, rtol=1e-5)) for a, b in zip(state, expected_state)),
        "the final state differs from the Python loop's: return scan's final carry.",
    )
