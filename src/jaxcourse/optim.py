"""Optimizers for the PLN fits, as optax transformations.

* `rprop`: follows `torch.optim.Rprop` step for step. `optax.rprop` (0.2.8) applies each step
  one iteration late; `tests/test_rprop.py` shows it.
* `newton_rprop`: per-entry Newton steps whose lengths adapt by Rprop's rule.
* `newton_momentum`: per-entry Newton steps with heavy-ball momentum and a restart.

The two Newton variants take the per-entry curvature as the extra argument `curvature=`.
Each optimizer made here can say how it was made: `describe(optimizer)`.
"""

from __future__ import annotations

import functools
import inspect
import weakref
from collections.abc import Callable
from typing import NamedTuple

import jax
import jax.numpy as jnp
import optax

from .reductions import total

_SETTINGS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
"""update function -> the call that made its optimizer; weak, so forgotten with the optimizer."""


def _settings_key(arguments: dict) -> tuple:
    """A dict key for a factory's bound arguments that tells apart settings Python calls equal
    but that build different optimizers: each value by its pytree structure (which names a
    NamedTuple's type, so a `Variational` mask is not the plain tuple `(True, False)`) and its
    leaves. Unhashable leaves make the key unhashable."""
    return tuple(
        (name, jax.tree.structure(value), tuple(jax.tree.leaves(value)))
        for name, value in arguments.items()
    )


def described(
    factory: Callable[..., optax.GradientTransformation],
) -> Callable[..., optax.GradientTransformation]:
    """Makes `factory` remember the call that built each optimizer, for `describe`, and return
    the optimizer it built before for the same settings.

    The optimizer itself is unchanged (an optax NamedTuple of two functions): the call is kept
    apart, keyed by its `update` function. An optimizer is a static argument of the jitted fits
    (`pln.level5.fit_compiled`), compared by identity: two calls with the same settings return
    one optimizer, so that a fit compiled for it serves both (`_settings_key`). Settings with
    leaves that cannot be hashed (an array as `learning_rate`) build a new one each time.
    """
    signature = inspect.signature(factory)
    built: dict = {}

    @functools.wraps(factory)
    def build(*args, **kwargs):
        call = signature.bind(*args, **kwargs)
        call.apply_defaults()
        key: tuple | None = _settings_key(call.arguments)
        try:
            return built[key]
        except KeyError:
            pass
        except TypeError:  # an unhashable setting
            key = None
        optimizer = factory(*args, **kwargs)
        settings = ", ".join(f"{name}={value!r}" for name, value in call.arguments.items())
        _SETTINGS[optimizer.update] = f"optim.{factory.__name__}({settings})"
        if key is not None:
            built[key] = optimizer
        return optimizer

    return build


def describe(optimizer: optax.GradientTransformation) -> str:
    """The call that built `optimizer`, every setting included, e.g.
    `optim.rprop(learning_rate=0.01, etas=(0.5, 1.2), step_sizes=(1e-10, 50.0))`.

    Optimizers not made by this module are described by their type only.
    """
    update = getattr(optimizer, "update", None)
    if update is None or not callable(update):
        raise TypeError(
            f"describe expects an optax transformation, got {type(optimizer).__name__}."
        )
    return _SETTINGS.get(update, f"{type(optimizer).__name__}(settings not recorded)")


def _check_etas(etas: tuple[float, float]) -> None:
    if not 0.0 < etas[0] < 1.0 < etas[1]:
        raise ValueError(f"etas must satisfy 0 < etas[0] < 1 < etas[1], got {etas}.")


def rprop_rule(grad, prev_sign, size, etas, bounds):
    """Rprop's rule, entry by entry, shared by `rprop` and `newton_rprop`.

    Args:
        grad: the gradient.
        prev_sign: the int8 sign remembered from the last step (0 at the start, and after a flip).
        size: the current step size (or step multiplier) of every entry.
        etas: (shrink, grow) factors.
        bounds: (smallest, largest) size.

    Returns:
        The new size (times `etas[1]` while the sign of `grad` stays, times `etas[0]` when it
        flips, clipped to `bounds`), whether each entry moves (not right after a flip), and
        the int8 sign to remember (0 after a flip, so the next step neither grows nor shrinks).
    """
    sign = jnp.sign(grad).astype(jnp.int8)
    agree = sign * prev_sign
    factor = jnp.where(agree > 0, etas[1], jnp.where(agree < 0, etas[0], 1.0))
    size = jnp.clip(size * factor, *bounds).astype(size.dtype)
    moves = agree >= 0
    return size, moves, jnp.where(moves, sign, jnp.int8(0))


