"""`jaxcourse.optim.rprop` follows torch.optim.Rprop step for step; optax.rprop lags one step."""

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest
import torch

from jaxcourse.optim import PYPLNMODELS_RPROP, newton_momentum, newton_rprop, rprop

N_STEPS = 20


def quadratic(seed=0, dim=6):
    """A convex quadratic 0.5 x'Hx - b'x with a start far enough away to flip some signs."""
    rng = np.random.default_rng(seed)
    a = rng.normal(size=(dim, dim))
    return a @ a.T + np.eye(dim), rng.normal(size=dim), 3.0 * rng.normal(size=dim)


def torch_path(hessian, b, x0, **kwargs):
    x = torch.tensor(x0, dtype=torch.float64, requires_grad=True)
    opt = torch.optim.Rprop([x], **kwargs)
    h, bt = torch.tensor(hessian), torch.tensor(b)
    path = []
    for _ in range(N_STEPS):
        opt.zero_grad()
        (0.5 * x @ h @ x - bt @ x).backward()
        opt.step()
        path.append(x.detach().numpy().copy())
    return np.array(path)


def optax_path(optimizer, hessian, b, x0):
    h, bj = jnp.asarray(hessian), jnp.asarray(b)
    grad = jax.grad(lambda x: 0.5 * x @ h @ x - bj @ x)
    x = jnp.asarray(x0)
    state = optimizer.init(x)
    path = []
    for _ in range(N_STEPS):
        updates, state = optimizer.update(grad(x), state, x)
        x = optax.apply_updates(x, updates)
        path.append(np.asarray(x))
    return np.array(path)


@pytest.mark.parametrize(
    "settings",
    [
        {"lr": 0.1, "step_sizes": (1e-3, 1.0)},
        {"lr": 0.01, "step_sizes": (1e-10, 50.0)},
        {"lr": 0.5, "etas": (0.3, 1.5), "step_sizes": (1e-6, 2.0)},
    ],
)
def test_rprop_matches_torch_on_a_quadratic(settings):
    """20 float64 steps of our Rprop equal torch's to rounding, sign flips included."""
    hessian, b, x0 = quadratic()
    with jax.enable_x64(True):
        ours = optax_path(
            rprop(
                settings["lr"],
                etas=settings.get("etas", (0.5, 1.2)),
                step_sizes=settings["step_sizes"],
            ),
            hessian,
            b,
            x0,
        )
    theirs = torch_path(hessian, b, x0, **settings)
    np.testing.assert_allclose(ours, theirs, rtol=0, atol=1e-12)
    moves = np.diff(np.concatenate([x0[None], theirs]), axis=0)
    assert np.any(moves == 0.0), "the test must include torch's 'skip after a sign flip' steps"


def test_optax_rprop_applies_each_step_one_iteration_late():
    """optax 0.2.8's rprop returns a zero first update, then torch's first step, and so on.

    If a future optax fixes this, this test fails: then `optax.rprop` can replace ours.
    """
    hessian, b, x0 = quadratic()
    with jax.enable_x64(True):
        h, bj = jnp.asarray(hessian), jnp.asarray(b)
        grad = jax.grad(lambda x: 0.5 * x @ h @ x - bj @ x)
        late = optax.rprop(0.1, min_step_size=1e-3, max_step_size=1.0)
        x = jnp.asarray(x0)
        state = late.init(x)
        first, state = late.update(grad(x), state, x)
        np.testing.assert_array_equal(np.asarray(first), 0.0)
        second, _ = late.update(grad(x), state, x)
    torch_first = torch_path(hessian, b, x0, lr=0.1, step_sizes=(1e-3, 1.0))[0] - x0
    np.testing.assert_allclose(np.asarray(second), torch_first, atol=1e-12)


def test_pyplnmodels_settings():
    """The shared optimizer takes pyPLNmodels' first step: lr 0.01 against the gradient's sign."""
    x = jnp.array([1.0, -2.0, 0.0])
    updates, _ = PYPLNMODELS_RPROP.update(jnp.array([3.0, -1.0, 0.0]), PYPLNMODELS_RPROP.init(x))
    np.testing.assert_allclose(np.asarray(updates), [-0.01, 0.01, 0.0])


