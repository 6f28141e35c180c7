"""Gathers over users' rows for the per-user (local) solvers.

The local Lasso of the regression family runs on chunks of users, each a
``(users, m, d)`` block of their rows. NumPy builds those blocks with fancy
indexing, a cast and a scan, each a full pass over the block; these kernels
make each block in one pass. They only copy and cast (no arithmetic), so
their results are the NumPy expressions' bit for bit:

- :func:`gather_users_float32` is ``X[who].astype(float32)``,
  ``y[who].astype(float32)`` and each user's largest magnitude (NaN for a user
  with a NaN), from the float64 rows;
- :func:`take_columns` is ``np.take_along_axis(X, keep[:, None, :], axis=2)``;
- :func:`gather_active` is the active-set block: each user's columns
  ``order[u, :width[u]]`` as float64, the other ``K - width[u]`` columns zero.
"""

import numpy as np

from libc.math cimport NAN

from ._typedefs cimport intp_t

ctypedef fused real_t:
    float
    double


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
    cdef intp_t i, r, j, u
    for i in range(c):
        if who[i] < 0 or who[i] >= n_all:
            raise IndexError(f"who[{i}] = {who[i]} is outside [0, {n_all})")
    Xc = np.empty((c, m, d), dtype=np.float32)
    yc = np.empty((c, m), dtype=np.float32)
    big = np.empty(c, dtype=np.float64)
    cdef float[:, :, ::1] xo = Xc
    cdef float[:, ::1] yo = yc
    cdef double[::1] bo = big
    cdef double v, a, top
    cdef bint nan
    with nogil:
        for i in range(c):
            u = who[i]
            top = 0.0
            nan = False
            for r in range(m):
                for j in range(d):
                    v = X[u, r, j]
                    xo[i, r, j] = <float>v
                    a = -v if v < 0 else v
                    if a > top:
                        top = a
                    elif a != a:
                        nan = True
                v = y[u, r]
                yo[i, r] = <float>v
                a = -v if v < 0 else v
                if a > top:
                    top = a
                elif a != a:
                    nan = True
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