def _map_unzip(fn, tree, *rest):
    """`jax.tree.map(fn, tree, *rest)` for an `fn` that returns a tuple: a tuple of trees."""
    out = jax.tree.map(fn, tree, *rest)
    treedef = jax.tree.structure(tree)
    return tuple(treedef.unflatten(part) for part in zip(*treedef.flatten_up_to(out)))


class RpropState(NamedTuple):
    """State of `scale_by_rprop`: one entry per parameter entry.

    Attributes:
        step_sizes: the current step size of every entry (positive).
        prev_signs: the sign of the gradient used at the last step, 0 where that step was
            skipped after a sign change (and before the first step). Stored as int8: a
            quarter of the memory traffic of a float copy, which matters for an update
            that is pure memory traffic.
    """

    step_sizes: optax.Params
    prev_signs: optax.Params


@described
def scale_by_rprop(
    learning_rate: float = 0.01,
    *,
    etas: tuple[float, float] = (0.5, 1.2),
    step_sizes: tuple[float, float] = (1e-6, 50.0),
) -> optax.GradientTransformation:
    """Rprop's update `-sign(g) * step`, with torch's rule for adapting the steps.

    For every entry, with the gradient g and the sign s_prev it had at the previous step:

    * same sign: the step grows by `etas[1]` (clipped to `step_sizes[1]`) and the entry moves;
    * opposite sign: the step shrinks by `etas[0]` (clipped to `step_sizes[0]`), the entry
      does *not* move, and its gradient counts as zero, so the next step neither grows nor
      shrinks it;
    * s_prev = 0 (first step, or just after a sign change): the step stays and the entry moves.

    Args:
        learning_rate: the initial step size of every entry (torch's `lr`).
        etas: (shrink, grow) factors, with `0 < shrink < 1 < grow`.
        step_sizes: (smallest, largest) step size.

    Returns:
        An optax `GradientTransformation` whose updates are to be *added* to the
        parameters (a descent direction for the loss whose gradient it receives).

    Torch multiplies the gradient by the previous one and takes the sign of the product;
    multiplying the signs instead gives the same answer except where that product
    underflows to zero in floating point, which torch then reads as "no information".
    """
    _check_etas(etas)
    min_step, max_step = step_sizes
    if not 0.0 <= min_step <= max_step:
        raise ValueError(f"step_sizes must satisfy 0 <= min <= max, got {step_sizes}.")
    if learning_rate < 0:
        raise ValueError(f"learning_rate must be non-negative, got {learning_rate}.")

    def init_fn(params):
        return RpropState(
            step_sizes=jax.tree.map(lambda p: jnp.full_like(p, learning_rate), params),
            prev_signs=jax.tree.map(lambda p: jnp.zeros_like(p, dtype=jnp.int8), params),
        )

    def update_fn(updates, state, params=None):
        del params

        def one(g, step, prev):
            step, _, sign = rprop_rule(g, prev, step, etas, step_sizes)
            # After a sign change the entry stays put (its remembered sign is 0).
            return -sign.astype(step.dtype) * step, step, sign

        new_updates, steps, signs = _map_unzip(one, updates, state.step_sizes, state.prev_signs)
        return new_updates, RpropState(steps, signs)

    return optax.GradientTransformation(init_fn, update_fn)


@described
def rprop(
    learning_rate: float = 0.01,
    *,
    etas: tuple[float, float] = (0.5, 1.2),
    step_sizes: tuple[float, float] = (1e-6, 50.0),
) -> optax.GradientTransformation:
    """`torch.optim.Rprop(params, lr=learning_rate, etas=etas, step_sizes=step_sizes)` in optax.

    Minimises: feed it the gradient of a loss, then `optax.apply_updates`. Same arguments
    and defaults as torch; see `scale_by_rprop` for the rule.

    >>> import jax.numpy as jnp, optax
    >>> opt = rprop(0.1)
    >>> x = jnp.array([1.0, -2.0])
    >>> state = opt.init(x)
    >>> updates, state = opt.update(2 * x, state)  # gradient of sum(x**2)
    >>> optax.apply_updates(x, updates)
    Array([ 0.9, -1.9], dtype=float32)
    """
    return scale_by_rprop(learning_rate, etas=etas, step_sizes=step_sizes)


PYPLNMODELS_RPROP = rprop(0.01, step_sizes=(1e-10, 50.0))
"""The optimizer pyPLNmodels' `Pln.fit()` uses: `torch.optim.Rprop(lr=0.01, step_sizes=(1e-10, 50))`.

Created once: jitted fits take the optimizer as a static argument, and a new object would
compile a new program."""


