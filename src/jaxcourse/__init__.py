"""JAX, Just in Time: the course's companion package.

Subpackages and modules, one idea each:
    pln        the Poisson-lognormal case study (data, model maths, fitting levels)
    timing     honest timings of JAX code (`time_call`)
    environment what a timing or a page ran on: backend, devices, versions, CPU
    bench      the PLN benchmark (python -m jaxcourse.bench pln ...); re-exports timing
    optim      Rprop exactly as torch runs it, Newton-Rprop and Newton momentum, as optax transforms
    checks     exercise verdicts; `exercises` holds each chapter's checkers
    ladder     hint ladders: checker.hint(1), .hint(2), .solution()
    progress   a participant's exercises in one table, from their saved notebooks' verdicts
    room       the view of the room, opt in: a small server of participants' live verdicts
    display    show package source in a chapter
    page       the first cell of every chapter: short tracebacks, plot style, banner
    plotting   figures shared by chapters
    diagrams   pictures of the ideas (jit pipeline, vmap axes, flatten, sharding) drawn from
               real JAX objects
    debugging  parity checks against float64 and tracebacks without JAX's frames
    jit_parity the stand-alone reproducer of the open XLA:CPU miscompilation (jax and numpy only)
    hlo        what a compiled program writes to memory: the arrays between its fused loops
    reductions sums over large arrays in the form XLA fuses, chosen once for the pinned release
    config     problem sizes chosen by device
    optional   the optional extras, `compare` (pyPLNmodels, torch) and `formula` (formulaic),
               imported only where needed
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
    export     call serialized jax.export bytes in a fresh process that imports only jax and numpy
    precision  floating-point facts measured per dtype, naive, pairwise and Kahan sums, bytes
    pallas_kernels the Pallas chapter's kernels and level 5's fused elementwise pass, interpreted
               on a CPU and compiled on a GPU or TPU

Build tooling (notebook generation, static checks of the Quarto book) is not part of this
package: it lives in `tools/` at the repository root, so learners never install it.
"""

__version__ = "0.1.0"
