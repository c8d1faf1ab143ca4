"""Data-parallel computations of the sharding chapter equal their single-device counterparts."""

import subprocess
import sys
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax import lax
from jax.sharding import AxisType, Mesh, NamedSharding
from jax.sharding import PartitionSpec as P

from jaxcourse import hlo, parallel, pln
from jaxcourse.pln._sharded import sharded_elbo

# More than a few seconds: left out of the fast tier (scripts/test.sh --fast).
pytestmark = pytest.mark.slow

N_DEVICES = 4
TOLERANCE = dict(rtol=1e-5, atol=1e-6)


@pytest.fixture(scope="module")
def devices():
    """`course_devices` may make a CPU device the default (single-GPU machines); undo that after."""
    previous = jax.config.jax_default_device
    yield parallel.course_devices(N_DEVICES)
    jax.config.update("jax_default_device", previous)


@pytest.fixture(scope="module")
def mesh(devices):
    return jax.make_mesh((len(devices),), (parallel.AXIS,), devices=devices)


@pytest.fixture(scope="module")
def batch():
    return parallel.make_regression(128, key=jax.random.key(1))


@pytest.fixture(scope="module")
def params0():
    return parallel.LinearParams(jnp.array([0.3, -0.1, 0.2]), jnp.array(0.1))


def _rows(mesh, *arrays):
    return tuple(jax.device_put(a, NamedSharding(mesh, P(parallel.AXIS))) for a in arrays)


def _assert_trees_close(actual, expected):
    jax.tree.map(
        lambda a, b: np.testing.assert_allclose(np.asarray(a), np.asarray(b), **TOLERANCE),
        actual,
        expected,
    )


def test_course_devices_fall_back_to_simulated_cpus(devices):
    """Without two or more accelerators, the chapter runs on the 4 simulated CPU devices."""
    accelerators = [d for d in jax.devices() if d.platform != "cpu"]
    if len(accelerators) >= 2:
        assert all(d.platform != "cpu" for d in devices) and N_DEVICES % len(devices) == 0
    else:
        assert devices == jax.devices("cpu")[:N_DEVICES]


def test_split_for_devices_matches_named_sharding_blocks(mesh, batch):
    """Block k of the pmap reshape holds the same rows as device k's shard under P('data')."""
    x, _ = batch
    blocks = parallel.split_for_devices(x, mesh.size)
    (x_sharded,) = _rows(mesh, x)
    for k, shard in enumerate(x_sharded.addressable_shards):
        np.testing.assert_array_equal(np.asarray(shard.data), np.asarray(blocks[k]))
    with pytest.raises(ValueError, match="do not split evenly"):
        parallel.split_for_devices(x[:127], 4)


def test_pmap_step_equals_single_device_step(devices, batch, params0):
    """pmap with in_axes=None for the parameters and pmean of the gradients."""
    x, y = batch
    expected = parallel.sgd_step(params0, x, y)
    step = parallel.make_pmap_step(devices)
    n = len(devices)
    actual = step(params0, parallel.split_for_devices(x, n), parallel.split_for_devices(y, n))
    _assert_trees_close(actual, expected)


def test_jit_on_sharded_arrays_equals_single_device_step(mesh, batch, params0):
    """The unchanged step under jit, data sharded by rows, parameters placed replicated."""
    x, y = batch
    expected = parallel.sgd_step(params0, x, y)
    params = jax.device_put(params0, NamedSharding(mesh, P()))
    actual = jax.jit(parallel.sgd_step)(params, *_rows(mesh, x, y))
    _assert_trees_close(actual, expected)
    assert actual[0].weights.sharding.is_fully_replicated


def test_auto_mesh_accepts_unplaced_params(devices, batch, params0):
    """The chapter's remark: on an Auto mesh (the `Mesh(...)` default) the compiler picks the
    gradient's sharding, so unplaced parameters work with sharded data."""
    x, y = batch
    mesh = Mesh(np.array(devices), (parallel.AXIS,))
    assert mesh.axis_types == (AxisType.Auto,)
    actual = jax.jit(parallel.sgd_step)(params0, *_rows(mesh, x, y))
    _assert_trees_close(actual, parallel.sgd_step(params0, x, y))