def test_rprop_works_on_pytrees_and_under_jit():
    """A dict of parameters, updated inside jit, gives the same as eager updates."""
    params = {"a": jnp.ones(3), "b": -jnp.ones((2, 2))}
    grads = {"a": jnp.array([1.0, -1.0, 0.0]), "b": jnp.ones((2, 2))}
    opt = rprop(0.2)
    state = opt.init(params)
    eager = opt.update(grads, state)
    jitted = jax.jit(opt.update)(grads, state)
    for left, right in zip(jax.tree.leaves(eager), jax.tree.leaves(jitted)):
        np.testing.assert_array_equal(np.asarray(left), np.asarray(right))


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"etas": (1.5, 1.2)}, "etas"),
        ({"step_sizes": (1.0, 0.1)}, "step_sizes"),
        ({"learning_rate": -1.0}, "learning_rate"),
    ],
)
def test_rprop_rejects_bad_settings(kwargs, match):
    """Settings torch rejects are rejected here too, with the argument named."""
    with pytest.raises(ValueError, match=match):
        rprop(**kwargs)


def test_newton_rprop_first_step_is_newton():
    """With multiplier 1, the first update is -g / curvature (a per-entry Newton step)."""
    opt = newton_rprop()
    x = jnp.array([1.0, 2.0])
    g, c = jnp.array([2.0, -4.0]), jnp.array([4.0, 2.0])
    updates, _ = opt.update(g, opt.init(x), x, curvature=c)
    np.testing.assert_allclose(np.asarray(updates), [-0.5, 2.0])


def test_newton_rprop_solves_a_diagonal_quadratic():
    """On a separable quadratic with its exact curvature, one step lands on the minimum."""
    h = jnp.array([1.0, 10.0, 100.0])
    x = jnp.array([3.0, -2.0, 1.0])
    opt = newton_rprop()
    updates, _ = opt.update(h * x, opt.init(x), x, curvature=h)
    np.testing.assert_allclose(np.asarray(optax.apply_updates(x, updates)), 0.0, atol=1e-6)


def test_newton_momentum_first_step_is_the_newton_step():
    """With no velocity yet, the update is -learning_rate * g / curvature."""
    opt = newton_momentum(0.5, momentum=0.9)
    x = jnp.array([1.0, 2.0])
    g, c = jnp.array([2.0, -4.0]), jnp.array([4.0, 2.0])
    updates, state = opt.update(g, opt.init(x), x, curvature=c)
    np.testing.assert_allclose(np.asarray(updates), [-0.25, 1.0])
    np.testing.assert_allclose(np.asarray(state.velocity), [-0.25, 1.0])


def test_newton_momentum_carries_the_last_update_while_it_points_downhill():
    """If sum(g * v) <= 0 the update is momentum * v - g / c; if > 0 the momentum is dropped."""
    opt = newton_momentum(1.0, momentum=0.5)
    x = jnp.array([0.0, 0.0])
    c = jnp.array([1.0, 1.0])
    _, state = opt.update(jnp.array([1.0, 1.0]), opt.init(x), x, curvature=c)  # v = [-1, -1]
    downhill, _ = opt.update(jnp.array([0.5, 0.0]), state, x, curvature=c)  # g . v = -0.5 < 0
    np.testing.assert_allclose(np.asarray(downhill), [-1.0, -0.5])
    uphill, _ = opt.update(jnp.array([-0.5, 0.0]), state, x, curvature=c)  # g . v = 0.5 > 0
    np.testing.assert_allclose(np.asarray(uphill), [0.5, 0.0])


def test_newton_momentum_restarts_entry_by_entry():
    """With restart="entry", only the entries where g_ij * v_ij > 0 drop their momentum; the
    same state and gradient as above, where the summed slope drops it for every entry."""
    opt = newton_momentum(1.0, momentum=0.5, restart="entry")
    x = jnp.array([0.0, 0.0])
    c = jnp.array([1.0, 1.0])
    _, state = opt.update(jnp.array([1.0, 1.0]), opt.init(x), x, curvature=c)  # v = [-1, -1]
    mixed, _ = opt.update(jnp.array([-0.5, 2.0]), state, x, curvature=c)  # g * v = [0.5, -2]
    np.testing.assert_allclose(np.asarray(mixed), [0.5, -2.5])


