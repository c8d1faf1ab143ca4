"""Covariates from a model formula (`"tree + dist2ground"`), through the optional `formulaic`.

`design_from_formula` builds the design matrix X as a pandas DataFrame whose column names say what
each column is (`"Intercept"`, `"tree[T.resistant]"`, `"dist2ground"`), so that `make_data` fits it
and `FitResult.coef_frame(X)` labels B's rows with those names. `formulaic` is the course's
`formula` extra (`pip install -e '.[formula]'`; `scripts/setup.sh` installs it in its full mode):
nothing else in the package needs it.
"""

from __future__ import annotations

from ..optional import require_formula


def design_from_formula(formula: str, frame):
    """The design matrix of `formula`'s right-hand side on `frame`, one row per sample.

    Coding as `formulaic` does it (as R and patsy do): an intercept unless the formula says
    `0 +` or `- 1`; a number as it is; a factor (strings, or a number wrapped in `C(...)`) as one
    0/1 column per level but the first in sorted order when there is an intercept, one per level
    when there is none. With an intercept this is `design_matrix`'s coding, column for column.

    Args:
        formula: the covariates only, such as `"tree + dist2ground"`: the counts are the response,
            so a formula with `~` is refused.
        frame: a pandas DataFrame with one row per sample and the columns the formula names.

    Returns:
        A float64 pandas DataFrame `(n_samples, n_covariates)`, named columns, `frame`'s index.

    Raises:
        ImportError: formulaic is not installed (the message says how to install it).
        TypeError: `formula` is not a string or `frame` is not a DataFrame.
        ValueError: a formula that does not parse, names a column `frame` lacks, has a `~`, gives
            no column, or meets a missing value (formulaic would otherwise drop that sample's row,
            and X would no longer line up with the counts).
    """
    require_formula()
    import pandas as pd
    from formulaic import model_matrix
    from formulaic.errors import FormulaicError

    if not isinstance(formula, str):
        raise TypeError(
            f"formula must be a string such as 'tree + dist2ground', got {type(formula).__name__}."
        )
    if not isinstance(frame, pd.DataFrame):
        raise TypeError(
            f"frame must be a pandas DataFrame of the covariates, got {type(frame).__name__}."
        )
    if "~" in formula:
        raise ValueError(
            f"formula {formula!r} has a left-hand side: give the covariates only (such as "
            "'tree + dist2ground'); the counts are the response."
        )
    try:
        matrix = model_matrix(formula, frame, na_action="raise")
    except (FormulaicError, ValueError, SyntaxError) as error:
        reason = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        raise ValueError(
            f"cannot build covariates from formula {formula!r}: {reason} "
            f"(the columns of frame: {list(frame.columns)}; a missing value is refused, not dropped)."
        ) from None
    if matrix.shape[1] == 0:
        raise ValueError(f"formula {formula!r} gives no column: keep the intercept or name one.")
    return pd.DataFrame(
        matrix.to_numpy(dtype="float64"), index=frame.index, columns=list(matrix.columns)
    )
