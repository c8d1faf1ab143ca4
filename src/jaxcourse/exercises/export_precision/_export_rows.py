"""Checker of the export and precision chapter's exercise on one export for every batch size:
`export_rows(f, n_features)` returns the serialized bytes of `jax.jit(f)` exported for float32
inputs `(b, n_features)`, `b` symbolic."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from jax import export

from ...checks import CheckFailed, call_answer, close, exercise_checker, require

CASES = (
    (lambda x: jnp.sum(x * x, axis=1), 3),
    (lambda x: 2.0 * jnp.cumsum(x, axis=1) - jnp.tanh(x), 5),
)
"""The functions exported and their number of features."""

BATCHES = (2, 7)


def _load(blob) -> export.Exported:
    require(
        not isinstance(blob, export.Exported),
        "you returned the Exported object: return its bytes, exported.serialize(), which is "
        "what you can write to a file and load elsewhere.",
    )
    require(
        not isinstance(blob, str),
        "you returned text (a program printed as a string?): return the bytes of "
        "jax.export.export(jax.jit(f))(spec).serialize().",
    )
    require(
        isinstance(blob, (bytes, bytearray)),
        f"export_rows should return bytes (exported.serialize()), got a {type(blob).__name__}.",
    )
    try:
        return export.deserialize(bytearray(blob))
    except Exception as error:
        raise CheckFailed(
            "jax.export.deserialize cannot read your bytes: return exactly what "
            f"exported.serialize() gave ({type(error).__name__})."
        ) from None


def _check_one(export_rows, f, n_features: int) -> None:
    exported = _load(call_answer(export_rows, f, n_features, what="export_rows"))
    require(
        len(exported.in_avals) == 1,
        f"the export takes {len(exported.in_avals)} inputs: export f, which takes one array.",
    )
    aval = exported.in_avals[0]
    require(len(aval.shape) == 2, f"the exported input has shape {aval.shape}: it should be 2-D.")
    batch, features = aval.shape
    require(
        export.is_symbolic_dim(batch),
        f"the batch size is fixed at {batch}: the bytes accept only that many rows. Make it "
        "symbolic, (b,) = jax.export.symbolic_shape('b'), and export for (b, n_features).",
    )
    require(
        export.is_symbolic_dim(features) or features == n_features,
        f"the exported input has {features} features, not n_features = {n_features}: is the "
        "shape (b, n_features), in that order?",
    )
    require(
        aval.dtype == jnp.float32,
        f"the export takes {aval.dtype} inputs: export for jnp.float32 (the default dtype).",
    )
    for n_rows in BATCHES:
        x = np.random.default_rng(n_rows).normal(size=(n_rows, n_features)).astype(np.float32)
        got = call_answer(exported.call, x, what="the deserialized export")
        require(
            close(got, f(jnp.asarray(x)), rtol=1e-5, atol=1e-5),
            f"called on {n_rows} rows, your export does not compute f: export jax.jit(f) for "
            "the f export_rows receives, not another function.",
        )


@exercise_checker(
    hints=(
        "Three steps: a symbolic batch size, jax.export.symbolic_shape('b'); a spec of the input, "
        "jax.ShapeDtypeStruct((b, n_features), jnp.float32); then "
        "jax.export.export(jax.jit(f))(spec).serialize().",
        "symbolic_shape returns a tuple even for one name: unpack it, (b,) = symbolic_shape('b'). "
        "Return the bytes of .serialize(), not the Exported object, and export f itself.",
    )
)
def check_export_rows(export_rows) -> None:
    """Exports two functions with 3 and 5 features, loads each from its bytes and calls it at
    two batch sizes."""
    for f, n_features in CASES:
        _check_one(export_rows, jax.jit(f), n_features)
