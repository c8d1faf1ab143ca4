"""Checkers for the PLN benchmark chapter's exercises."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from ..checks import call_answer, close, exercise_checker, require
from ..pln.constants import OAKS100_SHAPE
from ._jaxpr import primitive_names, traced_program


@exercise_checker("time to reach a target ELBO")
def check_time_to_target(time_to_target):
    """`time_to_target(elbo, times, target)`: the first time the trace reaches `target`, or None."""
    require(
        callable(time_to_target), "pass the function itself: check_time_to_target(time_to_target)."
    )
    elbo = np.array([-9.0, -5.0, -6.0, -2.0, -1.0, -3.0])
    times = np.array([0.5, 1.0, 1.5, 2.0, 2.5, 3.0])
    cases = [(-5.5, 1.0), (-5.0, 1.0), (-2.5, 2.0), (-1.0, 2.5), (-9.5, 0.5)]
    for target, expected in cases:
        got = call_answer(time_to_target, elbo, times, target, what="time_to_target")
        require(
            got is None or (not isinstance(got, (tuple, list, dict, str)) and np.ndim(got) == 0),
            f"return one time (a number) or None; got {type(got).__name__}.",
        )
        require(
            got is not None, f"for target {target} you returned None, but the trace reaches it."
        )
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
        call_answer(time_to_target, elbo, times, 0.0, what="time_to_target") is None,
        "a target the trace never reaches must give None, not a time.",
    )


def _small_problem(seed: int = 3, n: int = 25, p: int = 4, n_covariates: int = 2):
    from ..pln import Variational, init_variational, simulate

    data = simulate(n, p, key=jax.random.key(seed), n_covariates=n_covariates).data
    start = init_variational(data)
    wobble = 0.2 * jnp.cos(jnp.arange(start.latent_mean.size, dtype=jnp.float32)).reshape(
        start.latent_mean.shape
    )
    return data, Variational(start.latent_mean + wobble, start.latent_sqrt_var + 0.5 * wobble**2)


def _gradient_parts(data, variational) -> dict:
    """The pieces of dJ/dM, from which the checker builds the typical wrong answers."""
    from ..pln import closed_form_params

    params = closed_form_params(data, variational)
    latent_mean, sqrt_var = variational
    rate = jnp.exp(data.offsets + latent_mean + 0.5 * sqrt_var**2)
    residuals = latent_mean - data.covariates @ params.coef
    precision = jnp.linalg.inv(params.covariance)
    return {
        "poisson": data.counts - rate,
        "prior": residuals @ precision,
        "sigma_prior": residuals @ params.covariance,
        "rate_without_variance": data.counts - jnp.exp(data.offsets + latent_mean),
    }


def _require_hand_gradient(got, data, variational, how: str) -> None:
    from ..pln import profiled_elbo

    expected = jax.jit(jax.grad(profiled_elbo, argnums=1))(data, variational).latent_mean
    require(
        np.shape(got) == expected.shape and not isinstance(got, (tuple, list)),
        f"return one (n, p) array like M, shape {expected.shape}; got {type(got).__name__} of shape {np.shape(got)}.",
    )
    scale = float(jnp.max(jnp.abs(expected)))
    tolerance = dict(rtol=1e-3, atol=1e-3 * scale)
    if close(got, expected, **tolerance):
        return
    parts = _gradient_parts(data, variational)
    require(
        not close(got, parts["poisson"], **tolerance),
        f"({how}) you have the Poisson part Y - A; the Gaussian prior adds -(M - XB) Omega.",
    )
    require(
        not close(got, parts["poisson"] + parts["prior"], **tolerance),
        f"({how}) the prior term has the wrong sign: the gradient is Y - A MINUS (M - XB) Omega; "
        "the prior pulls M back towards XB.",
    )
    require(
        not close(got, parts["poisson"] - parts["sigma_prior"], **tolerance),
        f"({how}) you multiplied the residuals by Sigma; the gradient needs its inverse Omega.",
    )
    require(
        not close(got, parts["rate_without_variance"] - parts["prior"], **tolerance),
        f"({how}) the rate is missing the variance term: A = exp(O + M + S^2 / 2).",
    )
    require(
        False,
        f"({how}) your gradient differs from jax.grad(profiled_elbo). Check A = exp(O + M + S^2/2) "
        "and the closed-form B and Sigma at the point you are given.",
    )


@exercise_checker("the analytic gradient in M")
def check_latent_mean_gradient(latent_mean_gradient):
    """`latent_mean_gradient(data, variational)` must equal dJ/dM of the profiled ELBO on two
    problems, eagerly and under jit, computed from the formula, not by autodiff."""
    require(callable(latent_mean_gradient), "pass the function itself.")
    for data, variational in (_small_problem(), _small_problem(seed=8, n=40, p=6, n_covariates=3)):
        got = call_answer(latent_mean_gradient, data, variational, what="latent_mean_gradient")
        _require_hand_gradient(got, data, variational, "eagerly")
        jitted = call_answer(
            jax.jit(latent_mean_gradient),
            data,
            variational,
            what="latent_mean_gradient under jax.jit",
        )
        _require_hand_gradient(jitted, data, variational, "under jit")
    names = primitive_names(
        traced_program(latent_mean_gradient, *_small_problem(), what="latent_mean_gradient")
    )
    require(
        "add_any" not in names,
        "the numbers are right, but your program differentiates (its jaxpr adds up cotangents with "
        "add_any, which only autodiff writes): the exercise asks for the formula "
        "Y - A - (M - XB) Omega, written by hand, which costs one pass and no backward pass.",
    )
    require(
        "lgamma" not in names,
        "the numbers are right, but your program evaluates log(Y!), a piece of the ELBO itself: the "
        "hand-derived gradient never needs the ELBO's value. Write Y - A - (M - XB) Omega.",
    )


RPROP_CASES = (
    # (grad, prev_sign, step): every pair of signs (zeros included), steps at both clip limits
    (
        [2.0, -3.0, 1.0, -1.0, 4.0, 0.0, 0.0, 0.0, 5.0, -2.0],
        [1, -1, -1, 1, 1, 1, -1, 0, 0, 0],
        [0.1, 0.1, 0.2, 1e-6, 45.0, 0.3, 0.3, 0.3, 0.4, 0.4],
    ),
    ([0.0, 0.0, 0.0], [0, 0, 0], [0.5, 1e-6, 50.0]),  # nothing to do: nothing may move
)


def _rprop_expected(x, grad, step, prev_sign):
    from ..optim import RpropState, rprop

    optimizer = rprop(0.1, step_sizes=(1e-6, 50.0))
    updates, state = optimizer.update(grad, RpropState(step, prev_sign))
    return np.asarray(x + updates), np.asarray(state.step_sizes), np.asarray(state.prev_signs)


def _rprop_result(rprop_step, args, how: str):
    answer = jax.jit(rprop_step) if how == "under jit" else rprop_step
    result = call_answer(answer, *args, what=f"rprop_step ({how})")
    require(
        isinstance(result, tuple) and len(result) == 3,
        f"rprop_step must return three arrays (new x, new step sizes, sign to remember); got "
        f"{type(result).__name__}"
        + (f" of {len(result)}" if isinstance(result, tuple) else "")
        + ".",
    )
    return [np.asarray(a, dtype=np.float64) for a in result]


@exercise_checker("one torch-style Rprop step")
def check_rprop_step(rprop_step):
    """`rprop_step(x, grad, step, prev_sign) -> (x, step, sign)` must follow torch's Rprop rule
    (etas 0.5 and 1.2, steps clipped to [1e-6, 50]) for minimising a loss, for every pair of
    signs, zero gradients included, eagerly and under jit."""
    require(callable(rprop_step), "pass the function itself.")
    for grad, prev_sign, step in RPROP_CASES:
        grad, step = jnp.array(grad), jnp.array(step)
        prev_sign = jnp.array(prev_sign, dtype=jnp.int8)
        x = jnp.ones_like(grad)
        expected_x, expected_step, expected_sign = _rprop_expected(x, grad, step, prev_sign)
        zero = np.asarray(grad) == 0
        for how in ("eagerly", "under jit"):
            got_x, got_step, got_sign = _rprop_result(rprop_step, (x, grad, step, prev_sign), how)
            require(
                all(a.shape == grad.shape for a in (got_x, got_step, got_sign)),
                f"each of the three results must have the shape of x, {grad.shape}.",
            )
            require(
                np.allclose(expected_x, np.asarray(x))
                or not close(got_x, 2 * np.asarray(x) - expected_x),
                "you moved uphill: Rprop minimises, so each entry moves against the sign of its gradient.",
            )
            require(
                np.all(got_x[zero] == 1.0) and np.all(got_sign[zero] == 0),
                f"({how}) where the gradient is exactly 0 the sign is 0: that entry must not move, and "
                "the sign to remember is 0. (jnp.sign(0) is 0; a test such as grad >= 0 makes it +1.)",
            )
            require(
                close(got_step, expected_step),
                f"({how}) step sizes {got_step} should be {expected_step}: grow by 1.2 when the sign "
                "stays, shrink by 0.5 when it flips, keep it when either sign is 0, and clip to [1e-6, 50].",
            )
            flipped = np.asarray(grad) * np.asarray(prev_sign) < 0
            require(
                np.all(got_x[flipped] == 1.0),
                "after a sign flip torch does not move that entry at all this step.",
            )
            require(close(got_x, expected_x), f"({how}) new x should be {expected_x}, got {got_x}.")
            require(
                close(got_sign, expected_sign),
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
    tie = jnp.array([0.5, 1.0, 0.0, 0.0])  # sum(g * v) = 0 exactly: not uphill, keep the momentum
    optimizer = newton_momentum(1.0, momentum=0.9)
    cases = [
        (name, grad, how)
        for name, grad in (("downhill", downhill), ("uphill", uphill), ("tie", tie))
        for how in ("eagerly", "under jit")
    ]
    for name, grad, how in cases:
        expected, _ = optimizer.update(grad, NewtonMomentumState(velocity), curvature=curvature)
        answer = jax.jit(momentum_update) if how == "under jit" else momentum_update
        got = call_answer(answer, grad, curvature, velocity, 0.9, what=f"momentum_update ({how})")
        require(
            not isinstance(got, (tuple, list, dict, str)),
            f"return one array, the new velocity, shaped like grad; got a {type(got).__name__}.",
        )
        got = np.asarray(got, dtype=np.float64)
        require(
            got.shape == expected.shape, f"return an array shaped like grad; got shape {got.shape}."
        )
        if np.allclose(got, expected, atol=1e-6):
            continue
        newton = -np.asarray(grad / curvature)
        require(
            not np.allclose(got, -np.asarray(expected), atol=1e-6),
            "your update has the wrong sign: it should go against the gradient of the loss.",
        )
        entrywise = (
            np.where(np.asarray(grad * velocity) > 0, 0.0, 0.9 * np.asarray(velocity)) + newton
        )
        require(
            not np.allclose(got, entrywise, atol=1e-6),
            "the restart test is one number for the whole update, sum(grad * velocity), "
            "not a test entry by entry.",
        )
        require(
            name != "tie",
            "here sum(grad * velocity) is exactly 0: the last update does not point uphill, so keep "
            "the momentum. The restart test is strict: sum(grad * velocity) > 0, not >= 0.",
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


FUSION_SHAPE = OAKS100_SHAPE
"""The size at which the column-sums checker asks XLA what it writes: oaks stacked 100 times."""

COLUMN_SUMS_SHAPES = ((300, 7), (1, 5), (128, 1))
"""Shapes whose column sums the checker compares: rows that are no multiple of a block, a single
row, a single column."""

SAVING_SHAPES = (OAKS100_SHAPE, (4096, 256))
"""Shapes at which the checker compares the estimated saving with the compiled programs'."""

