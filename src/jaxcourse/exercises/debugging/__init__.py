"""Checkers for the exercises of the chapter 'Debugging and the sharp bits', one private module per
exercise."""

from .._collect import export_checkers

export_checkers(__name__, globals())