def test_newton_momentum_sums_the_slope_over_the_masked_leaves_only():
    """With `slope_mask`, the restart reads the slope of the leaves marked True only: here the
    first leaf points downhill and the second, left out, uphill, so the momentum is carried for
    both; without the mask the sum is uphill and it is dropped for both. Under `jit` too."""
    params = {"a": jnp.zeros(2), "b": jnp.zeros(2)}
    ones = {"a": jnp.ones(2), "b": jnp.ones(2)}
    mixed = {"a": jnp.array([0.5, 0.0]), "b": jnp.array([-2.0, 0.0])}  # g . v: -0.5 and +2
    for mask, carried in [({"a": True, "b": False}, True), (None, False)]:
        opt = newton_momentum(1.0, momentum=0.5, slope_mask=mask)
        _, state = opt.update(ones, opt.init(params), params, curvature=ones)  # v = -1 everywhere
        for update in (opt.update, jax.jit(opt.update)):
            step, _ = update(mixed, state, params, curvature=ones)
            expected_a = [-1.0, -0.5] if carried else [-0.5, 0.0]
            expected_b = [1.5, -0.5] if carried else [2.0, 0.0]
            np.testing.assert_allclose(np.asarray(step["a"]), expected_a)
            np.testing.assert_allclose(np.asarray(step["b"]), expected_b)


def test_newton_momentum_rejects_a_mask_that_cannot_work():
    """A mask without restart=True, with leaves that are not bools, or of another structure
    than the parameters is refused, naming slope_mask."""
    with pytest.raises(ValueError, match="slope_mask goes with restart=True"):
        newton_momentum(restart="entry", slope_mask={"a": True})
    with pytest.raises(TypeError, match="slope_mask must be a pytree of True/False"):
        newton_momentum(slope_mask={"a": 1})
    opt = newton_momentum(slope_mask={"a": True, "b": False})
    params = {"a": jnp.zeros(2)}
    with pytest.raises(ValueError, match="slope_mask must have the parameters' structure"):
        opt.update(params, opt.init(params), params, curvature=params)


def test_newton_momentum_beats_plain_newton_on_an_ill_conditioned_quadratic():
    """Diagonal Newton creeps along a coupled direction; the momentum gets there far sooner."""
    hessian = jnp.array([[1.0, 0.99], [0.99, 1.0]])
    curvature = jnp.diagonal(hessian)

    def distance_after(opt, n_steps):
        x = jnp.array([1.0, -0.5])
        state = opt.init(x)
        for _ in range(n_steps):
            updates, state = opt.update(hessian @ x, state, x, curvature=curvature)
            x = x + updates
        return float(jnp.linalg.norm(x))

    plain = distance_after(newton_momentum(0.5, momentum=0.0), 200)
    accelerated = distance_after(newton_momentum(0.5, momentum=0.9), 200)
    assert accelerated < 1e-2 * plain


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"momentum": 1.0}, "momentum"),
        ({"momentum": -0.1}, "momentum"),
        ({"learning_rate": 0.0}, "learning_rate"),
        ({"restart": "row"}, "restart"),
    ],
)
def test_newton_momentum_rejects_bad_settings(kwargs, match):
    with pytest.raises(ValueError, match=match):
        newton_momentum(**kwargs)


def test_the_same_settings_give_the_same_optimizer_and_one_compiled_fit():
    """An optimizer is a static argument of level 5's jitted loop, compared by identity: a second
    call with the same settings returns the first optimizer, so a fit compiled for one serves
    the other; other settings, equal masks of other types, and unhashable settings build a new
    optimizer."""
    from jaxcourse.pln import level5, simulate
    from jaxcourse.tracecount import count_compilations

    first = newton_momentum(1.0, momentum=0.9, restart=False)
    assert newton_momentum(learning_rate=1.0, momentum=0.9, restart=False) is first
    assert newton_momentum(1.0, momentum=0.8, restart=False) is not first
    assert rprop(0.1) is rprop(0.1) and rprop(0.1) is not newton_rprop()
    assert newton_momentum(slope_mask={"a": True}) is newton_momentum(slope_mask={"a": True})
    rate = jnp.asarray(1.0)  # an array cannot be hashed: a new optimizer each time
    assert newton_momentum(rate, momentum=0.9) is not newton_momentum(rate, momentum=0.9)
    # Equal in Python, different masks: a Variational's structure is not a plain tuple's.
    assert newton_momentum(slope_mask=(True, False)) is not level5.NEWTON_MOMENTUM
    assert newton_momentum(slope_mask=level5.SLOPE_OVER_M) is level5.NEWTON_MOMENTUM
    data = simulate(12, 3, key=jax.random.key(0)).data
    level5.fit(data, 7, optimizer=first)
    with count_compilations() as again:
        level5.fit(data, 7, optimizer=newton_momentum(1.0, momentum=0.9, restart=False))
    assert again.compiles == 0
