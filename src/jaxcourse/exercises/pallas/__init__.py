"""Checkers for the exercises of the chapter 'Writing your own kernel with Pallas', one private
module per exercise. Every exercise runs its kernel in interpret mode on a CPU
(`pallas_kernels.interpret_mode`)."""

from .._collect import export_checkers

export_checkers(__name__, globals())