@pytest.mark.parametrize("placed", [True, False], ids=["placed-inputs", "unplaced-inputs"])
def test_jit_with_shardings_equals_single_device_step(mesh, batch, params0, placed):
    """jit(in_shardings, out_shardings): with placed inputs, or placing them itself."""
    x, y = batch
    expected = parallel.sgd_step(params0, x, y)
    step = parallel.make_jit_step(mesh)
    if placed:
        actual = step(jax.device_put(params0, NamedSharding(mesh, P())), *_rows(mesh, x, y))
    else:
        actual = step(params0, x, y)
    _assert_trees_close(actual, expected)


def test_shard_map_step_equals_single_device_step(mesh, batch, params0):
    """shard_map differentiating the pmean'd global loss."""
    x, y = batch
    expected = parallel.sgd_step(params0, x, y)
    actual = parallel.make_shard_map_step(mesh)(params0, *_rows(mesh, x, y))
    _assert_trees_close(actual, expected)


def test_training_runs_agree(devices, mesh, batch, params0):
    """Ten blocking steps of each variant follow the single-device run."""
    x, y = batch
    n_steps = 10
    final, losses = parallel.train(jax.jit(parallel.sgd_step), params0, x, y, n_steps)
    xs, ys = _rows(mesh, x, y)
    placed = jax.device_put(params0, NamedSharding(mesh, P()))
    blocks = (
        parallel.split_for_devices(x, len(devices)),
        parallel.split_for_devices(y, len(devices)),
    )
    runs = [
        parallel.train(parallel.make_pmap_step(devices), params0, *blocks, n_steps),
        parallel.train(parallel.make_jit_step(mesh), placed, xs, ys, n_steps),
        parallel.train(parallel.make_shard_map_step(mesh), params0, xs, ys, n_steps),
    ]
    assert losses[-1] < losses[0]
    for run_final, run_losses in runs:
        _assert_trees_close(run_final, final)
        np.testing.assert_allclose(run_losses, losses, **TOLERANCE)


def test_max_abs_difference_across_devices(mesh, batch):
    """Compares arrays that live on different meshes, via the host."""
    x, _ = batch
    (x_sharded,) = _rows(mesh, x)
    assert parallel.max_abs_difference({"a": x_sharded}, {"a": x + 0.5}) == pytest.approx(0.5)


# --- the double-counting trap: gradients of replicated parameters inside shard_map ----------


def _shard_map_grads(mesh, loss, reduce, check_vma=True):
    @jax.jit
    @partial(
        jax.shard_map,
        mesh=mesh,
        in_specs=(P(), P("data"), P("data")),
        out_specs=P(),
        check_vma=check_vma,
    )
    def grads(params, x_block, y_block):
        return reduce(jax.grad(loss)(params, x_block, y_block))

    return grads


def _ratio(actual, expected):
    return np.concatenate(
        [np.ravel(a / e) for a, e in zip(jax.tree.leaves(actual), jax.tree.leaves(expected))]
    )


def test_ported_pmean_of_mean_loss_gradients_is_n_times_too_large(mesh, batch, params0):
    """pmap-style pmean(grad(block mean loss)) inside shard_map: a factor of the device count."""
    x, y = batch
    expected = jax.grad(parallel.mse_loss)(params0, x, y)
    ported = _shard_map_grads(mesh, parallel.mse_loss, lambda g: lax.pmean(g, "data"))
    np.testing.assert_allclose(
        _ratio(ported(params0, *_rows(mesh, x, y)), expected), mesh.size, rtol=1e-5
    )


def test_ported_psum_of_sum_loss_gradients_is_n_times_too_large(mesh, batch, params0):
    """pmap-style psum(grad(block sum loss)) inside shard_map: the same factor."""
    x, y = batch

    def sum_loss(params, x, y):
        return jnp.sum(jnp.square(x @ params.weights + params.bias - y))

    expected = jax.grad(sum_loss)(params0, x, y)
    ported = _shard_map_grads(mesh, sum_loss, lambda g: lax.psum(g, "data"))
    np.testing.assert_allclose(
        _ratio(ported(params0, *_rows(mesh, x, y)), expected), mesh.size, rtol=1e-5
    )
    # Without the extra psum, the automatic sum over devices is exactly the right gradient.
    plain = _shard_map_grads(mesh, sum_loss, lambda g: g)
    np.testing.assert_allclose(_ratio(plain(params0, *_rows(mesh, x, y)), expected), 1.0, rtol=1e-5)


