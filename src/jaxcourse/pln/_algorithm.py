"""The one fitting algorithm every level runs: a gradient step on (M, S), then the closed-form M-step.

The levels differ only in how they organise this computation for JAX, so their ELBO traces agree.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import optax

from ._data import PLNData
from ._model import ModelParams, Variational, closed_form_params, elbo
from .separation import find_separation, warn_separation

LEARNING_RATE = 0.05
"""Adam's step size on (M, S): on oaks, a stable choice for the levels' gradient steps (the
levels chapter measures how far below the best known ELBO a given number of steps ends)."""

ADAM = optax.adam(LEARNING_RATE)
"""The default optimizer of levels 0-4. Created once, so that jitted levels, which take the optimizer as a static argument, reuse
their compiled code across calls (a fresh `optax.adam(...)` object is a new cache key)."""


CONVERGED = 0
"""`FitResult.status`: the fit stopped on its tolerance (levels 5 and 6)."""
ITERATION_LIMIT = 1
"""`FitResult.status`: the fit took all `n_iter` steps (levels 0-4 always do)."""
DIVERGED = 2
"""`FitResult.status`: the ELBO or the parameters became NaN or infinite; the result holds the
last iterate whose ELBO was finite."""
STATUS_NAMES = {CONVERGED: "converged", ITERATION_LIMIT: "iteration limit", DIVERGED: "diverged"}


class FitResult(NamedTuple):
    """What every level's `fit` returns.

    Attributes:
        elbo_trace: `(n_iter,)` ELBO before each step (exact log-factorial convention).
            Every level takes at most `n_iter` steps and records the ELBO before each one;
            entries from `n_steps` on repeat the ELBO of the returned parameters.
        variational: the final M and S, each `(n_samples, n_species)`.
        params: the final B `(n_covariates, n_species)` and Sigma `(n_species, n_species)`.
        n_steps: the steps taken (an int array): `n_iter` for levels 0-4, fewer for levels
            5 and 6 when they stop on their tolerance, and fewer for any level that diverged.
        status: how the fit ended (an int array): `CONVERGED`, `ITERATION_LIMIT` or `DIVERGED`
            (`status_name` says it in words). A diverged fit also warns (`FitDivergedWarning`).
        separated: levels 5 and 6: a bool array of B's shape (with a leading axis for
            `fit_many`), True on the coefficients that quasi-separation sends to +-infinity
            (`separation.coefficient_mask`). `params.coef` holds a finite point of the limit
            there (numbers of either sign whose size means nothing); `coef` holds NaN there.
            None for levels 0-4, which fit the data as given and only warn.
    """

    elbo_trace: jax.Array
    variational: Variational
    params: ModelParams
    n_steps: jax.Array
    status: jax.Array
    separated: np.ndarray | None = None

    @property
    def coef(self) -> np.ndarray:
        """B as estimates, float64 NumPy: `params.coef` with NaN on the `separated` coefficients,
        which have no finite estimate (`params.coef` keeps the limit point for computations)."""
        coef = np.array(self.params.coef, dtype=np.float64)
        if self.separated is not None:
            coef[np.asarray(self.separated)] = np.nan
        return coef

    def coef_frame(self, covariates=None, species=None):
        """`coef` (NaN where separated) as a pandas DataFrame, covariates x species.

        Args:
            covariates: the row labels: the covariates' DataFrame (its column names), or a
                sequence of names such as `design_matrix`'s; 0, 1, ... if omitted.
            species: the column labels: the counts' DataFrame (its column names), or names.

        Raises:
            ValueError: a result of several fits (`fit_many`: pick one with `level6.fit_at`),
                or labels whose number does not match B's shape.
        """
        import pandas as pd

        coef = self.coef
        if coef.ndim != 2:
            raise ValueError(
                f"coef_frame needs one fit's B, got shape {coef.shape}: pick a fit with level6.fit_at."
            )
        rows = _labels("covariates", covariates, coef.shape[0])
        columns = _labels("species", species, coef.shape[1])
        return pd.DataFrame(coef, index=rows, columns=columns)

    def sigma_frame(self, species=None):
        """Sigma as a pandas DataFrame, species x species, labelled like `coef_frame`'s columns."""
        import pandas as pd

        covariance = np.asarray(self.params.covariance, dtype=np.float64)
        if covariance.ndim != 2:
            raise ValueError(
                f"sigma_frame needs one fit's Sigma, got shape {covariance.shape}: pick a fit with level6.fit_at."
            )
        labels = _labels("species", species, covariance.shape[0])
        return pd.DataFrame(covariance, index=labels, columns=labels)

    @classmethod
    def of_all_steps(
        cls, elbo_trace: jax.Array, variational: Variational, params: ModelParams
    ) -> FitResult:
        """The result of a fit that took one step per entry of `elbo_trace` (levels 0-4): it
        reached its iteration limit, or diverged if anything it returns is not finite."""
        finite = jnp.all(jnp.isfinite(elbo_trace)) & all_finite((variational, params))
        status = jnp.where(finite, ITERATION_LIMIT, DIVERGED).astype(jnp.int32)
        return cls(
            elbo_trace, variational, params, jnp.asarray(elbo_trace.shape[0], jnp.int32), status
        )

    @property
    def status_name(self) -> str:
        """How the fit ended, in words (one fit; for `fit_many`'s results index a fit first)."""
        return STATUS_NAMES[int(self.status)]


