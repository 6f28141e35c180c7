"""Gathers of rows and columns for the regression solvers.

The local Lasso of the regression family runs on chunks of users, each a
``(users, m, d)`` block of their rows; LDP-IHT reads a few entries of each
record of a batch. NumPy builds these with fancy indexing, casts and scans,
each a full pass (and its 2-d fancy indexing costs about 20 ns an entry);
these kernels make each in one pass. They only copy and cast (no
arithmetic), so their results are the NumPy expressions' bit for bit:

- :func:`gather_users_float32` is ``X[who].astype(float32)``,
  ``y[who].astype(float32)`` and each user's largest magnitude (NaN for a user
  with a NaN), from the float64 rows;
- :func:`take_columns` is ``np.take_along_axis(X, keep[:, None, :], axis=2)``;
- :func:`gather_active` is the active-set block: each user's columns
  ``order[u, :width[u]]`` as float64, the other ``K - width[u]`` columns zero;
- :func:`take_block` is ``X[rows[:, None], cols]`` and :func:`take_entries`
  is ``X[rows, cols]`` for a 2-d ``X`` (non-negative indices, checked).
"""

import numpy as np

from libc.math cimport NAN, fabs

from ._typedefs cimport intp_t

ctypedef fused real_t:
    float
    double


cdef inline double _cast_block(const double* src, float* dst, intp_t count,
                               int* nan) noexcept nogil:
    """Copy ``count`` doubles to floats; return the largest magnitude, flag a NaN."""
    cdef intp_t k, end = count - count % 4
    cdef double v0, v1, v2, v3, a
    # four running maxima: one would chain every comparison on the last (its latency)
    cdef double t0 = 0.0, t1 = 0.0, t2 = 0.0, t3 = 0.0
    cdef int bad = 0
    for k in range(0, end, 4):
        v0 = src[k]
        v1 = src[k + 1]
        v2 = src[k + 2]
        v3 = src[k + 3]
        dst[k] = <float>v0
        dst[k + 1] = <float>v1
        dst[k + 2] = <float>v2
        dst[k + 3] = <float>v3
        # branch-free: random signs would mispredict a branch half the time
        t0 = fabs(v0) if fabs(v0) > t0 else t0
        t1 = fabs(v1) if fabs(v1) > t1 else t1
        t2 = fabs(v2) if fabs(v2) > t2 else t2
        t3 = fabs(v3) if fabs(v3) > t3 else t3
        bad = bad | (v0 != v0) | (v1 != v1) | (v2 != v2) | (v3 != v3)
    for k in range(end, count):
        v0 = src[k]
        dst[k] = <float>v0
        t0 = fabs(v0) if fabs(v0) > t0 else t0
        bad = bad | (v0 != v0)
    nan[0] = nan[0] | bad
    t0 = t1 if t1 > t0 else t0
    t2 = t3 if t3 > t2 else t2
    return t2 if t2 > t0 else t0


def gather_users_float32(const double[:, :, :] X, const double[:, :] y, const intp_t[::1] who):
    """``(X[who] as float32, y[who] as float32, largest |entry| of each user's X and y)``.

    ``X`` is ``(users, m, d)``, ``y`` is ``(users, m)``, ``who`` the users to
    take (each in ``[0, users)``, checked). A user's largest magnitude is NaN
    when one of its entries is NaN (NumPy's max), +inf when one is infinite.
    """
    cdef intp_t n_all = X.shape[0], m = X.shape[1], d = X.shape[2]
    cdef intp_t c = who.shape[0]
    if y.shape[0] != n_all or y.shape[1] != m:
        raise ValueError(f"y must have shape ({n_all}, {m}), got ({y.shape[0]}, {y.shape[1]})")
    cdef intp_t i, r, u
    for i in range(c):
        if who[i] < 0 or who[i] >= n_all:
            raise IndexError(f"who[{i}] = {who[i]} is outside [0, {n_all})")
    Xc = np.empty((c, m, d), dtype=np.float32)
    yc = np.empty((c, m), dtype=np.float32)
    big = np.empty(c, dtype=np.float64)
    cdef float[:, :, ::1] xo = Xc
    cdef float[:, ::1] yo = yc
    cdef double[::1] bo = big
    cdef double top, t
    cdef int nan
    # a user's rows as one run of m d doubles (the common case: a reshaped C array), else row
    # by row (each row a run of d doubles), else entry by entry
    cdef bint rows_flat = X.strides[2] == sizeof(double)
    cdef bint user_flat = rows_flat and X.strides[1] == d * sizeof(double)
    cdef bint y_flat = y.strides[1] == sizeof(double)
    cdef intp_t j
    if m == 0 or d == 0:
        user_flat = False
    with nogil:
        for i in range(c):
            u = who[i]
            nan = 0
            top = 0.0
            if user_flat:
                top = _cast_block(&X[u, 0, 0], &xo[i, 0, 0], m * d, &nan)
            else:
                for r in range(m):
                    if rows_flat and d > 0:
                        t = _cast_block(&X[u, r, 0], &xo[i, r, 0], d, &nan)
                        top = t if t > top else top
                    else:
                        for j in range(d):
                            t = _cast_block(&X[u, r, j], &xo[i, r, j], 1, &nan)
                            top = t if t > top else top
            if y_flat and m > 0:
                t = _cast_block(&y[u, 0], &yo[i, 0], m, &nan)
                top = t if t > top else top
            else:
                for r in range(m):
                    t = _cast_block(&y[u, r], &yo[i, r], 1, &nan)
                    top = t if t > top else top
            bo[i] = NAN if nan else top
    return Xc, yc, big


