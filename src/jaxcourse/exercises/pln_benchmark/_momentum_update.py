"""Checker for the PLN benchmark chapter's exercise on a Newton step with momentum and restart."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from ...checks import call_answer, exercise_checker, require


@exercise_checker(
    hints=(
        "The update is momentum * velocity - grad / curvature, with the momentum replaced "
        "by 0 when the last update points uphill; use jnp.where so that it runs under jit.",
        "The restart test is ONE number for the whole vector, jnp.sum(grad * velocity) > 0 "
        "(strict: a sum of exactly 0 keeps the momentum), not a test entry by entry; the "
        "Newton step is -grad / curvature, against the gradient.",
    )
)
def check_momentum_update(momentum_update):
    """`momentum_update(grad, curvature, velocity, momentum) -> new velocity` must follow
    `optim.newton_momentum` with learning rate 1, for minimising a loss."""
    from ...optim import NewtonMomentumState, newton_momentum

    curvature = jnp.array([1.0, 2.0, 4.0, 0.5])
    velocity = jnp.array([-0.5, 0.25, -1.0, 0.2])
    downhill = jnp.array([0.5, -0.5, 0.2, 0.1])  # sum(g * v) = -0.555: keep the momentum
    uphill = jnp.array([-1.0, 0.5, -0.3, -0.4])  # sum(g * v) = 0.845: restart
    tie = jnp.array([0.5, 1.0, 0.0, 0.0])  # sum(g * v) = 0 exactly: not uphill, keep the momentum
    cases = [
        (name, grad, how, momentum)
        for name, grad in (("downhill", downhill), ("uphill", uphill), ("tie", tie))
        for how in ("eagerly", "under jit")
        for momentum in (0.9, 0.5)
    ]
    for name, grad, how, momentum in cases:
        optimizer = newton_momentum(1.0, momentum=momentum)
        expected, _ = optimizer.update(grad, NewtonMomentumState(velocity), curvature=curvature)
        answer = jax.jit(momentum_update) if how == "under jit" else momentum_update
        got = call_answer(
            answer, grad, curvature, velocity, momentum, what=f"momentum_update ({how})"
        )
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
        kept = float(jnp.sum(grad * velocity)) <= 0
        require(
            momentum == 0.9 or not (kept and np.allclose(got, 0.9 * velocity + newton, atol=1e-6)),
            f"with momentum={momentum} your update carries 0.9 * velocity: use the momentum "
            "argument, not a fixed 0.9.",
        )
        require(
            not np.allclose(got, np.where(kept, momentum, 0.0) * velocity - grad * curvature),
            "you multiplied the gradient by the curvature: the Newton step divides by it, "
            "-grad / curvature.",
        )
        require(
            kept or not np.allclose(got, 0.0),
            f"for the {name} case you returned zeros: a restart drops only the momentum term; "
            "the Newton step -grad / curvature stays.",
        )
        require(
            not np.allclose(got, -np.asarray(expected), atol=1e-6),
            "your update has the wrong sign: it should go against the gradient of the loss.",
        )
        entrywise = (
            np.where(np.asarray(grad * velocity) > 0, 0.0, momentum * np.asarray(velocity)) + newton
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
                "momentum * velocity along with the Newton step -grad / curvature.",
            )
        else:
            require(
                not np.allclose(got, momentum * np.asarray(velocity) + newton, atol=1e-6),
                "here sum(grad * velocity) > 0: the last update now points uphill, so drop the "
                "momentum for this step and return just -grad / curvature.",
            )
        require(False, f"for the {name} case expected {np.asarray(expected)}, got {got}.")
