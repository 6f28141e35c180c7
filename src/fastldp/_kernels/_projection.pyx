"""Exact Euclidean projection onto M_{s,k} (paper 000, section 6).

``M_{s,k} = {x in [0, 1]^p : ||x||_0 <= s, sum(x) <= k}``. The projection
keeps the ``s`` largest coordinates and projects them exactly onto the capped
simplex ``{x in [0, 1]^s : sum(x) <= k}``.

The capped-simplex step is exact, not a bisection: ``f(tau) = sum_j
clip(y_j - tau, 0, 1)`` is continuous, piecewise linear and non-increasing,
with breakpoints ``y_j - 1`` and ``y_j``. After sorting the ``2s`` breakpoints
a sweep finds the segment where ``f`` crosses ``k``, and ``tau`` solves the
linear equation on it, whose coefficients are recomputed from scratch on that
segment so no rounding accumulates over the sweep.
"""

import numpy as np

from ._typedefs cimport intp_t

from libc.math cimport fmin, fmax, INFINITY


cdef inline int _check_k(double k) except -1:
    # NaN fails every comparison: without this check k = NaN projected to zeros
    if not (k >= 0.0 and k < INFINITY):
        raise ValueError(f"k must be finite and >= 0, got {k!r}")
    return 0


cdef inline int _check_finite(const double[::1] y) except -1:
    cdef intp_t j
    for j in range(y.shape[0]):
        if not (y[j] > -INFINITY and y[j] < INFINITY):
            raise ValueError("v must be finite")
    return 0


cdef inline double _clip01(double x) noexcept nogil:
    return fmin(1.0, fmax(0.0, x))


def capped_simplex_threshold(const double[::1] y, double k):
    """Return ``tau >= 0`` with ``x = clip(y - tau, 0, 1)`` the projection of y.

    ``tau = 0`` when ``sum(clip(y, 0, 1)) <= k``. ``O(s log s)``.
    """
    _check_k(k)
    _check_finite(y)
    cdef intp_t s = y.shape[0]
    cdef intp_t j, t
    cdef double total = 0.0
    for j in range(s):
        total += _clip01(y[j])
    if total <= k:
        return 0.0
    yy = np.asarray(y)
    values = np.concatenate([yy - 1.0, yy])
    order = np.argsort(values, kind="stable")
    cdef const double[::1] bv = values
    cdef const intp_t[::1] bo = order.astype(np.intp)
    cdef double lo = 0.0, hi = 0.0, n_full = 0.0, n_active = 0.0, sum_active = 0.0
    cdef double mid, tau
    cdef intp_t idx
    # State on the segment just above tau = 0: "full" coordinates sit at 1,
    # "active" ones at y_j - tau, the rest at 0.
    for j in range(s):
        if y[j] - 1.0 > 0.0:
            n_full += 1.0
        elif y[j] > 0.0:
            n_active += 1.0
            sum_active += y[j]
    for t in range(2 * s):
        idx = bo[t]
        hi = bv[idx]
        if hi <= 0.0:        # already reflected in the starting state
            continue
        # f is linear on (lo, hi): f(hi) = n_full + sum_active - n_active * hi
        if n_full + sum_active - n_active * hi <= k:
            break
        lo = hi
        if idx < s:          # passes y_j - 1: coordinate j leaves 1
            n_full -= 1.0
            n_active += 1.0
            sum_active += y[idx]
        else:                # passes y_j: coordinate j reaches 0
            n_active -= 1.0
            sum_active -= y[idx - s]
    # Recompute the segment's linear coefficients exactly at its midpoint.
    mid = 0.5 * (lo + hi)
    n_full = 0.0
    n_active = 0.0
    sum_active = 0.0
    for j in range(s):
        if y[j] - mid >= 1.0:
            n_full += 1.0
        elif y[j] - mid > 0.0:
            n_active += 1.0
            sum_active += y[j]
    tau = (n_full + sum_active - k) / n_active
    return fmin(hi, fmax(lo, tau))


def project_capped_simplex(const double[::1] y, double k):
    """Return the exact projection of ``y`` onto ``{x in [0,1]^s : sum x <= k}``."""
    tau = capped_simplex_threshold(y, k)
    return np.clip(np.asarray(y) - tau, 0.0, 1.0)


def top_s_indices(const double[::1] v, intp_t s):
    """Return the indices of the ``s`` largest entries of ``v``, ascending.

    Ties at the threshold are broken toward the smaller index, so the result
    is a deterministic function of ``v``. ``O(p)`` (introselect).
    """
    cdef intp_t p = v.shape[0]
    _check_finite(v)
    arr = np.asarray(v)
    if s >= p:
        return np.arange(p, dtype=np.intp)
    if s <= 0:
        return np.empty(0, dtype=np.intp)
    threshold = np.partition(arr, p - s)[p - s]
    above = np.flatnonzero(arr > threshold)
    ties = np.flatnonzero(arr == threshold)[: s - above.shape[0]]
    return np.sort(np.concatenate([above, ties]))


def project_sparse_capped(const double[::1] v, intp_t s, double k):
    """Return the projection of ``v`` onto ``M_{s,k}`` and its support.

    Returns
    -------
    x : float64 array, shape (p,)
    support : intp array
        The ``s`` retained coordinates (ascending); ``x`` is zero elsewhere.
    """
    arr = np.asarray(v)
    _check_k(k)
    if s < 0:
        raise ValueError(f"s must be >= 0, got {s}")
    support = top_s_indices(v, s)
    x = np.zeros(arr.shape[0], dtype=np.float64)
    x[support] = project_capped_simplex(np.ascontiguousarray(arr[support]), k)
    return x, support
