"""Every error message that a page quotes in its prose (the sharp-bits table included) is the one the
pinned JAX raises: each quote has a reproducer here, which runs and must raise that class with that
text, so a table row cannot drift from the cell it names.

A quote is an inline code span of the form `SomeError: message` or `SomeError ... message`, where
"..." in a message stands for text left out. A new quote needs a new entry in REPRODUCERS; an entry
whose quote has left every page fails too, so the list stays the list of quotes.
"""

from __future__ import annotations

import re
import warnings
from functools import partial
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax import lax
from jax.experimental import checkify

from tools import qmd

ROOT = Path(__file__).resolve().parents[1]
PAGES = sorted((ROOT / "chapters").glob("*.qmd")) + [ROOT / "index.qmd", ROOT / "workshop.qmd"]
QUOTE = re.compile(r"`(\w*(?:Error|Exception|Warning))(?::| \.\.\.) ([^`]+)`")


def quoted_messages() -> dict[tuple[str, str], list[str]]:
    """{(class name, message): [pages quoting it]} from the prose of every page."""
    found: dict[tuple[str, str], list[str]] = {}
    for page in PAGES:
        if page.exists():
            prose, _ = qmd.split_blocks(page.read_text())
            for match in QUOTE.finditer(prose):
                found.setdefault((match.group(1), match.group(2).strip()), []).append(page.name)
    return found


# Reproducers: each raises (or warns) what the quote says ------------------------------------------


def _pallas_compiled_on_a_cpu():
    from jax.experimental import pallas as pl

    def double(x_ref, out_ref):
        out_ref[...] = 2.0 * x_ref[...]

    call = pl.pallas_call(double, out_shape=jax.ShapeDtypeStruct((8,), jnp.float32))
    with jax.default_device(jax.devices("cpu")[0]):
        call(jnp.ones(8))


class _Plain:
    """A class that is not a pytree."""


def _leaked_tracer():
    kept = []
    jax.jit(lambda x: kept.append(x) or x)(1.0)
    kept[0] + 1.0


def _leak_checked():
    kept = []
    with jax.checking_leaks():
        jax.jit(lambda x: kept.append(x) or x)(1.0)


def _aot_other_shape():
    jax.jit(jnp.sin).lower(jnp.ones(3)).compile()(jnp.ones(4))


def _immutable():
    x = jnp.zeros(3)
    x[0] = 1.0


def _donated():
    x = jnp.zeros(8)
    jax.jit(lambda x: 2.0 * x, donate_argnums=0)(x)
    x + 1.0


def _missing_cotangent():
    @jax.custom_vjp
    def f(a, b):
        return a * b

    f.defvjp(lambda a, b: (a * b, (a, b)), lambda res, g: (g * res[1],))
    jax.grad(f)(1.0, 2.0)


def _traced_nondiff():
    @partial(jax.custom_vjp, nondiff_argnums=(0,))
    def f(a, x):
        return a * x

    f.defvjp(lambda a, x: (a * x, None), lambda a, res, g: (a * g,))
    jax.jit(jax.grad(f, argnums=1))(jnp.array(2.0), 1.0)


def _jvp_of_custom_vjp():
    f = jax.custom_vjp(lambda x: 2.0 * x)
    f.defvjp(lambda x: (2.0 * x, None), lambda res, g: (2.0 * g,))
    jax.jvp(f, (1.0,), (1.0,))


def _grad_through_while():
    jax.grad(lambda a: lax.while_loop(lambda x: x < 10.0, lambda x: 2.0 * x, a))(1.0)


def _check_without_checkify():
    def f(x):
        checkify.check(jnp.all(x > 0), "positive")
        return x

    jax.jit(f)(jnp.ones(2))


def _float64_without_x64():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        jnp.ones(2, dtype=jnp.float64)


def _device_count_after_start():
    jax.devices()
    jax.config.update("jax_num_cpu_devices", 8)


def _course_devices():
    from jaxcourse import parallel

    previous = jax.config.jax_default_device
    try:
        return parallel, parallel.course_devices()
    finally:
        jax.config.update("jax_default_device", previous)


def _pmap_without_reshape():
    parallel, devices = _course_devices()
    x, _ = parallel.make_regression(256, key=jax.random.key(0))
    jax.pmap(lambda block: 2.0 * block, devices=devices)(x)


def _unplaced_params_on_explicit_mesh():
    from jax.sharding import NamedSharding
    from jax.sharding import PartitionSpec as P

    parallel, devices = _course_devices()
    mesh = jax.make_mesh((len(devices),), (parallel.AXIS,), devices=devices)
    x, y = parallel.make_regression(256, key=jax.random.key(0))
    rows = NamedSharding(mesh, P(parallel.AXIS))
    params0 = parallel.LinearParams(jnp.zeros(3), jnp.zeros(()))
    jax.jit(parallel.sgd_step)(params0, jax.device_put(x, rows), jax.device_put(y, rows))