class NewtonRpropState(NamedTuple):
    """State of `newton_rprop`: a step multiplier and the last gradient sign per entry, and
    for its guard the loss at the last accepted point and the step taken from there."""

    multipliers: optax.Params
    prev_signs: optax.Params
    accepted_value: jax.Array
    last_step: optax.Params


GUARD_RISE = 1e-5
"""`newton_rprop` rejects a step after which the loss rose by more than this fraction of its
size (on oaks, about 0.3 nats: far above float32 rounding, far below a real overshoot)."""


@described
def newton_rprop(
    *,
    etas: tuple[float, float] = (0.7, 1.2),
    multipliers: tuple[float, float] = (1e-3, 50.0),
) -> optax.GradientTransformationExtraArgs:
    """Per-entry Newton steps whose lengths adapt like Rprop's.

    The update of every entry is `-eta * g / c`, where g is the gradient of the loss, c > 0
    a per-entry curvature (the diagonal of the Hessian, or an estimate of it) passed as the
    extra argument `curvature=` (a pytree like the parameters), and eta a multiplier that
    Rprop's rule adapts: times `etas[1]` while the sign of g stays, times `etas[0]` (and no
    move) when it flips, clipped to `multipliers`.

    Where the curvature estimate is right the Newton step is right from the start; where it
    overestimates (in the PLN model: directions along which Sigma adapts too) eta grows
    geometrically, as Rprop's step does. Unlike Rprop's step, the Newton step shrinks with
    the gradient, so the last iterations do not oscillate at a fixed step size.

    A guard keeps the growing multipliers from running away: given the loss as the extra
    argument `value=` (the PLN loop passes it), a step after which the loss rose by more than
    `GUARD_RISE` of its size is rejected: the next update goes halfway back along it, and
    every multiplier shrinks by `etas[0]`. Without `value=` (or where it is NaN) the guard is off.
    """
    _check_etas(etas)

    def init_fn(params):
        return NewtonRpropState(
            multipliers=jax.tree.map(jnp.ones_like, params),
            prev_signs=jax.tree.map(lambda p: jnp.zeros_like(p, dtype=jnp.int8), params),
            accepted_value=jnp.asarray(jnp.inf, jnp.result_type(*jax.tree.leaves(params))),
            last_step=jax.tree.map(jnp.zeros_like, params),
        )

    def update_fn(updates, state, params=None, *, curvature, value=None, **extra_args):
        del params, extra_args
        value = jnp.asarray(jnp.nan if value is None else value, state.accepted_value.dtype)
        rose = value > state.accepted_value + GUARD_RISE * jnp.abs(state.accepted_value)

        def one(g, c, eta, prev):
            eta, moves, sign = rprop_rule(g, prev, eta, etas, multipliers)
            return jnp.where(moves, -eta * g / c, 0.0).astype(g.dtype), eta, sign

        new_updates, etas_, signs = _map_unzip(
            one, updates, curvature, state.multipliers, state.prev_signs
        )
        # Rejected: back halfway along the last step, shorter multipliers, signs forgotten.
        step = jax.tree.map(
            lambda u, last: jnp.where(rose, -0.5 * last, u), new_updates, state.last_step
        )
        last_step = jax.tree.map(
            lambda u, last: jnp.where(rose, 0.5 * last, u), new_updates, state.last_step
        )
        etas_ = jax.tree.map(
            lambda new, old: jnp.where(rose, jnp.maximum(old * etas[0], multipliers[0]), new),
            etas_,
            state.multipliers,
        )
        signs = jax.tree.map(lambda s: jnp.where(rose, jnp.int8(0), s), signs)
        accepted = jnp.where(rose | jnp.isnan(value), state.accepted_value, value)
        return step, NewtonRpropState(etas_, signs, accepted, last_step)

    return optax.GradientTransformationExtraArgs(init_fn, update_fn)


RESTARTS = (True, False, "entry")
"""The restart rules of `newton_momentum`: on the slope summed over all entries, none, or
entry by entry."""


class NewtonMomentumState(NamedTuple):
    """State of `newton_momentum`: the last update applied, one entry per parameter entry."""

    velocity: optax.Params


