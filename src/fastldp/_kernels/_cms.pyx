"""Server kernels of the hash-sketch oracles: CMS, HCMS and FLH counts, RAPPOR's Gram matrix.

Each counting kernel reads the reports once, checks that every report is
legal as sent, and counts it into the server's integer table; it returns
``None`` as soon as one report is not legal (the caller then sanitizes and
counts the reports the general way). Integer counts do not depend on the
order of the additions, so the results are the same for any thread count.

* :func:`pair_counts` (FLH): reports ``(j, y)``, the number of reports per
  cell ``j g + y``.
* :func:`hcms_counts` (HCMS): reports ``(j, l, omega)``, the number per cell
  ``2 (j m + l) + [omega = +1]``, or the signed table
  ``Z[j, l] = sum omega`` (the ``+1`` cell minus the ``-1`` cell).
* :func:`fwht_rows_int64`: the Walsh-Hadamard transform of every row of an
  integer table, in place (Sylvester order), exact in int64.
* :func:`int64_to_float64`: an int64 array turned into float64 in its own
  memory (the servers' tables are a few MB: a second buffer costs its page
  faults).
* :func:`cms_counts` (CMS): reports ``(j, sign words)``, the number of
  reports of sketch row ``j`` that set sign ``l``; a counting sort by row,
  then each row's reports through the carry-save adder of ``src/cms.h``
  (rows are shared among threads; each row is counted by one thread).
* :func:`bloom_design` (RAPPOR): the 0/1 design of every cohort's Bloom
  filters in compressed rows, from the OLH hashes of ``src/olh.h`` (eight
  symbols per Philox block), each row's candidates increasing.
* :func:`cohort_bit_counts` (RAPPOR): the bit counts per cohort
  ``identity mod C`` and the cohort sizes, as :func:`cms_counts` counts.
* :func:`bloom_gram` (RAPPOR): ``G = X^T diag(w) X`` of a 0/1 design in
  compressed rows, a block of ``G``'s rows at a time (every entry a sum over
  the design rows in increasing order, so the result does not depend on the
  threads; with integer weights every entry is an exact integer while it
  stays below ``2**53``).
"""

import numpy as np

from libc.stdlib cimport malloc, free
from libc.string cimport memcpy

from ._typedefs cimport intp_t, uint64_t, int64_t
from ._cdefs cimport (
    fastldp_philox_block, fastldp_hash_block, fastldp_block_lane32, fastldp_bucket_of_lane,
    FASTLDP_STREAM_OLH_HASH,
)

from cython.parallel cimport prange


cdef extern from "src/cms.h" nogil:
    void fastldp_cms_count_rows(const int64_t *words, int64_t stride, const int64_t *idx,
                                int64_t cnt, int64_t W, int64_t *counts, uint64_t *scratch)
    void fastldp_fwht_i64(int64_t *x, int64_t m)
    void fastldp_gram_rows(const int64_t *row_ptr, const int64_t *row_cols, const double *w,
                           int64_t R, int64_t D, int64_t u0, int64_t u1, int64_t B,
                           int64_t *cursor, double *G)


def pair_counts(const int64_t[:, ::1] reports, int64_t h, int64_t g):
    """Counts of the cells ``j g + y`` of reports ``(j, y)``, or None if one is illegal.

    Parameters
    ----------
    reports : int64 array, shape (n, 2)
    h, g : int
        ``j`` must lie in ``[0, h)`` and ``y`` in ``[0, g)``.

    Returns
    -------
    int64 array of shape (h * g,), or None
        None when some ``j`` or ``y`` is out of range.
    """
    cdef intp_t n = reports.shape[0]
    if reports.shape[1] != 2:
        raise ValueError(f"reports must have 2 columns, got {reports.shape[1]}")
    if h < 1 or g < 1:
        raise ValueError(f"need h >= 1 and g >= 1, got h = {h}, g = {g}")
    out = np.zeros(h * g, dtype=np.int64)
    cdef int64_t[::1] o = out
    cdef intp_t i
    cdef int64_t j, y
    cdef bint bad = False
    with nogil:
        for i in range(n):
            j = reports[i, 0]
            y = reports[i, 1]
            # unsigned comparisons: a negative index is a huge one
            if <uint64_t>j >= <uint64_t>h or <uint64_t>y >= <uint64_t>g:
                bad = True
                break
            o[j * g + y] += 1
    return None if bad else out


