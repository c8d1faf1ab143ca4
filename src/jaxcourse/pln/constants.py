"""The facts of the case study, each stated once: the oaks data's shape and the best ELBO known.

Everything else (the benchmark, the tests, the chapters) reads them from here.
"""

OAKS_N_SAMPLES = 116
"""Trees (rows) in the oaks data."""

OAKS_N_SPECIES = 114
"""Fungal species (columns) in the oaks data."""

OAKS_N_COVARIATES = 1
"""The oaks design matrix is an intercept only."""

OAKS_SHAPE = (OAKS_N_SAMPLES, OAKS_N_SPECIES)
"""The shape of the oaks counts and offsets."""

OAKS100_COPIES = 100
"""The source tutorial's large size: oaks stacked 100 times."""

OAKS100_SHAPE = (OAKS100_COPIES * OAKS_N_SAMPLES, OAKS_N_SPECIES)
"""The shape of the counts of oaks x 100: (11600, 114)."""

BEST_KNOWN_ELBO_OAKS = -32026.02
"""The best ELBO known on oaks, in the exact log-factorial convention (every level's)."""

BEST_KNOWN_ELBO_OAKS_STIRLING = -31456.36
"""The same optimum in pyPLNmodels' convention: exact + `stirling_correction(oaks counts)`
(a test checks that the two agree)."""

PYPLNMODELS_MAXITER = 400
"""pyPLNmodels' default `maxiter` for `Pln.fit()` (a test reads it from its signature): the
reference fit runs it, and its final ELBO is the benchmark's target."""