def take_columns(const real_t[:, :, :] X, const intp_t[:, ::1] keep):
    """``np.take_along_axis(X, keep[:, None, :], axis=2)``: user ``u``'s columns ``keep[u]``.

    Indices are checked (``[0, d)``; negative ones are not wrapped).
    """
    cdef intp_t n = X.shape[0], m = X.shape[1], d = X.shape[2], p = keep.shape[1]
    if keep.shape[0] != n:
        raise ValueError(f"keep must have {n} rows, got {keep.shape[0]}")
    cdef intp_t u, r, j
    for u in range(n):
        for j in range(p):
            if keep[u, j] < 0 or keep[u, j] >= d:
                raise IndexError(f"keep[{u}, {j}] = {keep[u, j]} is outside [0, {d})")
    out = np.empty((n, m, p), dtype=np.float32 if real_t is float else np.float64)
    cdef real_t[:, :, ::1] o = out
    with nogil:
        for u in range(n):
            for r in range(m):
                for j in range(p):
                    o[u, r, j] = X[u, r, keep[u, j]]
    return out


def gather_active(const real_t[:, :, :] X, const intp_t[::1] rows, const intp_t[:, ::1] order,
                  const intp_t[::1] width):
    """The float64 ``(len(rows), m, K)`` blocks of the users ``rows`` on their columns ``order``.

    Block ``i`` holds user ``rows[i]``'s columns ``order[i, :width[i]]``
    (``0 <= width[i] <= K``) and zeros after them.
    """
    cdef intp_t n_all = X.shape[0], m = X.shape[1], d = X.shape[2]
    cdef intp_t n = rows.shape[0], K = order.shape[1]
    if order.shape[0] != n or width.shape[0] != n:
        raise ValueError(f"order and width must have {n} rows, got {order.shape[0]} and "
                         f"{width.shape[0]}")
    cdef intp_t i, r, j, u, w
    for i in range(n):
        if rows[i] < 0 or rows[i] >= n_all:
            raise IndexError(f"rows[{i}] = {rows[i]} is outside [0, {n_all})")
        if width[i] < 0 or width[i] > K:
            raise ValueError(f"width[{i}] = {width[i]} is outside [0, {K}]")
        for j in range(width[i]):
            if order[i, j] < 0 or order[i, j] >= d:
                raise IndexError(f"order[{i}, {j}] = {order[i, j]} is outside [0, {d})")
    out = np.zeros((n, m, K))
    cdef double[:, :, ::1] o = out
    with nogil:
        for i in range(n):
            u = rows[i]
            w = width[i]
            for r in range(m):
                for j in range(w):
                    o[i, r, j] = X[u, r, order[i, j]]
    return out


def take_block(const double[:, :] X, const intp_t[::1] rows, const intp_t[::1] cols):
    """``X[rows[:, None], cols]``: the ``(len(rows), len(cols))`` block (indices checked)."""
    cdef intp_t N = X.shape[0], d = X.shape[1], n = rows.shape[0], s = cols.shape[0]
    cdef intp_t i, j, r
    for i in range(n):
        if rows[i] < 0 or rows[i] >= N:
            raise IndexError(f"rows[{i}] = {rows[i]} is outside [0, {N})")
    for j in range(s):
        if cols[j] < 0 or cols[j] >= d:
            raise IndexError(f"cols[{j}] = {cols[j]} is outside [0, {d})")
    out = np.empty((n, s))
    cdef double[:, ::1] o = out
    with nogil:
        for i in range(n):
            r = rows[i]
            for j in range(s):
                o[i, j] = X[r, cols[j]]
    return out


def take_entries(const double[:, :] X, const intp_t[::1] rows, const intp_t[::1] cols):
    """``X[rows, cols]``: one entry per pair (indices checked)."""
    cdef intp_t N = X.shape[0], d = X.shape[1], n = rows.shape[0]
    if cols.shape[0] != n:
        raise ValueError(f"rows and cols must have one length, got {n} and {cols.shape[0]}")
    cdef intp_t i
    for i in range(n):
        if rows[i] < 0 or rows[i] >= N:
            raise IndexError(f"rows[{i}] = {rows[i]} is outside [0, {N})")
        if cols[i] < 0 or cols[i] >= d:
            raise IndexError(f"cols[{i}] = {cols[i]} is outside [0, {d})")
    out = np.empty(n)
    cdef double[::1] o = out
    with nogil:
        for i in range(n):
            o[i] = X[rows[i], cols[i]]
    return out