@described
def newton_momentum(
    learning_rate: float = 1.0,
    *,
    momentum: float = 0.9,
    restart: bool | str = True,
    slope_mask: optax.Params | None = None,
) -> optax.GradientTransformationExtraArgs:
    """Per-entry Newton steps with heavy-ball momentum that restarts when it points uphill.

    The update is `v = momentum * v_prev - learning_rate * g / c`: g is the gradient of the
    loss, c > 0 a per-entry curvature passed as the extra argument `curvature=` (a pytree
    like the parameters), and v_prev the last update. When the momentum points uphill,
    `sum(g * v_prev) > 0` over all entries, it is dropped for that step (the "gradient
    restart" of O'Donoghue and Candes, 2015).

    Why it helps: a diagonal Newton step is right for the entries that the data pin down,
    but in the PLN model many entries (zero counts) are held only by the prior term, whose
    curvature couples the species through Omega. Along those few collective directions
    the diagonal step is far too short, and plain Newton iterations creep along them at a
    rate close to one. Momentum accumulates the steps along a direction that keeps the same
    sign, which shortens such a creep from hundreds of iterations to tens; the restart
    stops the accumulated velocity from overshooting once the direction changes.

    When the parameters are split over devices (inside `shard_map`), pass the extra argument
    `reduce=`, a function that sums a value over all devices (`lax.psum` over the mesh axis),
    so that every device takes the same restart decision.

    Args:
        learning_rate: the fraction of the Newton step taken (1 is the full step).
        momentum: the fraction of the last update carried over, in [0, 1).
        restart: drop the momentum for a step when it points uphill (True); always carry
            it (False, plain heavy ball: for comparison); or `"entry"`, drop it entry by
            entry where g_ij * v_ij > 0, an elementwise test that needs no sum over all
            entries (so no pass of its own; the profiling chapter counts what it saves and
            the iterations it costs).
        slope_mask: with `restart=True`, which parameters the slope sums over: None for all
            of them, or a pytree of bools with the parameters' structure, True where a leaf
            counts (as `optax.masked` takes a mask). Level 5 sums over M only
            (`pln.level5.NEWTON_MOMENTUM`): the slow directions that momentum speeds up, and
            that it overshoots, are in M, and a sum over S is one more pass per iteration.
    """
    if restart not in RESTARTS:
        raise ValueError(f"restart must be one of {RESTARTS}, got {restart!r}.")
    if not 0.0 <= momentum < 1.0:
        raise ValueError(f"momentum must be in [0, 1), got {momentum}.")
    if not learning_rate > 0:
        raise ValueError(f"learning_rate must be positive, got {learning_rate}.")
    if slope_mask is not None and restart is not True:
        raise ValueError(f"slope_mask goes with restart=True, got restart={restart!r}.")
    # Read once: the optimizer may be shared by later calls with an equal mask (`described`).
    mask_leaves = None if slope_mask is None else jax.tree.leaves(slope_mask)
    mask_structure = jax.tree.structure(slope_mask)
    if mask_leaves is not None and not all(isinstance(leaf, bool) for leaf in mask_leaves):
        raise TypeError(f"slope_mask must be a pytree of True/False, got {slope_mask!r}.")

    def counted(tree) -> list:
        """The leaves of `tree` that the slope sums over (`slope_mask`)."""
        leaves = jax.tree.leaves(tree)
        if mask_leaves is None:
            return leaves
        structure = jax.tree.structure(tree)
        if str(structure) != str(mask_structure):
            raise ValueError(
                f"slope_mask must have the parameters' structure {structure}, got {mask_structure}."
            )
        return [leaf for leaf, keep in zip(leaves, mask_leaves) if keep]

    def init_fn(params):
        return NewtonMomentumState(velocity=jax.tree.map(jnp.zeros_like, params))

    def update_fn(updates, state, params=None, *, curvature, reduce=None, **extra_args):
        del params, extra_args
        if restart == "entry":
            velocity = jax.tree.map(
                lambda g, c, v: (
                    jnp.where(g * v > 0, 0.0, momentum) * v - learning_rate * g / c
                ).astype(g.dtype),
                updates,
                curvature,
                state.velocity,
            )
            return velocity, NewtonMomentumState(velocity)
        # total: the sum XLA fuses with the product g * v, writing no (n, p) array (see reductions).
        slope = sum(total(g * v) for g, v in zip(counted(updates), counted(state.velocity)))
        if reduce is not None:  # the parameters are split over devices: sum the partial slopes
            slope = reduce(slope)
        carried = jnp.where(restart & (slope > 0), 0.0, momentum)
        velocity = jax.tree.map(
            lambda g, c, v: (carried * v - learning_rate * g / c).astype(g.dtype),
            updates,
            curvature,
            state.velocity,
        )
        return velocity, NewtonMomentumState(velocity)

    return optax.GradientTransformationExtraArgs(init_fn, update_fn)
