"""The reference fit: pyPLNmodels' `Pln` on the same data, quietly, with its ELBO in our convention.

Everything that reads pyPLNmodels' private attributes lives here (`trace_pyplnmodels`), so the
benchmark only sees plain arrays.
"""

from __future__ import annotations

import contextlib
import io
import time
import warnings
from typing import Any, NamedTuple

import numpy as np

from ..optional import require_compare
from ._data import PLNData
from ._model import stirling_correction
from .constants import PYPLNMODELS_MAXITER


class ReferenceFit(NamedTuple):
    """pyPLNmodels' result on one data set.

    Attributes:
        elbo: final ELBO with exact log-factorials (comparable with `jaxcourse.pln.elbo`).
        elbo_stirling: the same, in pyPLNmodels' own Stirling convention.
        seconds: wall time of `fit` (initialisation included).
        model: the fitted `pyPLNmodels.Pln` object.
    """

    elbo: float
    elbo_stirling: float
    seconds: float
    model: Any  # pyPLNmodels ships no type hints


@contextlib.contextmanager
def limited_torch_threads(threads: int | None):
    """Within the block, torch computes on `threads` threads (`torch.set_num_threads`), then
    gets back the number it had; None leaves torch's own choice (one per core)."""
    import torch

    if threads is None:
        yield
        return
    if isinstance(threads, bool) or not isinstance(threads, int) or threads < 1:
        raise ValueError(f"torch_threads must be an int of at least 1 or None, got {threads!r}.")
    before = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def fit_pyplnmodels(
    data: PLNData, *, maxiter: int = PYPLNMODELS_MAXITER, torch_threads: int | None = None
) -> ReferenceFit:
    """Fits pyPLNmodels' `Pln` (Rprop on the profiled ELBO) to `data`, silencing its progress output.

    `torch_threads`: torch's threads for this fit (`limited_torch_threads`), torch's default if None.
    On a small machine shared with JAX, one thread keeps torch's idle threads from spinning
    against JAX's (on two busy cores they multiplied a 400 x 100 fit's CPU time about ninefold).
    """
    require_compare()
    from pyPLNmodels import Pln

    with (
        limited_torch_threads(torch_threads),
        warnings.catch_warnings(),
        contextlib.redirect_stdout(io.StringIO()),
        contextlib.redirect_stderr(io.StringIO()),
    ):
        warnings.simplefilter("ignore")
        model = Pln(
            np.asarray(data.counts),
            exog=np.asarray(data.covariates),
            offsets=np.asarray(data.offsets),
            add_const=False,
        )
        start = time.perf_counter()
        model.fit(maxiter=maxiter)
        seconds = time.perf_counter() - start
        elbo_stirling = float(model.compute_elbo())
    return ReferenceFit(
        elbo_stirling - stirling_correction(data.counts), elbo_stirling, seconds, model
    )


class ReferenceTrace(NamedTuple):
    """What pyPLNmodels recorded during one fit, as plain arrays (exact log-factorial convention).

    Attributes:
        elbo: `(n_steps,)` the ELBO before each step, as pyPLNmodels monitored it.
        times_s: `(n_steps,)` the wall time at which each was recorded (initialisation included).
        variational: the final `(n, p)` M and S, as NumPy arrays.
        seconds: wall time of the whole `fit`.
        optimizer: the torch optimizer it ran and its settings, read from the fitted model.
        device: the torch device pyPLNmodels computed on (it picks CUDA whenever torch sees a GPU).
    """

    elbo: np.ndarray
    times_s: np.ndarray
    variational: tuple[np.ndarray, np.ndarray]
    seconds: float
    optimizer: str
    device: str = "cpu"


def describe_torch_optimizer(optimizer) -> str:
    """`torch.optim.Rprop(lr=0.01, etas=(0.5, 1.2), step_sizes=(1e-10, 50))`: the class and the
    settings of a torch optimizer (its `defaults`, leaving out implementation switches)."""
    switches = {"foreach", "maximize", "capturable", "differentiable", "fused"}
    settings = ", ".join(
        f"{name}={value!r}" for name, value in optimizer.defaults.items() if name not in switches
    )
    return f"torch.optim.{type(optimizer).__name__}({settings})"


