"""`pln.design_from_formula`: covariates from a model formula (the optional formulaic), with names."""

import builtins
import importlib.util

import numpy as np
import pandas as pd
import pytest

from jaxcourse import pln
from jaxcourse.pln import level5


@pytest.fixture(scope="module")
def oaks_frame():
    table = pln.load_oaks_table()
    return pd.DataFrame({name: table[name] for name in pln._data.OAKS_COVARIATES})


def test_names_are_kept_and_the_design_is_the_hand_built_one(oaks_frame):
    """With an intercept, the formula codes as `design_matrix` does, column for column: the
    first level in sorted order is the reference, a number is a column as it is."""
    design = pln.design_from_formula("tree + dist2ground", oaks_frame)
    by_hand, names = pln.design_matrix(
        {"tree": oaks_frame.tree.to_numpy(), "dist2ground": oaks_frame.dist2ground.to_numpy()}
    )
    assert list(design.columns) == [
        "Intercept",
        "tree[T.resistant]",
        "tree[T.susceptible]",
        "dist2ground",
    ]
    assert names == ("intercept", "tree=resistant", "tree=susceptible", "dist2ground")
    np.testing.assert_array_equal(design.to_numpy(), by_hand)
    assert design.dtypes.eq(np.float64).all() and design.index.equals(oaks_frame.index)
    np.testing.assert_array_equal(
        design.to_numpy(), np.asarray(pln.load_oaks(covariates=("tree", "dist2ground")).covariates)
    )


def test_intercept_handling():
    frame = pd.DataFrame({"group": ["b", "a", "c", "a", "b"], "x": [0.5, 1.0, 2.0, 3.0, 4.0]})
    with_intercept = pln.design_from_formula("group", frame)
    assert list(with_intercept.columns) == ["Intercept", "group[T.b]", "group[T.c]"]
    for formula in ("0 + group", "group - 1"):  # no intercept: one column per level
        without = pln.design_from_formula(formula, frame)
        assert list(without.columns) == ["group[a]", "group[b]", "group[c]"]
        np.testing.assert_array_equal(without.sum(axis=1), np.ones(5))
    numeric = pln.design_from_formula("0 + x", frame)
    assert list(numeric.columns) == ["x"]
    np.testing.assert_array_equal(numeric.x, frame.x)
    as_factor = pln.design_from_formula("C(x)", frame)  # a number made a factor
    assert as_factor.shape == (5, 5) and as_factor.columns[1] == "C(x)[T.1.0]"


def test_a_formula_design_fits_and_names_b(oaks_frame):
    design = pln.design_from_formula("dist2ground", oaks_frame)
    table = pln.load_oaks_table()
    data = pln.make_data(table["endog"].iloc[:, :10], table["offsets"].iloc[:, :10], design)
    result = level5.fit(data, 2000, optimizer=level5.NEWTON_MOMENTUM)
    coef = result.coef_frame(design, table["endog"].iloc[:, :10])
    assert list(coef.index) == ["Intercept", "dist2ground"]
    assert list(coef.columns) == list(table["endog"].columns[:10])
    assert result.status_name == "converged" and np.isfinite(coef.to_numpy()).all()


@pytest.mark.parametrize(
    ("formula", "message"),
    [
        ("tree +", r"cannot build covariates from formula 'tree \+'.*insuff"),
        ("height", r"formula 'height'.*`height` is not present.*the columns of frame: \['tree'"),
        ("y ~ tree", r"left-hand side: give the covariates only"),
        ("0", r"gives no column"),
    ],
)
def test_a_bad_formula_gets_a_clear_error(oaks_frame, formula, message):
    with pytest.raises(ValueError, match=message):
        pln.design_from_formula(formula, oaks_frame)


def test_a_missing_value_is_refused_not_dropped(oaks_frame):
    """formulaic's default drops a row with a missing value, and X would no longer line up with
    the counts' rows; here it is an error."""
    frame = oaks_frame.copy()
    frame.loc[3, "dist2ground"] = np.nan
    with pytest.raises(ValueError, match=r"dist2ground.*null.*a missing value is refused"):
        pln.design_from_formula("tree + dist2ground", frame)


def test_wrong_types_are_refused(oaks_frame):
    with pytest.raises(TypeError, match="formula must be a string"):
        pln.design_from_formula(["tree"], oaks_frame)
    with pytest.raises(TypeError, match="frame must be a pandas DataFrame"):
        pln.design_from_formula("tree", oaks_frame.to_dict())


def test_without_formulaic_the_error_says_how_to_install_it(monkeypatch):
    real_find_spec = importlib.util.find_spec

    def find_spec(name, *args, **kwargs):
        return None if name == "formulaic" else real_find_spec(name, *args, **kwargs)

    monkeypatch.setattr(importlib.util, "find_spec", find_spec)
    real_import = builtins.__import__

    def refuse(name, *args, **kwargs):
        if name.split(".")[0] == "formulaic":
            raise ModuleNotFoundError("No module named 'formulaic'")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", refuse)
    with pytest.raises(ImportError, match=r"pip install formulaic.*\.\[formula\]"):
        pln.design_from_formula("x", pd.DataFrame({"x": [1.0, 2.0]}))
