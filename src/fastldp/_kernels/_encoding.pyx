"""SHE kernels: the client's noisy one-hot rows and the server's exact column sums.

The algorithms are described in ``src/encoding.h``. The client's row ``r``
draws its Laplace noise from Philox4x64-10 keyed by a caller-drawn key, at
counter ``(block, r, SHE stream, 0)``, so the reports do not depend on the
thread count. The server's column sums are exact integers in the digit
layout of :mod:`fastldp._kernels._exact` (places ``2**(32 k)`` from
``K_LO``), so they do not depend on it either: a thread's rows are summed
into its own digits and the digits are added.
"""

import numpy as np

from libc.stdint cimport uint8_t
from libc.stdlib cimport malloc, free

from ._typedefs cimport intp_t, uint64_t, int64_t

from cython.parallel cimport prange


cdef extern from "src/encoding.h" nogil:
    int FASTLDP_SHE_LEVELS
    int FASTLDP_SHE_BLOCK_ROWS
    int FASTLDP_SHE_BLOCK_LOG2
    int FASTLDP_SHE_GROUP_ROWS
    int FASTLDP_SHE_LEVEL_BITS
    int FASTLDP_SHE_K_LO
    int FASTLDP_SHE_ROWS
    uint64_t FASTLDP_SHE_STREAM
    ctypedef struct fastldp_she_sum_source:
        const double *x
        int64_t D
        const double *lo
        const double *hi
        const double *weights
        const uint8_t *group
        int n_groups
        double sigma[2]
        double inv_unit[2]
        int64_t unit_exp[2]
    double fastldp_she_laplace(uint64_t w)
    void fastldp_she_perturb_row(uint64_t k0, uint64_t k1, uint64_t row, int64_t D, int64_t v,
                                 double scale, double *out)
    double fastldp_she_floor_row(uint64_t k0, uint64_t k1, uint64_t row, int64_t D,
                                 double *scratch)
    void fastldp_she_sum_range(const fastldp_she_sum_source *src, int64_t r0, int64_t r1,
                               uint8_t *legal, int64_t *digits, double *scratch)
    void fastldp_she_normalize(int64_t *digits, int64_t D)
    void fastldp_she_legal_range(const double *x, int64_t D, const double *lo, const double *hi,
                                 int64_t r0, int64_t r1, uint8_t *legal)


LEVELS = FASTLDP_SHE_LEVELS
BLOCK_ROWS = FASTLDP_SHE_BLOCK_ROWS
LEVEL_BITS = FASTLDP_SHE_LEVEL_BITS
K_LO = FASTLDP_SHE_K_LO
ROWS = FASTLDP_SHE_ROWS
SHE_STREAM = FASTLDP_SHE_STREAM
#: the ``beta`` that :func:`she_column_sums` accepts: its grids stay normal doubles
BETA_RANGE = (-850, 850)
#: rows per thread below which a call uses fewer threads
MIN_ROWS_PER_THREAD = 256
cdef intp_t _MIN_ROWS_PER_THREAD = 256


def laplace_from_words(const uint64_t[::1] words):
    """Standard Laplace variates of 64-bit words, by the client's inverse CDF (``encoding.h``)."""
    cdef intp_t n = words.shape[0]
    out = np.empty(n, dtype=np.float64)
    cdef double[::1] o = out
    cdef intp_t i
    with nogil:
        for i in range(n):
            o[i] = fastldp_she_laplace(words[i])
    return out


def she_perturb(uint64_t k0, uint64_t k1, const int64_t[::1] values, const double[::1] scales,
                int64_t D, int n_threads=1):
    """Return the ``(n, D)`` float64 reports: ``scales[i] * Lap(1)``, plus one at ``values[i]``.

    ``scales`` has length ``n`` or 1 (one scale for every row);
    ``values[i] = -1`` adds no one.
    """
    cdef intp_t n = values.shape[0]
    cdef intp_t ns = scales.shape[0]
    if ns != n and ns != 1:
        raise ValueError(f"scales must have length {n} or 1, got {ns}")
    if D < 1:
        raise ValueError("D must be >= 1")
    cdef intp_t i
    for i in range(n):
        if values[i] < -1 or values[i] >= D:
            raise ValueError(f"values must lie in [-1, {D}), got {values[i]} at index {i}")
    out = np.empty((n, D), dtype=np.float64)
    if n == 0:
        return out
    cdef double[:, ::1] o = out
    cdef bint one = ns == 1
    with nogil:
        for i in prange(n, num_threads=max(1, n_threads), schedule="static"):
            fastldp_she_perturb_row(k0, k1, <uint64_t>i, D, values[i],
                                    scales[0] if one else scales[i], &o[i, 0])
    return out