def _labels(name: str, labels, size: int) -> list:
    """Row or column labels for a result table: a DataFrame's column names, a sequence of names,
    or 0 .. size-1 for None; raises `TypeError`/`ValueError` unless there are `size` of them."""
    if labels is None:
        return list(range(size))
    if hasattr(labels, "columns"):  # a DataFrame: its column names
        labels = labels.columns
    if isinstance(labels, (str, bytes)) or not hasattr(labels, "__len__"):
        raise TypeError(
            f"{name} must be a DataFrame or a sequence of names, got {type(labels).__name__}."
        )
    labels = list(labels)
    if len(labels) != size:
        raise ValueError(
            f"{name} must give {size} names, one per row or column of the fit's "
            f"parameters, got {len(labels)}."
        )
    return labels


class FitDivergedWarning(RuntimeWarning):
    """A fit met a NaN or infinite ELBO or parameter; it returns the last finite iterate."""


def all_finite(tree) -> jax.Array:
    """True (a scalar array) when every entry of every array in `tree` is finite."""
    return jnp.all(jnp.stack([jnp.all(jnp.isfinite(leaf)) for leaf in jax.tree.leaves(tree)]))


def _non_finite_report(result: FitResult) -> str:
    """Which of the ELBO, M, S, B and Sigma hold NaN or infinite entries, and how many."""
    parts = {
        "ELBO": result.elbo_trace[int(result.n_steps)]
        if int(result.n_steps) < result.elbo_trace.shape[0]
        else result.elbo_trace[-1],
        "M": result.variational.latent_mean,
        "S": result.variational.latent_sqrt_var,
        "B": result.params.coef,
        "Sigma": result.params.covariance,
    }
    bad = []
    for name, part in parts.items():
        array = np.asarray(part)
        count = int(array.size - np.count_nonzero(np.isfinite(array)))
        if count:
            bad.append(
                f"{name} ({count} of {array.size} entries)"
                if array.size > 1
                else f"{name} = {array.item()}"
            )
    return ", ".join(bad) if bad else "nothing (the fit was stopped at that step)"


def first_bad_step(result: FitResult) -> int:
    """The first iterate k (after k steps) whose ELBO is not finite, or `n_steps` when only the
    returned parameters are."""
    trace = np.asarray(result.elbo_trace)[: int(result.n_steps) + 1]
    bad = np.flatnonzero(~np.isfinite(trace))
    return int(bad[0]) if bad.size else int(result.n_steps)


def report_divergence(
    result: FitResult, replay: Callable[[int], FitResult], *, stacklevel: int = 3
) -> FitResult:
    """The result of a fit as it should be returned: unchanged unless it diverged.

    A diverged fit warns (`FitDivergedWarning`, naming the step and what went non-finite) and
    returns the last iterate whose ELBO was finite: `replay(k)` must rerun the same fit for
    exactly `k` steps (a compiled fit is deterministic, so this is the same iterate), and the
    trace keeps the finite ELBOs, its later entries repeating the last one.

    Raises:
        FloatingPointError: the ELBO is not finite even at the starting point.
    """
    if int(result.status) != DIVERGED:
        return result
    bad_step = first_bad_step(result)
    if bad_step == 0:
        raise FloatingPointError(
            "the ELBO is not finite at the starting point: check the offsets and covariates "
            "(very large offsets make exp(O + M) overflow in float32)."
        )
    what = _non_finite_report(result)
    last = bad_step - 1
    kept = replay(last)
    trace = jnp.where(
        jnp.arange(result.elbo_trace.shape[0]) <= last, result.elbo_trace, result.elbo_trace[last]
    )
    warnings.warn(
        f"the fit diverged: after step {bad_step} it found non-finite {what}. It returns the last "
        f"iterate with a finite ELBO (after {last} steps, ELBO {float(result.elbo_trace[last]):.6g}) with "
        "status 'diverged'. Try a smaller learning rate or another optimizer.",
        FitDivergedWarning,
        stacklevel=stacklevel,
    )
    return FitResult(
        trace,
        kept.variational,
        kept.params,
        jnp.asarray(last, jnp.int32),
        jnp.asarray(DIVERGED, jnp.int32),
    )