def _unsharded_shard_map_input():
    parallel, devices = _course_devices()
    mesh = jax.make_mesh((len(devices),), (parallel.AXIS,), devices=devices)
    x, y = parallel.make_regression(256, key=jax.random.key(0))
    parallel.make_shard_map_step(mesh)(parallel.LinearParams(jnp.zeros(3), jnp.zeros(())), x, y)


def _index_a_split_axis():
    from jax.sharding import NamedSharding
    from jax.sharding import PartitionSpec as P

    parallel, devices = _course_devices()
    mesh = jax.make_mesh((len(devices),), (parallel.AXIS,), devices=devices)
    jax.device_put(jnp.ones((8, 3)), NamedSharding(mesh, P(parallel.AXIS)))[0]


def _committed_to_one_device_under_set_mesh():
    from jax.sharding import NamedSharding
    from jax.sharding import PartitionSpec as P

    parallel, devices = _course_devices()
    mesh = jax.make_mesh((len(devices),), (parallel.AXIS,), devices=devices)
    x, y = parallel.make_regression(256, key=jax.random.key(0))
    rows = NamedSharding(mesh, P(parallel.AXIS))
    params = jax.device_put(parallel.LinearParams(jnp.zeros(3), jnp.zeros(())), devices[0])
    with jax.set_mesh(mesh):
        jax.jit(parallel.sgd_step)(params, jax.device_put(x, rows), jax.device_put(y, rows))


def _committed_input_with_another_sharding():
    from jax.sharding import NamedSharding
    from jax.sharding import PartitionSpec as P

    parallel, devices = _course_devices()
    mesh = jax.make_mesh((len(devices),), (parallel.AXIS,), devices=devices)
    x, y = parallel.make_regression(256, key=jax.random.key(0))
    replicated = NamedSharding(mesh, P())
    params = jax.device_put(parallel.LinearParams(jnp.zeros(3), jnp.zeros(())), replicated)
    parallel.make_jit_step(mesh)(params, jax.device_put(x, replicated), y)


def _all_gather_declared_replicated():
    from jax.sharding import PartitionSpec as P

    mesh = jax.make_mesh((len(jax.devices()),), ("data",))
    with jax.set_mesh(mesh):
        x = jnp.ones((2 * len(jax.devices()), 3), out_sharding=P("data"))
        jax.shard_map(
            lambda b: lax.all_gather(b, "data", tiled=True),
            mesh=mesh,
            in_specs=P("data"),
            out_specs=P(),
        )(x)


def _cost_of_a_function_never_compiled():
    from jaxcourse import roofline

    roofline.cost(jax.jit(lambda x: 2 * x))


# The export-precision chapter's sharp bits ------------------------------------------------------


def _export_square_called_with_a_rectangle():
    from jax import export

    (side,) = export.symbolic_shape("a")
    spec = jax.ShapeDtypeStruct((side, side), jnp.float32)
    export.export(jax.jit(lambda m: m @ m))(spec).call(jnp.ones((2, 3)))


def _export_for_cuda_called_on_the_cpu():
    from jax import export

    exported = export.export(jax.jit(jnp.sin), platforms=("cuda",))(jnp.ones(3))
    with jax.default_device(jax.devices("cpu")[0]):
        exported.call(jnp.ones(3))


def _export_a_namedtuple():
    from typing import NamedTuple

    from jax import export

    class Pair(NamedTuple):
        first: jax.Array
        second: jax.Array

    export.export(jax.jit(lambda x: Pair(x, 2 * x)))(jnp.ones(2)).serialize()


def _level5_in_bfloat16():
    from jaxcourse import precision
    from jaxcourse.pln import level5, load_oaks

    level5.fit(precision.cast(load_oaks(), jnp.bfloat16), 2)


def _counts_above_float32():
    from jaxcourse.pln import FLOAT32_EXACT_COUNT, make_data

    make_data(np.array([[FLOAT32_EXACT_COUNT + 1, 3]]))


