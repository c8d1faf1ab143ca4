"""Checkers for the exercises of the chapter 'Writing your own kernel with Pallas', one private
module per exercise. Every exercise runs its kernel in interpret mode on a CPU
(`pallas_kernels.interpret_mode`)."""

from ._add_in_place import check_add_in_place as check_add_in_place
from ._add_vectors import check_add_vectors as check_add_vectors
from ._block_sums import check_block_sums as check_block_sums
from ._exp_column_sums import check_exp_column_sums as check_exp_column_sums
from ._matmul import check_matmul as check_matmul
from ._row_softmax import check_row_softmax as check_row_softmax
