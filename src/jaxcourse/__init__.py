"""JAX, Just in Time: the course's companion package.

Subpackages and modules, one idea each:
    pln        the Poisson-lognormal case study (data, model maths, fitting levels)
    bench      honest timings, the environment they ran in, and the PLN benchmark
               (python -m jaxcourse.bench pln ...)
    optim      Rprop exactly as torch runs it, Newton-Rprop and Newton momentum, as optax transforms
    checks     exercise verdicts; `exercises` holds each chapter's checkers
    display    show package source in a chapter
    plotting   figures shared by chapters
    config     problem sizes chosen by device
    parallel   the data-parallel training example of the sharding chapter
    tracecount count how often a function is traced
    quarto_check  static checks of the Quarto project (Quarto itself is not needed)
    notebooks  generate notebooks from the chapters
"""

__version__ = "0.1.0"