def she_floor(uint64_t k0, uint64_t k1, int64_t n, int64_t D, int n_threads=1):
    """The client's floor: ``n * D`` Philox words (``ceil(D / 4)`` blocks a row), a log each.

    :func:`she_perturb` without the scaling, the one-hot entry and the
    ``(n, D)`` output (each thread converts rows in a scratch row it
    reuses). Returns the sum of the variates, so that the work cannot be
    optimized away.
    """
    part = np.zeros(max(n, 0), dtype=np.float64)
    if n <= 0 or D <= 0:
        return 0.0
    cdef double[::1] p = part
    cdef int nt = max(1, n_threads)
    cdef int64_t width = ((D + 3) // 4) * 4
    scratch = np.empty(nt * width, dtype=np.float64)
    cdef double[::1] sc = scratch
    cdef intp_t i, chunk = (n + nt - 1) // nt
    cdef int t
    with nogil:
        for t in prange(nt, num_threads=nt, schedule="static"):
            for i in range(t * chunk, min(n, (t + 1) * chunk)):
                p[i] = fastldp_she_floor_row(k0, k1, <uint64_t>i, D, &sc[t * width])
    return float(part.sum())


cdef int _threads_for(intp_t n, int n_threads) noexcept nogil:
    cdef intp_t most = n // _MIN_ROWS_PER_THREAD
    if most < 1:
        most = 1
    if n_threads < 1:
        n_threads = 1
    return <int>(most if most < n_threads else n_threads)


def she_legal_rows(const double[:, ::1] x, const double[::1] lo, const double[::1] hi,
                   int n_threads=1):
    """Return uint8 flags: row ``i`` has every entry in ``[lo[i], hi[i]]`` (NaN never is)."""
    cdef intp_t n = x.shape[0]
    cdef int64_t D = x.shape[1]
    if lo.shape[0] != n or hi.shape[0] != n:
        raise ValueError(f"lo and hi must have length {n}")
    legal = np.zeros(n, dtype=np.uint8)
    if n == 0 or D == 0:
        legal[:] = 1
        return legal
    cdef uint8_t[::1] lg = legal
    cdef int nt = _threads_for(n, n_threads)
    cdef int t
    with nogil:
        for t in prange(nt, num_threads=nt, schedule="static"):
            fastldp_she_legal_range(&x[0, 0], D, &lo[0], &hi[0], (n * t) // nt,
                                    (n * (t + 1)) // nt, &lg[0])
    return legal


def she_column_sums(const double[:, ::1] x, const double[::1] lo, const double[::1] hi,
                    weights, group, int n_groups, int beta, int n_threads=1):
    """Exact column sums of the legal rows, per group, and the legality of every row.

    Parameters
    ----------
    x : (n, D) float64, C-contiguous
    lo, hi : (n,) float64
        Row ``i`` is legal when every entry is in ``[lo[i], hi[i]]``.
    weights : (n,) float64 or None
        Sum ``x[i, j] * weights[i]`` (each product rounded once); None: ``x``.
    group : (n,) uint8 or None
        The group of each row, in ``[0, n_groups)``; None: all in group 0.
    beta : int
        Every summed entry (after its weight) is below ``2**beta`` in
        magnitude; in :data:`BETA_RANGE`. The caller derives it from the
        bounds and weights; the sums are exact only under it.

    Returns
    -------
    legal : (n,) uint8
    digits : (n_groups, ROWS, D) int64
        Normalized digits at the places ``2**(32 k)``, ``k = K_LO + row``
        (every row but the top in ``[0, 2**32)``).
    """
    cdef intp_t n = x.shape[0]
    cdef int64_t D = x.shape[1]
    if lo.shape[0] != n or hi.shape[0] != n:
        raise ValueError(f"lo and hi must have length {n}")
    if not (1 <= n_groups <= 255):
        raise ValueError("n_groups must be in [1, 255]")
    if not (BETA_RANGE[0] <= beta <= BETA_RANGE[1]):
        raise ValueError(f"beta must be in {BETA_RANGE}, got {beta}")
    cdef const double[::1] w
    cdef const uint8_t[::1] grp
    cdef fastldp_she_sum_source src
    src.weights = NULL
    src.group = NULL
    if weights is not None:
        w = weights
        if w.shape[0] != n:
            raise ValueError(f"weights must have length {n}")
        if n:
            src.weights = &w[0]
    if group is not None:
        grp = group
        if grp.shape[0] != n:
            raise ValueError(f"group must have length {n}")
        if n and int(np.max(group)) >= n_groups:
            raise ValueError(f"group must lie in [0, {n_groups})")
        if n:
            src.group = &grp[0]
    legal = np.zeros(n, dtype=np.uint8)
    digits = np.zeros((n_groups, ROWS, D), dtype=np.int64)
    if n == 0 or D == 0:
        legal[:] = 1
        return legal, digits
    cdef int k
    cdef int p = beta + FASTLDP_SHE_BLOCK_LOG2 + 1  # p_1: see encoding.h
    for k in range(FASTLDP_SHE_LEVELS):
        src.sigma[k] = np.ldexp(1.5, p)
        src.unit_exp[k] = p - 52
        src.inv_unit[k] = np.ldexp(1.0, 52 - p)
        p -= FASTLDP_SHE_LEVEL_BITS
    src.x = &x[0, 0]
    src.D = D
    src.lo = &lo[0]
    src.hi = &hi[0]
    src.n_groups = n_groups
    cdef int nt = _threads_for(n, n_threads)
    per_thread = np.zeros((nt, n_groups, ROWS, D), dtype=np.int64)
    cdef int64_t[:, :, :, ::1] part = per_thread
    cdef uint8_t[::1] lg = legal
    cdef int64_t width = (<int64_t>n_groups * FASTLDP_SHE_LEVELS
                          + FASTLDP_SHE_GROUP_ROWS + 1) * D
    cdef double *scratch = <double *>malloc(nt * width * sizeof(double))
    if scratch == NULL:
        raise MemoryError()
    cdef int t
    try:
        with nogil:
            for t in prange(nt, num_threads=nt, schedule="static"):
                fastldp_she_sum_range(&src, (n * t) // nt, (n * (t + 1)) // nt, &lg[0],
                                      &part[t, 0, 0, 0], scratch + t * width)
    finally:
        free(scratch)
    if nt == 1:
        return legal, per_thread[0]
    digits = np.ascontiguousarray(per_thread.sum(axis=0))
    cdef int64_t[:, :, ::1] dg = digits
    cdef int g
    for g in range(n_groups):
        fastldp_she_normalize(&dg[g, 0, 0], D)
    return legal, digits