def hcms_counts(const int64_t[:, ::1] reports, int64_t k, int64_t m, bint signed):
    """HCMS reports ``(j, l, omega)`` counted per cell, or None if one is illegal.

    Parameters
    ----------
    reports : int64 array, shape (n, 3)
    k, m : int
        ``j`` must lie in ``[0, k)``, ``l`` in ``[0, m)`` and ``omega`` be
        ``-1`` or ``+1``.
    signed : bool
        False: the number of reports per cell ``2 (j m + l) + [omega = +1]``
        (shape ``(2 k m,)``). True: ``Z[j, l] = sum omega`` over the
        reports at ``(j, l)`` (shape ``(k, m)``), the ``+1`` count minus the
        ``-1`` count.

    Returns
    -------
    int64 array, or None
        None when some report is out of range.
    """
    cdef intp_t n = reports.shape[0]
    if reports.shape[1] != 3:
        raise ValueError(f"reports must have 3 columns, got {reports.shape[1]}")
    if k < 1 or m < 1:
        raise ValueError(f"need k >= 1 and m >= 1, got k = {k}, m = {m}")
    if signed:
        out = np.zeros((k, m), dtype=np.int64)
    else:
        out = np.zeros(2 * k * m, dtype=np.int64)
    cdef int64_t[::1] o = out.reshape(-1)
    cdef intp_t i
    cdef int64_t j, l, w
    cdef bint bad = False
    with nogil:
        for i in range(n):
            j = reports[i, 0]
            l = reports[i, 1]
            w = reports[i, 2]
            if (<uint64_t>j >= <uint64_t>k or <uint64_t>l >= <uint64_t>m
                    or (w != 1 and w != -1)):
                bad = True
                break
            if signed:
                o[j * m + l] += w
            else:
                o[2 * (j * m + l) + (w > 0)] += 1
    return None if bad else out


def fwht_rows_int64(int64_t[:, ::1] table, int n_threads=1):
    """Replace every row ``z`` of ``table`` by ``z H_m`` (Sylvester order), in place.

    Exact integer butterflies (the caller keeps the sums of absolute values
    below ``2**63``); ``m = table.shape[1]`` must be a power of two.
    """
    cdef int64_t k = table.shape[0]
    cdef int64_t m = table.shape[1]
    if m < 1 or (m & (m - 1)):
        raise ValueError(f"the rows' length must be a power of two, got {m}")
    cdef int nt = max(1, min(n_threads, <int>max(1, (k * m) >> 16)))
    cdef int64_t r
    if k == 0:
        return
    with nogil:
        for r in prange(k, num_threads=nt, schedule="static"):
            fastldp_fwht_i64(&table[r, 0], m)


def int64_to_float64(int64_t[::1] values):
    """Convert ``values`` to float64 in place; return the float64 view of the same memory.

    Each entry is rounded to the nearest double, as ``values.astype(np.float64)``
    rounds it (exact below ``2**53``).
    """
    cdef intp_t n = values.shape[0]
    cdef intp_t i
    cdef double d
    with nogil:
        for i in range(n):
            d = <double>values[i]
            memcpy(&values[i], &d, sizeof(double))
    return np.asarray(values).view(np.float64)