SAVING_RTOL = 0.05
"""How close the estimate must come to the difference of the compiled programs' bytes (the
programs also move a few vectors the size of one row or column, which an estimate may leave out)."""


def _column_sums_values(sums, a, b, under_jit: bool, what: str) -> np.ndarray:
    """`sums(a, b)`, eagerly or under jit, as NumPy; a failure becomes a hint where it is a
    typical one."""
    blocks = (
        f"{what} cuts the rows into blocks and fails for {a.shape[0]} rows. Column sums must work "
        "for any number of rows."
    )
    product = "the shapes do not fit a product: a vector of ones that adds up the rows needs one entry per row."
    numpy = (
        jax.errors.TracerArrayConversionError,
        "",
        "under jit a and b are tracers, which NumPy cannot read: use jnp, not np.",
    )
    hints = (numpy,) + tuple(
        (error_class, fragment, hint)
        for error_class in (TypeError, ValueError)
        for fragment, hint in (
            ("reshape", blocks),
            ("dot_general", product),
            ("matmul", product),
            ("does not match previous terms", product),
        )
    )
    answer = jax.jit(sums) if under_jit else sums
    how = "under jax.jit" if under_jit else "eagerly"
    got = call_answer(answer, a, b, what=f"{what} ({how})", hints=hints)
    require(got is not None, f"{what} must return the column sums of a * b.")
    require(
        not isinstance(got, (tuple, list, dict, str)),
        f"{what} must return one array of column sums, not a {type(got).__name__}.",
    )
    return np.asarray(got, np.float64)


