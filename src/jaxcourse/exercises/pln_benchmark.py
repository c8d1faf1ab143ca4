"""Checkers for the PLN benchmark chapter's exercises."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from ..checks import exercise_checker, require


@exercise_checker("time to reach a target ELBO")
def check_time_to_target(time_to_target):
    """`time_to_target(elbo, times, target)`: the first time the trace reaches `target`, or None."""
    elbo = np.array([-9.0, -5.0, -6.0, -2.0, -1.0, -3.0])
    times = np.array([0.5, 1.0, 1.5, 2.0, 2.5, 3.0])
    cases = [(-5.5, 1.0), (-5.0, 1.0), (-2.5, 2.0), (-1.0, 2.5), (-9.5, 0.5)]
    for target, expected in cases:
        got = time_to_target(elbo, times, target)
        require(got is not None, f"for target {target} you returned None, but the trace reaches it.")
        require(
            not (isinstance(got, (int, np.integer)) and float(got) != expected),
            f"for target {target} you returned {got}: that looks like an index; return the time "
            "at that index.",
        )
        require(
            abs(float(got) - expected) < 1e-12,
            f"for target {target} expected {expected} (the FIRST time the ELBO is at least the "
            f"target), got {got}. The trace is not monotone: do not use its last crossing.",
        )
    require(
        time_to_target(elbo, times, 0.0) is None,
        "a target the trace never reaches must give None, not a time.",
    )


def _small_problem():
    from ..pln import Variational, init_variational, simulate

    data = simulate(25, 4, key=jax.random.key(3), n_covariates=2).data
    start = init_variational(data)
    wobble = 0.2 * jnp.cos(jnp.arange(start.latent_mean.size, dtype=jnp.float32)).reshape(start.latent_mean.shape)
    return data, Variational(start.latent_mean + wobble, start.latent_sqrt_var + 0.5 * wobble**2)


@exercise_checker("the analytic gradient in M")
def check_latent_mean_gradient(latent_mean_gradient):
    """`latent_mean_gradient(data, variational)` must equal dJ/dM of the profiled ELBO."""
    from ..pln import closed_form_params, profiled_elbo

    data, variational = _small_problem()
    got = jnp.asarray(latent_mean_gradient(data, variational))
    expected = jax.jit(jax.grad(profiled_elbo, argnums=1))(data, variational).latent_mean
    require(got.shape == expected.shape, f"return an (n, p) array like M; got shape {got.shape}.")
    scale = float(jnp.max(jnp.abs(expected)))
    if float(jnp.max(jnp.abs(got - expected))) > 1e-3 * scale:
        params = closed_form_params(data, variational)
        rate = jnp.exp(data.offsets + variational.latent_mean + 0.5 * variational.latent_sqrt_var**2)
        residuals = variational.latent_mean - data.covariates @ params.coef
        poisson_only = data.counts - rate
        with_sigma = poisson_only - residuals @ params.covariance
        require(
            not np.allclose(got, poisson_only, rtol=1e-3, atol=1e-3 * scale),
            "you have the Poisson part Y - A; the Gaussian prior adds -(M - XB) Omega.",
        )
        require(
            not np.allclose(got, with_sigma, rtol=1e-3, atol=1e-3 * scale),
            "you multiplied the residuals by Sigma; the gradient needs its inverse Omega.",
        )
        require(False, "your gradient differs from jax.grad(profiled_elbo). Check A = exp(O + M + S^2/2).")


@exercise_checker("one torch-style Rprop step")
def check_rprop_step(rprop_step):
    """`rprop_step(x, grad, step, prev_sign) -> (x, step, sign)` must follow torch's Rprop rule
    (etas 0.5 and 1.2, steps clipped to [1e-6, 50]) for minimising a loss."""
    from ..optim import RpropState, rprop

    x = jnp.array([1.0, 1.0, 1.0, 1.0, 1.0, 1.0])
    grad = jnp.array([2.0, -3.0, 1.0, -1.0, 4.0, 0.0])
    step = jnp.array([0.1, 0.1, 0.2, 1e-6, 45.0, 0.3])
    prev_sign = jnp.array([1, -1, -1, 1, 1, 1], dtype=jnp.int8)
    optimizer = rprop(0.1, step_sizes=(1e-6, 50.0))
    updates, state = optimizer.update(grad, RpropState(step, prev_sign))
    got_x, got_step, got_sign = (np.asarray(a, dtype=np.float64) for a in rprop_step(x, grad, step, prev_sign))
    expected_x = np.asarray(x + updates)
    require(
        not np.allclose(got_x, np.asarray(x - updates)),
        "you moved uphill: Rprop minimises, so each entry moves against the sign of its gradient.",
    )
    require(
        np.allclose(got_step, np.asarray(state.step_sizes)),
        f"step sizes {got_step} should be {np.asarray(state.step_sizes)}: grow by 1.2 when the sign "
        "stays, shrink by 0.5 when it flips, keep it when the previous sign was 0, and clip to [1e-6, 50].",
    )
    require(
        got_x[2] == 1.0 and got_x[3] == 1.0,
        "after a sign flip torch does not move that entry at all this step.",
    )
    require(np.allclose(got_x, expected_x), f"new x should be {expected_x}, got {got_x}.")
    require(
        np.allclose(got_sign, np.asarray(state.prev_signs)),
        "the sign to remember is 0 where the sign flipped (so that the next step neither grows "
        "nor shrinks), and sign(grad) elsewhere.",
    )


@exercise_checker("a Newton step with momentum and restart")
def check_momentum_update(momentum_update):
    """`momentum_update(grad, curvature, velocity, momentum) -> new velocity` must follow
    `optim.newton_momentum` with learning rate 1, for minimising a loss."""
    from ..optim import NewtonMomentumState, newton_momentum

    curvature = jnp.array([1.0, 2.0, 4.0, 0.5])
    velocity = jnp.array([-0.5, 0.25, -1.0, 0.2])
    downhill = jnp.array([0.5, -0.5, 0.2, 0.1])  # sum(g * v) = -0.555: keep the momentum
    uphill = jnp.array([-1.0, 0.5, -0.3, -0.4])  # sum(g * v) = 0.845: restart
    optimizer = newton_momentum(1.0, momentum=0.9)
    for name, grad in (("downhill", downhill), ("uphill", uphill)):
        expected, _ = optimizer.update(grad, NewtonMomentumState(velocity), curvature=curvature)
        got = np.asarray(momentum_update(grad, curvature, velocity, 0.9), dtype=np.float64)
        require(got.shape == expected.shape, f"return an array shaped like grad; got shape {got.shape}.")
        if np.allclose(got, expected, atol=1e-6):
            continue
        newton = -np.asarray(grad / curvature)
        require(
            not np.allclose(got, -np.asarray(expected), atol=1e-6),
            "your update has the wrong sign: it should go against the gradient of the loss.",
        )
        entrywise = np.where(np.asarray(grad * velocity) > 0, 0.0, 0.9 * np.asarray(velocity)) + newton
        require(
            not np.allclose(got, entrywise, atol=1e-6),
            "the restart test is one number for the whole update, sum(grad * velocity), "
            "not a test entry by entry.",
        )
        if name == "downhill":
            require(
                not np.allclose(got, newton, atol=1e-6),
                "here sum(grad * velocity) < 0: the last update still points downhill, so carry "
                "0.9 * velocity along with the Newton step -grad / curvature.",
            )
        else:
            require(
                not np.allclose(got, 0.9 * np.asarray(velocity) + newton, atol=1e-6),
                "here sum(grad * velocity) > 0: the last update now points uphill, so drop the "
                "momentum for this step and return just -grad / curvature.",
            )
        require(False, f"for the {name} case expected {np.asarray(expected)}, got {got}.")


FUSION_SHAPE = (11_600, 114)
"""The size at which the column-sums checker asks XLA what it writes: oaks stacked 100 times."""

COLUMN_SUMS_SHAPES = ((300, 7), (1, 5), (128, 1))
"""Shapes whose column sums the checker compares: rows that are no multiple of a block, a single
row, a single column."""


def _column_sums_values(column_sums, x, under_jit: bool) -> np.ndarray:
    """`column_sums(x)`, eagerly or under jit, as NumPy; a failure becomes a hint where it is a
    typical one."""
    try:
        got = jax.jit(column_sums)(x) if under_jit else column_sums(x)
    except jax.errors.TracerArrayConversionError:
        require(False, "under jit x is a tracer, which NumPy cannot read: sum with jnp, not np.")
    except (TypeError, ValueError) as error:
        message = str(error)
        require(
            "reshape" not in message,
            f"your code cuts the rows into blocks and fails for {x.shape[0]} rows ({message[:100]}). "
            "Column sums must work for any number of rows, and on this jax blocks do not help.",
        )
        require(
            not any(word in message for word in ("dot_general", "matmul", "does not match previous terms")),
            f"the shapes do not fit a product ({message[:100]}): a vector of ones that adds up the "
            "rows needs one entry per row.",
        )
        raise
    require(got is not None, "return the column sums.")
    return np.asarray(got, np.float64)


def _require_column_sums_values(column_sums, shape) -> None:
    """The values of `column_sums` on one random float32 array of `shape`, eagerly and under jit."""
    x = jnp.asarray(np.random.default_rng(5).normal(size=shape), jnp.float32)
    expected = np.asarray(x, np.float64).sum(axis=0)
    for under_jit in (False, True):
        how = "under jit" if under_jit else "eagerly"
        got = _column_sums_values(column_sums, x, under_jit)
        require(
            got.shape != (),
            f"for shape {shape} you returned one number: that sums every entry. Column sums add "
            "over the rows only, one number per column (axis=0).",
        )
        require(
            got.shape != (shape[0],) or shape[0] == shape[1],
            f"for shape {shape} you returned {shape[0]} numbers, one per row: those are row sums. "
            "Column sums add over the rows, one number per column.",
        )
        require(got.shape == expected.shape, f"for shape {shape} expected shape {expected.shape}, got {got.shape}.")
        require(
            np.allclose(got, expected, rtol=1e-5, atol=1e-5),
            f"for shape {shape}, {how}, expected {expected}, got {got}.",
        )


def _require_one_loop(column_sums) -> None:
    """For `x = a * b` at `FUSION_SHAPE`, XLA writes no array as large as `x` before summing."""
    from ..hlo import intermediate_arrays

    rows = COLUMN_SUMS_SHAPES[0]
    n_operations = len(jax.make_jaxpr(column_sums)(jnp.zeros(rows, jnp.float32)).jaxpr.eqns)
    require(
        n_operations < rows[0],
        f"your code adds the rows one by one in a Python loop: jit unrolls it into {n_operations} "
        f"operations for {rows[0]} rows. One loop means one loop in the compiled program: let one "
        "jnp reduction add up the rows.",
    )
    operands = [jax.ShapeDtypeStruct(FUSION_SHAPE, jnp.float32)] * 2
    written = intermediate_arrays(lambda a, b: column_sums(a * b), *operands, shape=FUSION_SHAPE)
    if not written:
        return
    primitives = {eq.primitive.name for eq in jax.make_jaxpr(column_sums)(operands[0]).jaxpr.eqns}
    version = f"jax {jax.__version__}"
    require(
        not {"reshape", "dot_general"} <= primitives,
        f"the numbers are right, but to cut a * b into blocks of rows XLA writes it to memory, "
        f"rearranged (it wrote {written}). On {version} the blocks cost a pass instead of saving one.",
    )
    require(
        "dot_general" not in primitives,
        f"the numbers are right, but for x = a * b XLA writes a * b to memory before it sums (it "
        f"wrote {written}): on {version} a product with a vector of ones is a dot of its own, "
        "outside the loop that computes a * b. A plain reduction over the rows is fused.",
    )
    require(False, f"the numbers are right, but for x = a * b XLA writes {written} to memory before it sums.")


@exercise_checker("column sums in one loop")
def check_column_sums(column_sums):
    """`column_sums(x)`: `jnp.sum(x, axis=0)` of any 2-D `x`, eagerly and under jit, computed
    so that for `x = a * b` XLA writes no array as large as `x` to memory."""
    for shape in COLUMN_SUMS_SHAPES:
        _require_column_sums_values(column_sums, shape)
    _require_one_loop(column_sums)
