"""The reference fit: pyPLNmodels' `Pln` on the same data, quietly, with its ELBO in our convention."""

from __future__ import annotations

import contextlib
import io
import time
import warnings
from typing import NamedTuple

import numpy as np

from ._data import PLNData
from ._model import stirling_correction


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
    model: object


def fit_pyplnmodels(data: PLNData, *, maxiter: int = 400) -> ReferenceFit:
    """Fits pyPLNmodels' `Pln` (Rprop on the profiled ELBO) to `data`, silencing its progress output."""
    from pyPLNmodels import Pln

    with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
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
    return ReferenceFit(elbo_stirling - stirling_correction(data.counts), elbo_stirling, seconds, model)