REPRODUCERS = {
    "Encountered an unexpected tracer": _leaked_tracer,
    "Leaked trace DynamicJaxprTrace": _leak_checked,
    "Non-hashable static arguments are not supported": lambda: jax.jit(
        lambda n: n, static_argnums=0
    )([1, 2]),
    "Argument types differ from the types for which this computation was compiled": _aot_other_shape,
    "sum requires ndarray or scalar arguments": lambda: jnp.sum([1.0, 2.0]),
    "JAX arrays are immutable": _immutable,
    "Array has been deleted": _donated,
    "Shapes must be 1D sequences of concrete values of integer type": lambda: jax.jit(jnp.zeros)(3),
    "Shapes must be 1D sequences of concrete values": lambda: jax.jit(jnp.zeros)(3),
    "select cases must have the same shapes": lambda: lax.select(
        jnp.array([True, False]), jnp.ones(2), jnp.float32(0.0)
    ),
    "Error interpreting argument to ... as an abstract array": lambda: jax.jit(lambda m: m)(
        _Plain()
    ),
    "Gradient only defined for scalar-output functions": lambda: jax.grad(jnp.sin)(jnp.arange(3.0)),
    "grad requires real- or complex-valued inputs": lambda: jax.grad(jnp.sin)(3),
    "Custom VJP bwd rule must produce an output with the same container": _missing_cotangent,
    "Tracers cannot be passed as non-differentiable arguments": _traced_nondiff,
    "can't apply forward-mode autodiff (jvp) to a custom_vjp function": _jvp_of_custom_vjp,
    "grad requires real-valued outputs": lambda: jax.grad(lambda z: z**2)(1.0 + 2.0j),
    "Reverse-mode differentiation does not work for lax.while_loop": _grad_through_while,
    "vmap got inconsistent sizes for array axes to be mapped": lambda: jax.vmap(jnp.add)(
        jnp.ones(2), jnp.ones(3)
    ),
    "add does not accept dtypes key<fry>": lambda: jax.random.key(0) + 1,
    "Use jax.random.key_data": lambda: np.asarray(jax.random.key(0)),
    "unsupported operand type(s)": lambda: 0.1 * {"w": 1.0},
    "pytree structure error: different numbers of pytree children": lambda: jax.tree.map(
        jnp.add, {"w": 1.0}, {"w": 1.0, "b": 2.0}
    ),
    "pytree structure error: different types": lambda: jax.tree.map(
        jnp.add, {"b": None}, {"b": 1.0}
    ),
    "... is not a valid JAX type": lambda: lax.scan(lambda c, x: (c, x), _Plain(), jnp.ones(2)),
    "jax_num_cpu_devices config should be updated before backends are initialized": _device_count_after_start,
    "unbound axis name": lambda: lax.psum(jnp.ones(3), "data"),
    "cannot select an axis to squeeze out": _pmap_without_reshape,
    "Contracting dimensions are sharded": _unplaced_params_on_explicit_mesh,
    "... does not match the specs of the input": _unsharded_shard_map_input,
    "Cannot abstractly evaluate a checkify.check which was not functionalized": _check_without_checkify,
    "Explicitly requested dtype float64": _float64_without_x64,
    "to provide output PartitionSpec for the gather indexing": _index_a_split_axis,
    "Received incompatible devices for jitted computation": _committed_to_one_device_under_set_mesh,
    "Sharding passed to jit does not match the sharding on the respective arg": _committed_input_with_another_sharding,
    "... out_specs which require replication which can't be statically inferred": _all_gather_declared_replicated,
    "'Lowered' object has no attribute 'memory_analysis'": lambda: (
        jax.jit(jnp.sin).lower(1.0).memory_analysis()
    ),
    "cost needs a compiled program": _cost_of_a_function_never_compiled,
    "Only interpret mode is supported on CPU backend": _pallas_compiled_on_a_cpu,
    "Input shapes do not match the polymorphic shapes specification": _export_square_called_with_a_rectangle,
    "Function ... was exported for platforms ... but it is used on ...": _export_for_cuda_called_on_the_cpu,
    "Cannot serialize PyTreeDef containing an unregistered type": _export_a_namedtuple,
    "cholesky does not accept dtype bfloat16": _level5_in_bfloat16,
    "counts above 2^24 = 16777216 cannot be held exactly in float32": _counts_above_float32,
}

QUOTES = quoted_messages()


def _in_order(pieces: list[str], text: str) -> bool:
    position = 0
    for piece in pieces:
        position = text.find(piece, position)
        if position < 0:
            return False
        position += len(piece)
    return True


def test_every_quoted_message_has_a_reproducer_and_every_reproducer_a_quote():
    quoted = {message for _, message in QUOTES}
    assert sorted(quoted - set(REPRODUCERS)) == [], "add a reproducer for each new quote"
    assert sorted(set(REPRODUCERS) - quoted) == [], "remove reproducers whose quote left every page"


@pytest.mark.parametrize(("error_class", "message"), sorted(QUOTES), ids=lambda value: value[:40])
def test_the_quoted_message_is_what_jax_raises(error_class, message):
    if message not in REPRODUCERS:
        pytest.fail(f"no reproducer for {message!r}")
    try:
        REPRODUCERS[message]()
    except BaseException as error:  # noqa: BLE001 - the class is what is checked
        names = {cls.__name__ for cls in type(error).__mro__}
        assert error_class in names, (
            f"{QUOTES[error_class, message]} quote {error_class}, got {type(error).__name__}: {error}"
        )
        pieces = [piece.strip() for piece in message.split("...") if piece.strip()]
        assert _in_order(pieces, str(error)), (
            f"{QUOTES[error_class, message]} quote {message!r}; JAX says: {error}"
        )
    else:
        pytest.fail(f"{message!r} ({QUOTES[error_class, message]}): nothing was raised")