def _require_column_sums_values(sums, what: str) -> None:
    """The values of `sums(a, b)` on random float32 arrays of `COLUMN_SUMS_SHAPES`, eagerly and under jit."""
    rng = np.random.default_rng(5)
    for shape in COLUMN_SUMS_SHAPES:
        a, b = (jnp.asarray(rng.normal(size=shape), jnp.float32) for _ in range(2))
        expected = (np.asarray(a, np.float64) * np.asarray(b, np.float64)).sum(axis=0)
        for under_jit in (False, True):
            got = _column_sums_values(sums, a, b, under_jit, what)
            require(
                got.shape != (),
                f"for shape {shape} {what} returned one number: that sums every entry. Column sums add "
                "over the rows only, one number per column (axis=0).",
            )
            require(
                got.shape != (shape[0],) or shape[0] == shape[1],
                f"for shape {shape} {what} returned {shape[0]} numbers, one per row: those are row sums. "
                "Column sums add over the rows, one number per column.",
            )
            require(
                got.shape == expected.shape,
                f"for shape {shape} {what} must return shape {expected.shape}, got {got.shape}.",
            )
            require(
                np.allclose(got, expected, rtol=1e-5, atol=1e-5),
                f"for shape {shape}, {'under jit' if under_jit else 'eagerly'}, {what} should give {expected}, got {got}.",
            )


