"""Level 5's fit as a program to ship: `jax.export` with the number of samples symbolic.

`fit_arrays` is level 5's compiled loop (`convergence.run_loop`, the `NEWTON_MOMENTUM`
optimizer) behind a signature of plain arrays in and a plain tuple of arrays out, so that a
process that has only `jax` and `numpy` can load the serialized bytes and call them: a
`NamedTuple` such as `FitResult` in the output cannot be serialized unless both sides register it.
It prepares the problem inside the program (`traced_problem`), so that its caller needs the
counts, the offsets and the covariates only.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from jax import export
from jax.scipy.special import gammaln

from ._algorithm import init_variational
from ._data import PLNData
from .convergence import DEFAULT_TOL, run_loop
from .level5 import NEWTON_MOMENTUM
from .profiled import Problem

EXPORT_N_ITER = 400
"""The most steps the exported fit takes (static: baked into the exported program)."""

OUTPUTS = ("elbo", "n_steps", "coef", "covariance", "mean", "sqrt_var")
"""What the exported fit returns, in order: the final ELBO, the steps taken, B `(d, p)`,
Sigma `(p, p)`, and the variational M and S `(n, p)`."""


def traced_problem(counts, offsets, covariates) -> Problem:
    """`profiled.prepare` inside the program, in the data's dtype: the log-factorial constant
    summed by XLA (not in float64 by NumPy) and (X'X)^-1 by `jnp.linalg.inv`. No separation
    handling: the exported fit is `level5.fit(..., separation_limit=False)`."""
    safe = jnp.where(counts > 0, counts, 1.0)
    constant = jnp.sum(counts * jnp.log(safe) - counts - gammaln(counts + 1.0))
    return Problem(
        counts=counts,
        offsets=offsets,
        shifted_offsets=offsets - jnp.log(safe),
        covariates=covariates,
        gram_inverse=jnp.linalg.inv(covariates.T @ covariates),
        log_factorial_constant=constant,
        n_samples=jnp.asarray(counts.shape[0], counts.dtype),
    )


def fit_arrays(counts, offsets, covariates, tol):
    """Level 5's fit from `init_variational`, arrays in and a tuple of arrays out (`OUTPUTS`)."""
    data = PLNData(counts, offsets, covariates)
    result = run_loop(
        traced_problem(counts, offsets, covariates),
        init_variational(data),
        tol,
        n_iter=EXPORT_N_ITER,
        optimizer=NEWTON_MOMENTUM,
    )
    elbo = result.elbo_trace[-1]
    return (elbo, result.n_steps, *result.params, *result.variational)


def export_fit(dtype=jnp.float32, platforms: tuple[str, ...] | None = None) -> export.Exported:
    """`fit_arrays` exported for any number of samples `n`, any number of species `p` and of
    covariates `d` (symbolic), in `dtype`, for `platforms` (None: this machine's)."""
    n, p, d = export.symbolic_shape("n, p, d")
    spec = [jax.ShapeDtypeStruct(shape, dtype) for shape in ((n, p), (n, p), (n, d), ())]
    return export.export(jax.jit(fit_arrays), platforms=platforms)(*spec)


def fit_inputs(data: PLNData, tol: float = DEFAULT_TOL) -> tuple[jax.Array, ...]:
    """The arguments of `fit_arrays` for `data`."""
    return (data.counts, data.offsets, data.covariates, jnp.asarray(tol, data.counts.dtype))