def trace_pyplnmodels(
    data: PLNData, *, maxiter: int = PYPLNMODELS_MAXITER, torch_threads: int | None = None
) -> ReferenceTrace:
    """Fits pyPLNmodels (`fit_pyplnmodels`) and returns its own ELBO trace and timings.

    The trace and times come from pyPLNmodels' private monitors (`_elbo_criterion_monitor`,
    `_time_recorder`); a test on a tiny data set pins them, so an upgrade that renames them
    fails there first.
    """
    fitted = fit_pyplnmodels(data, maxiter=maxiter, torch_threads=torch_threads)
    model = fitted.model
    elbo_stirling = np.array([float(value) for value in model._elbo_criterion_monitor.elbo_list])
    latent = (model._latent_mean, model._latent_sqrt_variance)
    return ReferenceTrace(
        elbo=elbo_stirling - stirling_correction(data.counts),
        times_s=np.asarray(model._time_recorder.running_times, dtype=np.float64),
        variational=tuple(tensor.detach().cpu().numpy() for tensor in latent),
        seconds=fitted.seconds,
        optimizer=f"{describe_torch_optimizer(model.optim)}, {model._latent_mean.dtype}",
        device=str(model._latent_mean.device),
    )


class ReferenceDefaults(NamedTuple):
    """pyPLNmodels' default fit, read from its code: `Pln.fit`'s keyword defaults and the
    smoothing constant of its stopping criterion."""

    maxiter: int
    lr: float
    tol: float
    criterion_beta: float


def pyplnmodels_defaults() -> ReferenceDefaults:
    """The defaults of `pyPLNmodels.Pln.fit` (maxiter, lr, tol) and its criterion's `BETA`."""
    import inspect

    require_compare()
    from pyPLNmodels import Pln
    from pyPLNmodels.utils._criterion import BETA

    defaults = {name: p.default for name, p in inspect.signature(Pln.fit).parameters.items()}
    return ReferenceDefaults(defaults["maxiter"], defaults["lr"], defaults["tol"], float(BETA))


def earliest_stop(tol: float, beta: float) -> int:
    """The first iteration at which pyPLNmodels' criterion can be below `tol`.

    The criterion starts at 1 and, from the second iteration on, becomes
    `(1 - beta) * criterion + beta * h` with `h >= 0`; so after iteration k it is at least
    `(1 - beta)**(k - 1)`, whatever the ELBO does.
    """
    if not 0.0 < tol < 1.0 or not 0.0 < beta < 1.0:
        raise ValueError(f"tol and beta must lie in (0, 1), got {tol} and {beta}.")
    return int(np.floor(np.log(tol) / np.log1p(-beta))) + 2


def pyplnmodels_start(counts) -> tuple[np.ndarray, np.ndarray]:
    """The `(n, p)` M and S pyPLNmodels' `Pln` starts from, computed by its own initialiser
    (which takes only the counts: no offsets, no covariates)."""
    require_compare()
    import torch
    from pyPLNmodels.calculations._initialization import _init_latent_pln

    mean, sqrt_var = _init_latent_pln(torch.tensor(np.array(counts, dtype=np.float32)))
    return mean.cpu().numpy(), sqrt_var.cpu().numpy()


def criterion_trace(elbo) -> np.ndarray:
    """pyPLNmodels' stopping criterion after each ELBO of `elbo`, computed by its own monitor
    (`_ElboCriterionMonitor`), as `Pln.fit` updates it once per iteration."""
    require_compare()
    from pyPLNmodels.utils._criterion import _ElboCriterionMonitor

    monitor = _ElboCriterionMonitor()
    criteria = []
    for value in np.asarray(elbo, dtype=np.float64):
        monitor.update_criterion(float(value))
        criteria.append(float(monitor.criterion))
    return np.asarray(criteria)