def negative_elbo(variational: Variational, params: ModelParams, data: PLNData) -> jax.Array:
    """The loss the optimizer minimises (scalar); the variational parameters come first for `grad`."""
    return -elbo(data, variational, params)


def init_variational(data: PLNData) -> Variational:
    """A start near the data: M = log(Y + 1) - O and S = 1/2, each `(n_samples, n_species)`.

    Starting at M = 0 puts exp(O + M) orders of magnitude away from the counts and Adam
    then needs thousands of steps. This start puts each rate near its count, but it is far
    from the optimum in ELBO terms (on oaks, tens of thousands of nats below it: S = 1/2 and
    the prior term are far off), which is why the first steps gain so much.
    """
    latent_mean = jnp.log1p(data.counts) - data.offsets
    return Variational(latent_mean, jnp.full_like(latent_mean, 0.5))


def numpy_start(data: PLNData) -> Variational:
    """`init_variational(data)` computed by NumPy and copied to the device: the start levels 5
    and 6 take. Run op by op, each operation of `init_variational` compiles a program of its own
    at a fit's first call on a new shape, and even jitted it compiles one; NumPy compiles none.
    Its log1p may differ from XLA's in the last bit of a few entries."""
    latent_mean = np.log1p(np.asarray(data.counts)) - np.asarray(data.offsets)
    return Variational(jax.device_put(latent_mean), jax.device_put(np.full_like(latent_mean, 0.5)))


def device_array(value, dtype, sharding=None) -> jax.Array:
    """`value` (a fit's `tol`, its step limits) as a JAX array of `dtype`, copied from NumPy to
    the device (or laid out by `sharding`): `jnp.asarray` would compile a conversion program of
    its own at a fit's first call. Passed as a traced argument, a new value does not recompile."""
    return jax.device_put(np.asarray(value, dtype), sharding)


def update_step(
    variational: Variational,
    params: ModelParams,
    opt_state: optax.OptState,
    data: PLNData,
    optimizer: optax.GradientTransformation,
) -> tuple[Variational, ModelParams, optax.OptState, jax.Array]:
    """One iteration: an optimizer step on (M, S), then the closed-form (B, Sigma).

    Returns the new variational parameters, model parameters and optimizer state, and the
    ELBO (scalar) at the parameters this step started from.
    """
    loss, grads = jax.value_and_grad(negative_elbo)(variational, params, data)
    updates, opt_state = optimizer.update(grads, opt_state, variational)
    variational = optax.apply_updates(variational, updates)
    return variational, closed_form_params(data, variational), opt_state, -loss


def check_fit_arguments(data: PLNData, n_iter: int, *, warn_on_separation: bool = True) -> None:
    """Raises `TypeError`/`ValueError` for a `fit` call that cannot work, and warns
    (`SeparationWarning`) when some coefficients have no finite estimate: levels 0-4 then fit
    the data as given, and their ELBO creeps up as those coefficients drift (levels 5 and 6
    pass `warn_on_separation=False` and handle it themselves)."""
    if not isinstance(data, PLNData):
        raise TypeError(
            f"data must be a PLNData (use jaxcourse.pln.make_data), got {type(data).__name__}."
        )
    if isinstance(n_iter, bool) or not isinstance(n_iter, int):
        raise TypeError(f"n_iter must be an int, got {type(n_iter).__name__}.")
    if n_iter < 1:
        raise ValueError(f"n_iter must be at least 1, got {n_iter}.")
    if warn_on_separation:
        warn_separation(data, find_separation(data), stacklevel=4)