def test_check_vma_false_restores_pmap_semantics(mesh, batch, params0):
    """With check_vma=False, gradients stay per device: pmean gives the right one."""
    x, y = batch
    expected = jax.grad(parallel.mse_loss)(params0, x, y)
    grads = _shard_map_grads(
        mesh, parallel.mse_loss, lambda g: lax.pmean(g, "data"), check_vma=False
    )
    np.testing.assert_allclose(_ratio(grads(params0, *_rows(mesh, x, y)), expected), 1.0, rtol=1e-5)


def test_pmap_out_axes_none_returns_device_zero_copy(devices):
    """out_axes=None does not check that the copies agree: it returns the first device's."""
    f = jax.pmap(lambda v: v * 10.0, axis_name="data", out_axes=None, devices=devices)
    assert float(f(jnp.arange(1.0, len(devices) + 1.0))) == 10.0


# --- the PLN ELBO --------------------------------------------------------------------------


@pytest.fixture(scope="module")
def oaks():
    return pln.load_oaks()


def test_sharded_elbo_equals_single_device_elbo_on_oaks(mesh, oaks):
    """116 leaves = 4 devices x 29 (or 2 x 58): per-device statistics, psum, the same completion."""
    variational = pln.init_variational(oaks)
    params = pln.closed_form_params(oaks, variational)
    expected = pln.elbo(oaks, variational, params)
    actual = sharded_elbo(oaks, variational, params, mesh)
    np.testing.assert_allclose(float(actual), float(expected), rtol=1e-5)
    assert actual.sharding.spec == P()


@pytest.mark.parametrize("n_shards", [1, 2, 4])
def test_sharded_elbo_with_covariates_and_other_mesh_sizes(devices, n_shards):
    """Several covariates (B has more than one row) and meshes of 1, 2 and 4 devices."""
    if n_shards > len(devices):
        pytest.skip(f"needs {n_shards} devices")
    sim = pln.simulate(24, 6, key=jax.random.key(5), n_covariates=3)
    variational = pln.init_variational(sim.data)
    params = pln.ModelParams(sim.coef, sim.covariance)
    mesh = jax.make_mesh((n_shards,), ("samples",), devices=devices[:n_shards])
    actual = sharded_elbo(sim.data, variational, params, mesh, axis_name="samples")
    np.testing.assert_allclose(
        float(actual), float(pln.elbo(sim.data, variational, params)), rtol=1e-5
    )


def test_sharded_elbo_rejects_uneven_split(oaks):
    """116 samples cannot be split over 3 devices; no sample is silently dropped."""
    devices = jax.devices("cpu")
    mesh = jax.make_mesh((3,), ("data",), devices=devices[:3])
    variational = pln.init_variational(oaks)
    params = pln.closed_form_params(oaks, variational)
    with pytest.raises(ValueError, match="do not split evenly over 3 devices"):
        sharded_elbo(oaks, variational, params, mesh)


def test_sharded_elbo_is_differentiable_under_jit_or_a_mesh_context(mesh):
    """grad through the shard_map and psum equals the single-device gradient w.r.t. M and S."""
    sim = pln.simulate(16, 5, key=jax.random.key(6), n_covariates=2)
    variational = pln.init_variational(sim.data)
    params = pln.ModelParams(sim.coef, sim.covariance)
    expected = jax.grad(lambda v: pln.elbo(sim.data, v, params))(variational)
    grad_sharded = jax.grad(lambda v: sharded_elbo(sim.data, v, params, mesh))
    with jax.set_mesh(mesh):
        in_context = grad_sharded(variational)
    for actual in (jax.jit(grad_sharded)(variational), in_context):
        jax.tree.map(
            lambda a, b: np.testing.assert_allclose(
                np.asarray(a), np.asarray(b), rtol=1e-4, atol=1e-5
            ),
            actual,
            expected,
        )
    # The docstring's caveat: a bare eager grad outside the mesh context fails, and says where to go.
    with pytest.raises(
        ValueError,
        match=r"Length of device assignment 1 is not equal to the size of the mesh(.|\n)*jax\.set_mesh",
    ):
        grad_sharded(variational)


