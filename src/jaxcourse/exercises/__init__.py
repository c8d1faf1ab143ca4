"""Exercise checkers, one module per chapter: `from jaxcourse.exercises import jit as exercises`."""