class SandwichVariance(NamedTuple):
    """pyPLNmodels' sandwich estimate of the variance of B, evaluated at a fit.

    Attributes:
        as_returned: `(n_covariates, n_species)` what pyPLNmodels 1.0.10's `get_variance_coef`
            returns: the diagonal of its `(p d, p d)` sandwich, reshaped to `(d, p)`.
        by_coef: `(n_covariates, n_species)` the same diagonal with each entry put at the
            coefficient it belongs to: the sandwich is built from `kron(p x p block, d x d block)`,
            so entry `j * d + k` is species j's covariate k, and the reshape must be `(p, d)`, then
            transposed.
    """

    as_returned: np.ndarray
    by_coef: np.ndarray


def pyplnmodels_sandwich(data: PLNData, result) -> SandwichVariance:
    """pyPLNmodels' own variance estimator of B (its `SandwichPln`, Batardiere, Chiquet and
    Mariadassou's corrected variational sandwich) evaluated at `result`'s M, S and Sigma, without
    running pyPLNmodels' optimizer.

    Raises:
        ValueError: the sandwich needs at least as many samples as coefficients (n >= d p), as
            in pyPLNmodels (whose `get_variance_coef` raises when d p > n).
    """
    from types import SimpleNamespace

    require_compare()
    import torch
    from pyPLNmodels.calculations.sandwich import SandwichPln

    n_coef = data.n_covariates * data.n_species
    if n_coef > data.n_samples:
        raise ValueError(
            f"the sandwich needs at least as many samples ({data.n_samples}) as coefficients d * p = {n_coef}: "
            "fit fewer species."
        )

    def tensor(array):
        return torch.as_tensor(np.asarray(array, dtype=np.float64))

    fitted = SimpleNamespace(
        _endog=tensor(data.counts),
        _exog=tensor(data.covariates),
        _offsets=tensor(data.offsets),
        nb_cov=data.n_covariates,
        dim=data.n_species,
        n_samples=data.n_samples,
        _latent_mean=tensor(result.variational.latent_mean),
        _latent_sqrt_variance=tensor(result.variational.latent_sqrt_var),
        _covariance=tensor(result.params.covariance),
    )
    sandwich = SandwichPln(fitted)
    as_returned = sandwich.get_variance_coef().numpy()
    diagonal = torch.diag(sandwich.get_sandwich()).numpy() / data.n_samples
    return SandwichVariance(as_returned, diagonal.reshape(data.n_species, data.n_covariates).T)


def load_scrna_table(n_samples: int = 400, n_genes: int = 100) -> dict:
    """pyPLNmodels' single-cell RNA data (`load_scrna`, read from the data it ships: no network),
    quietly, with the offsets a fit needs: data the course was not built on.

    Args:
        n_samples: the first `n_samples` cells (pyPLNmodels ships 2000 at most).
        n_genes: the first `n_genes` genes (3000 at most).

    Returns:
        `counts` (an `(n_samples, n_genes)` DataFrame, one column per gene), `cell_type` (a
        Series: `Macrophages`, `T_cells_CD4+` or `T_cells_CD8+`) and `offsets` (a DataFrame of the
        counts' shape: the log of each cell's total over these genes, the same in every column).

    Raises:
        ValueError: a cell with no count in these genes, whose log total would be -inf.
    """
    require_compare()
    import pandas as pd

    with (
        warnings.catch_warnings(),
        contextlib.redirect_stdout(io.StringIO()),  # it prints the size it returns
    ):
        warnings.simplefilter("ignore")  # pyPLNmodels imports pkg_resources
        from pyPLNmodels import load_scrna

        table = load_scrna(n_samples=n_samples, dim=n_genes)
    counts = table["endog"]
    totals = counts.to_numpy().sum(axis=1)
    if np.any(totals == 0):
        raise ValueError(
            f"{int(np.sum(totals == 0))} cells have no count in the first {n_genes} genes, so no log "
            "library size: take more genes."
        )
    offsets = pd.DataFrame(
        np.repeat(np.log(totals)[:, None], counts.shape[1], axis=1),
        index=counts.index,
        columns=counts.columns,
    )
    return {"counts": counts, "cell_type": table["labels"].rename("cell_type"), "offsets": offsets}
