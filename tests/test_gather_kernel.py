"""The users' gathers (fastldp._kernels._gather) against naive Python twins.

Each kernel only copies and casts, so it must equal its twin bit for bit:
contiguous and strided inputs, float32 and float64, users with NaN, inf,
huge and zero entries, empty selections, and out-of-range indices refused.
"""

from __future__ import annotations

import numpy as np
import pytest

from fastldp._kernels._gather import (
    gather_active, gather_users_float32, take_block, take_columns, take_entries,
)


# ---------------------------------------------------------------- naive twins
def naive_gather(X, y, who):
    c, m, d = len(who), X.shape[1], X.shape[2]
    Xc = np.empty((c, m, d), np.float32)
    yc = np.empty((c, m), np.float32)
    big = np.empty(c)
    for i, u in enumerate(who):
        values = []
        for r in range(m):
            for j in range(d):
                Xc[i, r, j] = np.float32(X[u, r, j])
                values.append(float(X[u, r, j]))
            yc[i, r] = np.float32(y[u, r])
            values.append(float(y[u, r]))
        big[i] = np.nan if any(v != v for v in values) else max([0.0] + [abs(v) for v in values])
    return Xc, yc, big


def naive_take(X, keep):
    n, m, _ = X.shape
    out = np.empty((n, m, keep.shape[1]), X.dtype)
    for u in range(n):
        for r in range(m):
            for j, col in enumerate(keep[u]):
                out[u, r, j] = X[u, r, col]
    return out


def naive_active(X, rows, order, width):
    out = np.zeros((len(rows), X.shape[1], order.shape[1]))
    for i, u in enumerate(rows):
        for r in range(X.shape[1]):
            for j in range(width[i]):
                out[i, r, j] = float(X[u, r, order[i, j]])
    return out


def _same(a, b):
    return a.dtype == b.dtype and a.shape == b.shape and np.array_equal(a, b, equal_nan=True)


# ---------------------------------------------------------------- gather_users_float32
@pytest.mark.parametrize("strided", [False, True])
def test_gather_users_float32_equals_its_twin_and_numpy(strided):
    rng = np.random.default_rng(0)
    X = rng.standard_normal((9, 7, 5)) * np.exp(rng.uniform(-30, 30, (9, 1, 1)))
    y = rng.standard_normal((9, 7))
    X[2] = 0.0
    y[2] = 0.0                      # an all-zero user: largest entry 0
    X[3, 1, 2] = np.nan             # NaN: NaN, as NumPy's max
    X[4, 0, 0] = -np.inf            # inf: inf
    y[5, 3] = 1e300                 # beyond float32: cast to inf, largest entry 1e300
    X[6, 2, 1] = -0.0
    if strided:                     # a user's first rows only (first_rows): not contiguous
        X, y = X[:, :5], y[:, :5]
    who = np.array([8, 0, 3, 3, 2, 4, 5, 6], dtype=np.intp)
    with np.errstate(over="ignore"):
        got = gather_users_float32(X, y, who)
        want = naive_gather(X, y, who)
        numpy_cast = (X[who].astype(np.float32), y[who].astype(np.float32))
    for g, w in zip(got, want):
        assert _same(g, w)
    assert _same(got[0], numpy_cast[0]) and _same(got[1], numpy_cast[1])
    big = got[2]  # the users 8, 0, 3, 3, 2, 4, 5, 6
    assert np.isnan(big[2]) and np.isnan(big[3])
    assert big[4] == 0.0 and big[5] == np.inf and big[6] == 1e300


def test_gather_users_float32_edges_and_errors():
    X, y = np.ones((3, 2, 4)), np.ones((3, 2))
    Xc, yc, big = gather_users_float32(X, y, np.array([], dtype=np.intp))
    assert Xc.shape == (0, 2, 4) and yc.shape == (0, 2) and big.shape == (0,)
    with pytest.raises(IndexError, match=r"who\[1\] = 3 is outside \[0, 3\)"):
        gather_users_float32(X, y, np.array([0, 3], dtype=np.intp))
    with pytest.raises(IndexError, match=r"who\[0\] = -1"):
        gather_users_float32(X, y, np.array([-1], dtype=np.intp))
    with pytest.raises(ValueError, match=r"y must have shape \(3, 2\)"):
        gather_users_float32(X, np.ones((3, 3)), np.array([0], dtype=np.intp))