# --- device setup facts the chapter states -------------------------------------------------


def test_late_xla_flags_are_silently_ignored():
    """XLA_FLAGS set after the first JAX operation: no error, one CPU device."""
    code = (
        "import os, jax\n"
        "jax.numpy.ones(1)\n"
        "os.environ['XLA_FLAGS'] = '--xla_force_host_platform_device_count=4'\n"
        "print(len(jax.devices()))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env=_clean_env()
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "1"


def test_early_xla_flags_give_four_devices():
    """Set before the first operation, even after `import jax`, the flag works."""
    code = (
        "import os, jax\n"
        "os.environ['XLA_FLAGS'] = '--xla_force_host_platform_device_count=4'\n"
        "print(len(jax.devices()))\n"
    )
    flag = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env=_clean_env()
    )
    assert flag.stdout.strip() == "4", flag.stderr


def _clean_env():
    import os

    env = {k: v for k, v in os.environ.items() if k not in ("XLA_FLAGS", "JAX_NUM_CPU_DEVICES")}
    env["JAX_PLATFORMS"] = "cpu"
    return env


def test_queued_collective_steps_finish_without_waiting():
    """The chapter: with jax 0.10, queuing many collective steps deadlocked a 2-core machine (XLA
    aborted after its 40 s rendezvous timeout); on the pinned jax the same loops run to the end."""
    code = (
        "import jax\n"
        "jax.config.update('jax_num_cpu_devices', 4)\n"
        "import jax.numpy as jnp\n"
        "from jax.sharding import NamedSharding, PartitionSpec as P\n"
        "from jaxcourse import parallel\n"
        "devices = jax.devices()\n"
        "mesh = jax.make_mesh((4,), ('data',), devices=devices)\n"
        "rows = NamedSharding(mesh, P('data'))\n"
        "x, y = parallel.make_regression(256, key=jax.random.key(0))\n"
        "p0 = parallel.LinearParams(jnp.zeros(3), jnp.zeros(()))\n"
        "xs, ys = jax.device_put(x, rows), jax.device_put(y, rows)\n"
        "runs = [(jax.jit(parallel.sgd_step), jax.device_put(p0, NamedSharding(mesh, P())), xs, ys),\n"
        "        (parallel.make_shard_map_step(mesh), p0, xs, ys),\n"
        "        (parallel.make_pmap_step(devices), p0, parallel.split_for_devices(x, 4),\n"
        "         parallel.split_for_devices(y, 4))]\n"
        "for step, p, a, b in runs:\n"
        "    for _ in range(300):\n"
        "        p, loss = step(p, a, b)  # never waits: up to 300 steps in the queue\n"
        "    print(float(loss))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=180, env=_clean_env()
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert len(result.stdout.split()) == 3


@pytest.mark.parametrize(
    "draw",
    [
        lambda key: jax.random.normal(key, (128, 3)),
        lambda key: jax.random.split(key, 128),
        lambda key: jax.random.bernoulli(key, 0.5, (128, 8)),
    ],
    ids=["normal", "split", "bernoulli"],
)
def test_sharded_random_draws_communicate_only_without_the_partitionable_flag(mesh, draw):
    """Chapter (sec-sharding-random): a draw jitted with rows split over the mesh compiles to no
    collective with jax_threefry_partitionable on, to some with it off, and equals the same draw
    on one device."""
    key = jax.random.key(0)
    sharded = jax.jit(draw, out_shardings=NamedSharding(mesh, P(parallel.AXIS)))
    with jax.threefry_partitionable(True):
        assert not any(hlo.collective_counts(sharded, key).values())
        result = sharded(key)
    with jax.threefry_partitionable(False):
        assert sum(hlo.collective_counts(sharded, key).values()) > 0
    single = draw(key)
    if jax.dtypes.issubdtype(single.dtype, jax.dtypes.prng_key):
        result, single = jax.random.key_data(result), jax.random.key_data(single)
    assert np.array_equal(np.asarray(result), np.asarray(single))
