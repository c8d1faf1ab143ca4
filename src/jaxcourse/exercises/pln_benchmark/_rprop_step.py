"""Checker for the PLN benchmark chapter's exercise on one torch-style Rprop step."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from ...checks import call_answer, close, exercise_checker, require

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
    from ...optim import RpropState, rprop

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


@exercise_checker(
    hints=(
        "Work entry by entry with jnp.sign and jnp.where (no Python if, so that it runs "
        "under jit): compare sign(grad) with prev_sign to get a factor 1.2, 0.5 or 1 for "
        "the step.",
        "sign * prev_sign > 0 grows the step, < 0 halves it, == 0 keeps it; clip to [1e-6, "
        "50] after scaling. Where the sign flipped the entry does not move and remembers 0;"
        " jnp.sign(0) is 0, so a zero gradient neither moves nor grows. Move against the "
        "gradient: x - sign * step.",
    )
)
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
        for how in ("under jit", "eagerly"):
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
            agree = np.sign(np.asarray(grad)) * np.asarray(prev_sign)
            raw = np.asarray(step) * np.where(agree > 0, 1.2, np.where(agree < 0, 0.5, 1.0))
            swapped = np.asarray(step) * np.where(agree > 0, 0.5, np.where(agree < 0, 1.2, 1.0))
            first = (np.asarray(prev_sign) == 0) & (np.asarray(grad) != 0)
            require(
                close(got_step, expected_step) or not close(got_step, raw),
                f"({how}) your step sizes are not clipped after scaling: {raw.min():.3g} and "
                f"{raw.max():.3g} fall outside [1e-6, 50]. Clip the grown or shrunk step, "
                "jnp.clip(step * factor, 1e-6, 50).",
            )
            require(
                close(got_step, expected_step) or not close(got_step, np.clip(swapped, 1e-6, 50.0)),
                f"({how}) your steps shrink where the sign holds and grow where it flips: the "
                "step grows by 1.2 while the sign holds and halves (0.5) on a flip.",
            )
            require(
                close(got_step, expected_step)
                or not first.any()
                or close(got_step[first], np.asarray(step)[first])
                or not close(got_step[~first], expected_step[~first]),
                f"({how}) where the previous sign is 0 (a first step, or just after a flip) your "
                "step changed: it keeps its size; only a held sign (sign * prev_sign > 0) grows it.",
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
