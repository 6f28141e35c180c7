"""The shared result base (fastldp.results): aliases, std, to_frame, the one-line repr."""

import sys
from dataclasses import FrozenInstanceError, dataclass
from typing import Optional

import numpy as np
import pytest

from fastldp.results import REPR_WIDTH, PrivacyStatement, Result

pd = pytest.importorskip("pandas")


@dataclass(frozen=True, repr=False)
class Vector(Result):
    _estimate_field = "mean"
    mean: np.ndarray
    variances: Optional[np.ndarray]
    n: int
    privacy: PrivacyStatement
    categories: Optional[tuple] = None


@dataclass(frozen=True, repr=False)
class Matrix(Result):
    """A result without variances or sanitization (both then read as None)."""

    _estimate_field = "matrix"
    matrix: np.ndarray
    n: int
    privacy: PrivacyStatement


def _vector(size, categories=None, variances=True, privacy=None):
    mean = np.linspace(-3.0, 3.0, size)
    var = np.linspace(1.0, 4.0, size) if variances else None
    return Vector(mean, var, 1000, privacy or PrivacyStatement.local(epsilon=1.0), categories)


def test_estimate_is_the_family_field_itself():
    r = _vector(5)
    assert r.estimate is r.mean
    m = Matrix(np.zeros((2, 3)), 7, PrivacyStatement.zcdp(rho=0.5))
    assert m.estimate is m.matrix


def test_std_is_the_square_root_of_the_variances():
    r = _vector(50)
    np.testing.assert_array_equal(r.std, np.sqrt(r.variances))
    assert np.all(r.std ** 2 == pytest.approx(r.variances, rel=1e-15))


def test_undefined_members_are_none_and_typos_still_raise():
    m = Matrix(np.zeros((2, 3)), 7, PrivacyStatement.zcdp(rho=0.5))
    assert m.variances is None and m.std is None
    assert m.sanitization is None and m.categories is None
    with pytest.raises(AttributeError, match="varainces"):
        m.varainces  # noqa: B018
    assert _vector(3, variances=False).std is None


def test_a_result_stays_frozen():
    with pytest.raises(FrozenInstanceError):
        _vector(3).n = 4


@pytest.mark.parametrize("make", [
    lambda: _vector(10_000),
    lambda: _vector(10_000, categories=tuple(f"a very long label\nnumber {j}" * 5
                                             for j in range(10_000))),
    lambda: _vector(10_000, privacy=PrivacyStatement.local(
        epsilons=np.linspace(0.123456789, 9.87654321, 10_000))),
    lambda: Matrix(np.arange(10_000.0).reshape(100, 100) * 1e-7 + 1 / 3, 10**12,
                   PrivacyStatement.zcdp(rho=0.125)),
    lambda: Matrix(np.zeros((0, 4)), 0, PrivacyStatement.local()),
    # whatever a family puts in its statement, the line is cut at the width
    lambda: Matrix(np.ones((3,) * 6), 10**30, PrivacyStatement("a long model name " * 20, "user",
                                                                epsilon=1.0, delta=1e-9)),
])
def test_repr_is_one_short_line_whatever_the_size(make):
    text = repr(make())
    assert len(text) <= REPR_WIDTH, text
    assert "\n" not in text
    assert text.startswith(("Vector(", "Matrix(")) and text.endswith(")")


def test_a_repr_too_long_is_cut_and_long_labels_are_shortened():
    m = Matrix(np.ones(4), 3, PrivacyStatement("model " * 60, "report", epsilon=1.0))
    text = repr(m)
    assert len(text) == REPR_WIDTH and text.endswith("...)")
    text = repr(_vector(3, categories=("x" * 300, "y", "z")))
    assert "x" * 15 + "~=" in text and "x" * 16 not in text


def test_repr_shows_kind_shape_n_budget_and_the_first_entries():
    text = repr(_vector(10_000, categories=tuple(f"c{j}" for j in range(10_000))))
    assert "Vector(shape (10000,), n=1000, epsilon=1 (local DP, per report)" in text
    assert "c0=-3" in text and "c1=" in text and text.endswith("...)")
    text = repr(Matrix(np.arange(6.0).reshape(2, 3), 5, PrivacyStatement.zcdp(rho=0.25)))
    assert text == "Matrix(shape (2, 3), n=5, rho=0.25 (zCDP, per person): [0, 0]=0, [0, 1]=1, " \
                   "[0, 2]=2, [1, 0]=3, ...)"


def test_to_frame_vector_has_one_row_per_entry_with_std():
    r = _vector(7)
    frame = r.to_frame()
    assert list(frame.columns) == ["index", "estimate", "std"]
    assert frame.shape == (7, 3)
    np.testing.assert_array_equal(frame["index"], np.arange(7))
    np.testing.assert_array_equal(frame["estimate"], r.mean)
    np.testing.assert_array_equal(frame["std"], np.sqrt(r.variances))


def test_to_frame_labelled_vector_keeps_the_labels():
    labels = ("x", "y", 3)
    frame = _vector(3, categories=labels).to_frame()
    assert list(frame.columns) == ["category", "estimate", "std"]
    assert list(frame["category"]) == ["x", "y", 3]


def test_to_frame_matrix_is_long_and_row_major_without_std():
    mat = np.arange(12.0).reshape(3, 4)
    frame = Matrix(mat, 9, PrivacyStatement.local(epsilon=2.0)).to_frame()
    assert list(frame.columns) == ["row", "col", "estimate"]
    assert frame.shape == (12, 3)
    np.testing.assert_array_equal(mat[frame["row"], frame["col"]], frame["estimate"])
    np.testing.assert_array_equal(frame["estimate"], mat.ravel())


def test_to_frame_without_pandas_names_the_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "pandas", None)  # import pandas now raises ImportError
    with pytest.raises(ImportError, match="pip install pandas"):
        _vector(3).to_frame()


def test_privacy_statement_summarizes_personal_budgets():
    same = PrivacyStatement.local(epsilons=np.full(4, 0.5))
    assert same.epsilon == 0.5 and not same.personal and same.epsilon_min is None
    eps = np.array([2.0, 0.5, 1.0, 4.0, 0.25])
    mixed = PrivacyStatement.local(epsilons=eps)
    assert mixed.personal and mixed.epsilon is None
    assert (mixed.epsilon_min, mixed.epsilon_median, mixed.epsilon_max) == (0.25, 1.0, 4.0)
    assert mixed.budget() == "epsilon in [0.25, 4], median 1"
    assert str(mixed) == "epsilon in [0.25, 4], median 1 (local DP, per report)"
    assert PrivacyStatement.local(epsilon=1.0, delta=1e-6).budget() == "epsilon=1, delta=1e-06"
    z = PrivacyStatement.zcdp(rho=0.125)
    assert (z.model, z.unit, z.rho, z.epsilon, z.delta) == ("zCDP", "person", 0.125, None, None)
    assert PrivacyStatement("local DP", "report", personal=True).budget() == "personal epsilons"