# ---------------------------------------------------------------- take_columns
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_take_columns_is_take_along_axis(dtype):
    rng = np.random.default_rng(1)
    X = rng.standard_normal((6, 4, 10)).astype(dtype)
    keep = np.sort(np.argsort(rng.random((6, 10)), axis=1)[:, :3], axis=1).astype(np.intp)
    keep[0] = [9, 9, 0]  # repeats and any order are gathers too
    got = take_columns(X, keep)
    assert _same(got, naive_take(X, keep))
    assert _same(got, np.take_along_axis(X, keep[:, None, :], axis=2))
    assert _same(take_columns(X[:, ::2], keep), np.take_along_axis(X[:, ::2], keep[:, None, :],
                                                                  axis=2))
    with pytest.raises(IndexError, match=r"keep\[1, 2\] = 10 is outside \[0, 10\)"):
        bad = keep.copy()
        bad[1, 2] = 10
        take_columns(X, bad)
    with pytest.raises(ValueError, match="keep must have 6 rows"):
        take_columns(X, keep[:5])


# ---------------------------------------------------------------- gather_active
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_gather_active_pads_with_zeros(dtype):
    rng = np.random.default_rng(2)
    X = rng.standard_normal((7, 5, 12)).astype(dtype)
    rows = np.array([6, 1, 1, 3], dtype=np.intp)
    order = np.argsort(rng.random((4, 12)), axis=1)[:, :4].astype(np.intp)
    width = np.array([4, 0, 2, 1], dtype=np.intp)
    got = gather_active(X, rows, order, width)
    assert _same(got, naive_active(X, rows, order, width))
    # the local Lasso's former NumPy expression
    XA = np.take_along_axis(X[rows], order[:, None, :], axis=2).astype(np.float64)
    XA[np.broadcast_to((np.arange(4)[None, :] >= width[:, None])[:, None, :], XA.shape)] = 0.0
    assert _same(got, XA)
    with pytest.raises(ValueError, match=r"width\[0\] = 5 is outside \[0, 4\]"):
        gather_active(X, rows, order, np.array([5, 0, 0, 0], dtype=np.intp))
    with pytest.raises(IndexError, match=r"rows\[0\] = 7"):
        gather_active(X, np.array([7, 0, 0, 0], dtype=np.intp), order, width)
    bad = order.copy()
    bad[2, 1] = -1
    with pytest.raises(IndexError, match=r"order\[2, 1\] = -1"):
        gather_active(X, rows, bad, width)
    bad[2, 1] = 12
    gather_active(X, rows, bad, np.array([4, 0, 1, 1], dtype=np.intp))  # beyond the width: unread


@pytest.mark.parametrize("d", [1, 3, 4, 5, 8, 9])
def test_gather_users_float32_finds_every_lane(d):
    # the largest magnitude and a NaN in every position of the unrolled loop and its tail
    rng = np.random.default_rng(d)
    m = 3
    for pos in range(m * d + m):
        X = rng.uniform(-1, 1, (2, m, d))
        y = rng.uniform(-1, 1, (2, m))
        flat = np.concatenate([X[1].ravel(), y[1]])
        flat[pos] = -7.5
        X[1], y[1] = flat[:m * d].reshape(m, d), flat[m * d:]
        X[0].flat[pos % (m * d)] = np.nan
        got = gather_users_float32(X, y, np.array([0, 1], dtype=np.intp))
        assert np.isnan(got[2][0]) and got[2][1] == 7.5
        for g, w in zip(got, naive_gather(X, y, [0, 1])):
            assert _same(g, w)


# ---------------------------------------------------------------- take_block, take_entries
@pytest.mark.parametrize("layout", ["C", "F", "strided"])
def test_take_block_and_entries_are_fancy_indexing(layout):
    rng = np.random.default_rng(3)
    X = rng.standard_normal((40, 9))
    X = {"C": X, "F": np.asfortranarray(X), "strided": rng.standard_normal((40, 18))[:, ::2]}[layout]
    rows = np.sort(rng.integers(0, 40, 25)).astype(np.intp)
    cols = np.array([7, 0, 3, 3], dtype=np.intp)
    block = take_block(X, rows, cols)
    assert _same(block, X[rows[:, None], cols])
    assert _same(block, np.array([[X[r, c] for c in cols] for r in rows]))
    assert _same(take_block(X, rows, cols[:0]), X[rows[:, None], cols[:0]])  # no column
    j = rng.integers(0, 9, 25).astype(np.intp)
    entries = take_entries(X, rows, j)
    assert _same(entries, X[rows, j])
    assert _same(entries, np.array([X[r, c] for r, c in zip(rows, j)]))
    with pytest.raises(IndexError, match=r"rows\[0\] = 40 is outside \[0, 40\)"):
        take_block(X, np.array([40], dtype=np.intp), cols)
    with pytest.raises(IndexError, match=r"cols\[1\] = -1"):
        take_block(X, rows, np.array([0, -1], dtype=np.intp))
    with pytest.raises(IndexError, match=r"cols\[2\] = 9 is outside \[0, 9\)"):
        take_entries(X, rows[:3], np.array([0, 1, 9], dtype=np.intp))
    with pytest.raises(ValueError, match="one length"):
        take_entries(X, rows, j[:3])