def cms_counts(const int64_t[:, ::1] reports, int64_t k, int64_t m, int n_threads=1):
    """Per sketch row ``j`` and sign ``l``, the number of reports of row ``j`` with sign ``+1``.

    Parameters
    ----------
    reports : int64 array, shape (n, 1 + ceil(m / 64))
        CMS reports: the row index, then the sign words (sign ``l`` is bit
        ``l % 64`` of word ``1 + l // 64``).
    k, m : int
        Rows and columns of the sketch.
    n_threads : int
        Threads; the counts do not depend on it.

    Returns
    -------
    int64 array of shape (k, m), or None
        None when a row index lies outside ``[0, k)`` or a bit beyond sign
        ``m - 1`` is set in the last word.
    """
    cdef intp_t n = reports.shape[0]
    cdef int64_t W = (m + 63) // 64
    if k < 1 or m < 1:
        raise ValueError(f"need k >= 1 and m >= 1, got k = {k}, m = {m}")
    if reports.shape[1] != 1 + W:
        raise ValueError(f"reports must have {1 + W} columns for m = {m}, got {reports.shape[1]}")
    cdef int64_t used = m - 64 * (W - 1)
    cdef uint64_t pad = 0 if used == 64 else ~((<uint64_t>1 << used) - 1)
    starts = np.zeros(k + 1, dtype=np.int64)
    order = np.empty(n, dtype=np.int64)
    cdef int64_t[::1] st = starts
    cdef int64_t[::1] od = order
    cdef intp_t i
    cdef int64_t j
    cdef bint bad = False
    with nogil:
        for i in range(n):
            j = reports[i, 0]
            if <uint64_t>j >= <uint64_t>k or (<uint64_t>reports[i, W] & pad) != 0:
                bad = True
                break
            st[j + 1] += 1
    if bad:
        return None
    out = np.zeros((k, 64 * W), dtype=np.int64)
    if n == 0:
        return out[:, :m].copy()
    fill = np.cumsum(starts)
    starts[:] = fill
    cdef int64_t[::1] pos = fill  # the next free slot of each row (a copy of the starts)
    with nogil:
        for i in range(n):  # a stable counting sort of the reports by row
            j = reports[i, 0]
            od[pos[j]] = i
            pos[j] += 1
    _count_groups(&reports[0, 1], 1 + W, od, st, k, W, n_threads, out)
    return out[:, :m].copy() if m != 64 * W else out