def _operands(shape) -> list:
    return [jax.ShapeDtypeStruct(shape, jnp.float32)] * 2


def _require_not_a_python_loop(sums, what: str) -> None:
    rows = COLUMN_SUMS_SHAPES[0]
    n_operations = len(traced_program(sums, *_operands(rows), what=what).jaxpr.eqns)
    require(
        n_operations < rows[0],
        f"{what} adds the rows one by one in a Python loop: jit unrolls it into {n_operations} "
        f"operations for {rows[0]} rows. Let one jnp operation add up the rows.",
    )


def _require_writes_the_product(sums) -> None:
    """For `a, b` at `FUSION_SHAPE`, XLA writes an array as large as `a * b` before summing."""
    from ..hlo import intermediate_arrays

    _require_not_a_python_loop(sums, "sums_through_memory")
    written = intermediate_arrays(sums, *_operands(FUSION_SHAPE), shape=FUSION_SHAPE)
    require(
        bool(written),
        f"the numbers are right, but for sums_through_memory XLA writes nothing as large as a * b on "
        f"jax {jax.__version__}: it computes the products inside the summing loop. Make the product "
        "the operand of an instruction of its own, for example a product with a vector of ones, "
        "which becomes a dot that reads a * b from memory.",
    )


def _require_one_loop(sums) -> None:
    """For `a, b` at `FUSION_SHAPE`, XLA writes no array as large as `a * b` before summing."""
    from ..hlo import intermediate_arrays

    _require_not_a_python_loop(sums, "sums_in_one_loop")
    written = intermediate_arrays(sums, *_operands(FUSION_SHAPE), shape=FUSION_SHAPE)
    if not written:
        return
    primitives = {
        eq.primitive.name
        for eq in traced_program(sums, *_operands(FUSION_SHAPE), what="sums_in_one_loop").jaxpr.eqns
    }
    version = f"jax {jax.__version__}"
    require(
        not {"reshape", "dot_general"} <= primitives,
        f"the numbers are right, but to cut a * b into blocks of rows XLA writes it to memory, "
        f"rearranged (it wrote {written}). On {version} the blocks cost a pass instead of saving one.",
    )
    require(
        "dot_general" not in primitives,
        f"the numbers are right, but for sums_in_one_loop XLA writes a * b to memory before it sums "
        f"(it wrote {written}): on {version} a product with a vector of ones is a dot of its own, "
        "outside the loop that computes a * b. A plain reduction over the rows is fused.",
    )
    require(
        False,
        f"the numbers are right, but for sums_in_one_loop XLA writes {written} to memory before it sums.",
    )


