"""Checkers for the exercises of the chapter 'Pytrees: nested containers of arrays', one private
module per exercise."""

from ._common import require_hashable_structure as require_hashable_structure
from ._count_params import check_count_params as check_count_params
from ._stack_records import check_stack_records as check_stack_records
from ._standardizer import check_standardizer as check_standardizer
from ._train_state import SCHEDULES as SCHEDULES
from ._train_state import check_train_state as check_train_state
