"""Relation-set parsing: the vectorized list path against the item-by-item path."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fastldp.relations.relation_sets import _from_sequence, _from_sequence_checked

SHAPE = (5, 6)


@st.composite
def pair_lists(draw):
    n = draw(st.integers(1, 12))
    out = []
    for _ in range(n):
        m = draw(st.integers(0, 6))
        codes = draw(st.lists(st.integers(0, 29), min_size=m, max_size=m, unique=True))
        arr = np.array([divmod(c, 6) for c in codes], dtype=np.int64).reshape(-1, 2)
        out.append(arr)
    return out


@settings(max_examples=200, deadline=None)
@given(pair_lists())
def test_fast_path_equals_the_checked_path(relations):
    fast = _from_sequence(relations, SHAPE, "t")
    slow = _from_sequence_checked(relations, SHAPE, "t")
    for a, b in zip(fast, slow):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("relations,match", [
    ([np.array([[0, 1]]), np.array([[2, 3], [2, 3]])], r"Got \(2, 3\) twice for identity 1"),
    ([np.array([[0, 1]]), np.array([[5, 0]])], r"Got \(5, 0\) for identity 1"),
    ([np.array([[0, 1]]), np.array([[0.5, 1.0]])], "integer arrays"),
    ([np.array([[0, 1]]), np.array([1, 2, 3])], "integer arrays"),
])
def test_errors_name_the_identity(relations, match):
    with pytest.raises(ValueError, match=match):
        _from_sequence(relations, SHAPE, "t")


def test_empty_items_and_empty_lists():
    indptr, pairs = _from_sequence([np.empty((0, 2), np.int64), np.array([[1, 1]]), []], SHAPE, "t")
    np.testing.assert_array_equal(indptr, [0, 0, 1, 1])
    np.testing.assert_array_equal(pairs, [7])
    indptr, pairs = _from_sequence([], SHAPE, "t")
    assert indptr.tolist() == [0] and pairs.size == 0