def _compiled_bytes(sums, shape) -> float:
    compiled = jax.jit(sums).lower(*_operands(shape)).compile()
    return float(compiled.cost_analysis()["bytes accessed"])


def _reference_forms():
    """The chapter's two forms: a product with ones (writes a * b) and the plain reduction."""
    return (lambda a, b: jnp.ones(a.shape[0], a.dtype) @ (a * b)), (
        lambda a, b: jnp.sum(a * b, axis=0)
    )


def _require_saving(bytes_saved) -> None:
    """`bytes_saved(n, p, itemsize)` within `SAVING_RTOL` of the difference of the bytes the two
    compiled forms access, at `SAVING_SHAPES`."""
    through_memory, one_loop = _reference_forms()
    for n, p in SAVING_SHAPES:
        measured = _compiled_bytes(through_memory, (n, p)) - _compiled_bytes(one_loop, (n, p))
        got = call_answer(bytes_saved, n, p, 4, what="bytes_saved")
        require(
            isinstance(got, (int, float, np.integer, np.floating)) and not isinstance(got, bool),
            f"bytes_saved must return one number of bytes, got {type(got).__name__}.",
        )
        got = float(got)
        if abs(got - measured) <= SAVING_RTOL * measured:
            continue
        entries = n * p
        require(
            not np.isclose(got, entries * 4, rtol=SAVING_RTOL),
            f"for n={n}, p={p} you counted writing a * b once ({got:,.0f} bytes). The loop that "
            "writes it is followed by one that reads it back: the array crosses memory twice.",
        )
        require(
            not np.isclose(got, 2 * entries, rtol=SAVING_RTOL)
            and not np.isclose(got, entries, rtol=SAVING_RTOL),
            f"for n={n}, p={p} you returned {got:,.0f}: that counts entries. Count bytes: multiply by itemsize.",
        )
        require(
            got < 3 * entries * 4,
            f"for n={n}, p={p} you returned {got:,.0f} bytes, more than both forms share: reading a and "
            "b costs the same in both forms, so it cancels. Count only what the first form moves extra.",
        )
        require(
            False,
            f"for n={n}, p={p} the compiled programs differ by {measured:,.0f} bytes (cost_analysis' "
            f"'bytes accessed'); your estimate is {got:,.0f}.",
        )


@exercise_checker("column sums that write the product to memory")
def check_sums_through_memory(sums_through_memory):
    """`sums_through_memory(a, b)`: the column sums of `a * b`, eagerly and under jit, compiled
    so that XLA writes `a * b` to memory before it sums."""
    require(
        callable(sums_through_memory),
        "pass the function itself: check_sums_through_memory(sums_through_memory).",
    )
    _require_column_sums_values(sums_through_memory, "sums_through_memory")
    _require_writes_the_product(sums_through_memory)


@exercise_checker("column sums in one loop")
def check_sums_in_one_loop(sums_in_one_loop):
    """`sums_in_one_loop(a, b)`: the column sums of `a * b`, eagerly and under jit, compiled so
    that XLA writes no array as large as `a * b` to memory."""
    require(
        callable(sums_in_one_loop),
        "pass the function itself: check_sums_in_one_loop(sums_in_one_loop).",
    )
    _require_column_sums_values(sums_in_one_loop, "sums_in_one_loop")
    _require_one_loop(sums_in_one_loop)


@exercise_checker("the bytes a fused sum saves")
def check_bytes_saved(bytes_saved):
    """`bytes_saved(n, p, itemsize)`: the memory traffic the fused column sums of `a * b` save
    over the form that writes `a * b`, checked against the two compiled programs' `cost_analysis`."""
    require(callable(bytes_saved), "pass the function itself: check_bytes_saved(bytes_saved).")
    _require_saving(bytes_saved)
