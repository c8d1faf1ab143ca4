"""JAX, Just in Time: the course's companion package.

Subpackages and modules, one idea each:
    pln        the Poisson-lognormal case study (data, model maths, fitting levels)
    timing     honest timings of JAX code (`time_call`); environment: where they ran
    bench      the PLN benchmark (python -m jaxcourse.bench pln ...); re-exports timing
    optim      Rprop exactly as torch runs it, Newton-Rprop and Newton momentum, as optax transforms
    checks     exercise verdicts; `exercises` holds each chapter's checkers
    display    show package source in a chapter
    plotting   figures shared by chapters
    diagrams   pictures of the ideas (jit pipeline, vmap axes, flatten, sharding) drawn from
               real JAX objects
    debugging  parity checks against float64 and tracebacks without JAX's frames
    config     problem sizes chosen by device
    parallel   the data-parallel training example of the sharding chapter, the mesh axis name
    tracecount count how often a function is traced
    mesh       the ("data", "model") grid of devices, checked before jax.make_mesh sees it
    collectives the collectives' HLO names and bytes sent, and the collective matmul
    model_parallel an MLP sharded by FSDP and tensor parallelism, stepped with jit and shard_map
    multiprocess the FSDP step on two processes joined by jax.distributed, and a bounded launcher
    profiling  read a jax.profiler trace: events by kind, idle gaps
    roofline   FLOPs and bytes from the cost analysis, the measured peak and bandwidth
    memory     a compiled program's memory figures (arguments, outputs, temporaries, aliases)
    compilation_cache  the course's way to turn on JAX's persistent compilation cache

Build tooling (notebook generation, static checks of the Quarto book) is not part of this
package: it lives in `tools/` at the repository root, so learners never install it.
"""

__version__ = "0.1.0"