cdef void _count_groups(const int64_t *words, int64_t stride, const int64_t[::1] order,
                        const int64_t[::1] starts, int64_t k, int64_t W, int n_threads,
                        int64_t[:, ::1] out) except *:
    """``out[g, 64 w + b]`` += the reports of group ``g`` (listed in ``order`` from
    ``starts[g]``) whose word ``w`` has bit ``b`` set; groups shared among threads."""
    cdef intp_t n = order.shape[0]
    cdef int nt = max(1, min(n_threads, <int>min(k, max(1, n // 4096))))
    cdef uint64_t *scratch = <uint64_t *>malloc(nt * 12 * W * sizeof(uint64_t))
    if scratch == NULL:
        raise MemoryError()
    cdef int t
    cdef int64_t row
    try:
        with nogil:
            for t in prange(nt, num_threads=nt, schedule="static"):
                row = t
                while row < k:
                    if starts[row + 1] > starts[row]:
                        fastldp_cms_count_rows(words, stride, &order[starts[row]],
                                               starts[row + 1] - starts[row], W, &out[row, 0],
                                               scratch + t * 12 * W)
                    row = row + nt
    finally:
        free(scratch)


def cohort_bit_counts(const int64_t[:, ::1] words, const uint64_t[::1] identities,
                      int64_t n_cohorts, int64_t m, int n_threads=1):
    """Per cohort ``identity mod n_cohorts``, how many rows set each bit, and the cohort sizes.

    Parameters
    ----------
    words : int64 array, shape (n, ceil(m / 64))
        One row of bits per report: bit ``l`` is bit ``l % 64`` of word
        ``l // 64`` (RAPPOR's packed bytes read as little-endian words).
    identities : uint64 array, shape (n,)
    n_cohorts, m : int
    n_threads : int
        Threads; the counts do not depend on it.

    Returns
    -------
    counts : int64 array, shape (n_cohorts, m)
    sizes : int64 array, shape (n_cohorts,)
        The reports per cohort.
    """
    cdef intp_t n = words.shape[0]
    cdef int64_t W = (m + 63) // 64
    if n_cohorts < 1 or m < 1:
        raise ValueError(f"need n_cohorts >= 1 and m >= 1, got {n_cohorts} and {m}")
    if words.shape[1] != W or identities.shape[0] != n:
        raise ValueError(f"words must be ({n}, {W}) and identities ({n},), got "
                         f"({words.shape[0]}, {words.shape[1]}) and ({identities.shape[0]},)")
    starts = np.zeros(n_cohorts + 1, dtype=np.int64)
    order = np.empty(n, dtype=np.int64)
    out = np.zeros((n_cohorts, 64 * W), dtype=np.int64)
    if n == 0:
        return out[:, :m].copy(), starts[1:].copy()
    cdef int64_t[::1] st = starts
    cdef int64_t[::1] od = order
    cdef uint64_t C = <uint64_t>n_cohorts
    cdef intp_t i
    cdef int64_t c
    with nogil:
        for i in range(n):
            st[<int64_t>(identities[i] % C) + 1] += 1
    sizes = starts[1:].copy()
    fill = np.cumsum(starts)
    starts[:] = fill
    cdef int64_t[::1] pos = fill
    with nogil:
        for i in range(n):  # a stable counting sort of the reports by cohort
            c = <int64_t>(identities[i] % C)
            od[pos[c]] = i
            pos[c] += 1
    _count_groups(&words[0, 0], W, od, st, n_cohorts, W, n_threads, out)
    return (out[:, :m].copy() if m != 64 * W else out), sizes


def bloom_gram(const int64_t[::1] row_ptr, const int64_t[::1] row_cols,
               const double[::1] row_weights, int64_t D, int n_threads=1,
               int64_t block_rows=0):
    """``G = X^T diag(w) X`` (dense ``D x D``) of a 0/1 matrix ``X`` in compressed rows.

    Parameters
    ----------
    row_ptr, row_cols : int64 arrays
        ``X`` in compressed rows: the columns of row ``r`` are
        ``row_cols[row_ptr[r]:row_ptr[r + 1]]``, increasing (no repeats).
    row_weights : float64 array
        ``w_r``, one per row of ``X``.
    D : int
        Columns of ``X``.
    n_threads : int
        Threads; the result does not depend on it.
    block_rows : int
        Rows of ``G`` filled per pass over ``X`` (0: ``2**19 / D``, blocks
        of 4 MiB); the result does not depend on it.

    Returns
    -------
    float64 array, shape (D, D)
        ``G[u, v] = sum_r w_r X[r, u] X[r, v]``, summed over ``r`` in
        increasing order.

    Notes
    -----
    ``G`` is filled a block of rows at a time, each block by one pass over
    the rows of ``X`` in order (``src/cms.h``): the design is read in
    order and the block stays in cache. Threads take contiguous ranges of
    ``G``'s rows.
    """
    cdef int64_t R = row_ptr.shape[0] - 1
    if R < 0 or row_weights.shape[0] != R or D < 0:
        raise ValueError("row_ptr and row_weights do not describe one matrix")
    if row_cols.shape[0] != row_ptr[R] or row_ptr[0] != 0:
        raise ValueError("row_cols's length does not match row_ptr")
    cdef intp_t t
    cdef int64_t a
    for t in range(R):
        if row_ptr[t + 1] < row_ptr[t]:
            raise ValueError(f"row_ptr decreases at {t}")
        for a in range(row_ptr[t], row_ptr[t + 1]):
            if not (0 <= row_cols[a] < D):
                raise ValueError(f"row_cols[{a}] = {row_cols[a]} is outside [0, {D})")
            if a > row_ptr[t] and row_cols[a] <= row_cols[a - 1]:
                raise ValueError(f"the columns of row {t} are not increasing")
    out = np.zeros((D, D), dtype=np.float64)
    if D == 0 or R == 0:
        return out
    cdef double[:, ::1] G = out
    cdef int nt = max(1, min(n_threads, <int>max(1, D // 64)))
    cdef int64_t B = block_rows if block_rows > 0 else max(1, (<int64_t>1 << 19) // D)
    cdef int64_t *cursors = <int64_t *>malloc(nt * R * sizeof(int64_t))
    if cursors == NULL:
        raise MemoryError()
    cdef int th
    cdef int64_t u0, u1, r, lo, hi, mid
    cdef int64_t *cur
    try:
        with nogil:
            for th in prange(nt, num_threads=nt, schedule="static"):
                u0 = (D * th) // nt
                u1 = (D * (th + 1)) // nt
                cur = cursors + th * R
                for r in range(R):  # the first column >= u0 of every row
                    lo = row_ptr[r]
                    hi = row_ptr[r + 1]
                    while lo < hi:
                        mid = lo + (hi - lo) // 2
                        if row_cols[mid] < u0:
                            lo = mid + 1
                        else:
                            hi = mid
                    cur[r] = lo
                fastldp_gram_rows(&row_ptr[0], &row_cols[0] if row_cols.shape[0] else NULL,
                                  &row_weights[0], R, D, u0, u1, B, cur, &G[0, 0])
    finally:
        free(cursors)
    return out


def bloom_design(uint64_t seed, int64_t n_cohorts, int64_t n_hashes, int64_t k, int64_t D):
    """RAPPOR's design in compressed rows: row ``c k + j`` holds ``v`` iff ``H_{c h + t}(v) = j``.

    ``H_f`` is the OLH hash of identity ``f`` under ``seed`` onto ``k``
    buckets (``olh_hash(seed, f, v, k)``); a bit two of a symbol's hash
    functions set counts once.

    Parameters
    ----------
    seed : int
    n_cohorts, n_hashes, k, D : int
        ``C``, ``h``, the filter's bits and the candidates ``0 .. D-1``.

    Returns
    -------
    indptr : int64 array, shape (C k + 1,)
    indices : int64 array
        The candidates of each row, increasing.
    """
    if n_cohorts < 1 or n_hashes < 1 or k < 1 or D < 1 or k > (<int64_t>1 << 32):
        raise ValueError(f"need n_cohorts, n_hashes, D >= 1 and 1 <= k <= 2**32, got "
                         f"{n_cohorts}, {n_hashes}, {D}, {k}")
    cdef int64_t C = n_cohorts, h = n_hashes
    pos = np.empty((C, D, h), dtype=np.int64)
    indptr = np.zeros(C * k + 1, dtype=np.int64)
    cdef int64_t[:, :, ::1] P = pos
    cdef int64_t[::1] ptr = indptr
    cdef int64_t c, t, b, v, j, s, lane
    cdef bint seen
    cdef fastldp_philox_block blk
    with nogil:
        for c in range(C):
            for t in range(h):
                for b in range((D + 7) // 8):
                    blk = fastldp_hash_block(seed, <uint64_t>(c * h + t), <uint64_t>b,
                                             FASTLDP_STREAM_OLH_HASH)
                    for lane in range(8):
                        v = 8 * b + lane
                        if v >= D:
                            break
                        P[c, v, t] = fastldp_bucket_of_lane(
                            fastldp_block_lane32(&blk, <int>lane), k)
            for v in range(D):
                for t in range(h):
                    j = P[c, v, t]
                    seen = False
                    for s in range(t):
                        if P[c, v, s] == j:
                            seen = True
                            break
                    if not seen:
                        ptr[c * k + j + 1] += 1
    fill = np.cumsum(indptr)
    indptr[:] = fill
    indices = np.empty(indptr[C * k], dtype=np.int64)
    cdef int64_t[::1] nxt = fill
    cdef int64_t[::1] ind = indices
    with nogil:
        for c in range(C):
            for v in range(D):  # increasing v: every row's candidates come out sorted
                for t in range(h):
                    j = P[c, v, t]
                    seen = False
                    for s in range(t):
                        if P[c, v, s] == j:
                            seen = True
                            break
                    if not seen:
                        ind[nxt[c * k + j]] = v
                        nxt[c * k + j] += 1
    return indptr, indices
