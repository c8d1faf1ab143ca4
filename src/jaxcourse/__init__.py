"""JAX, Just in Time: the course's companion package.

Subpackages and modules, one idea each:
    pln        the Poisson-lognormal case study (data, model maths, fitting levels)
    bench      honest timings and the environment they ran in
    checks     exercise verdicts; `exercises` holds each chapter's checkers
    display    show package source in a chapter
    plotting   figures shared by chapters
    config     problem sizes chosen by device
    notebooks  generate notebooks from the chapters
"""

__version__ = "0.1.0"
