"""Multi-attribute frequency kernels (SPL, SMP, RSpFD): fused clients and servers.

The clients privatize every attribute of a record in one pass over the
records, checking each value against its domain in the same pass; the
servers check every report and count the hits of every (attribute, value)
in one pass. The algorithms and the order of a record's random draws are
in ``src/multidim.h``: record ``r`` draws from one xoshiro256++ stream seeded
by Philox4x64-10 keyed by a caller-drawn key and ``r``, so the reports do not
depend on the thread count; the counts are integers, so their sums do not
either. Rows are split into contiguous ranges, up to 16 per thread, handed
out to the threads as they come free.

Every function returns, with its result, the first row holding a value out
of range (clients: a record; servers: an illegal report), or -1; when it is
not -1 the result is incomplete and the caller takes its general path.
"""

import numpy as np

from libc.stdint cimport uint8_t
from libc.stdlib cimport malloc, free

from ._typedefs cimport intp_t, uint64_t, int64_t

from cython.parallel cimport prange


cdef extern from "src/multidim.h" nogil:
    int64_t fastldp_md_check_records(const int64_t *x, int64_t A, const int64_t *k,
                                     int64_t r0, int64_t r1)
    int64_t fastldp_md_grr_rows(uint64_t k0, uint64_t k1, int mode, const int64_t *x,
                                int64_t A, const int64_t *k, const double *p,
                                int64_t r0, int64_t r1, int64_t *out)
    int64_t fastldp_md_ue_rows(uint64_t k0, uint64_t k1, int mode, const int64_t *x,
                               int64_t A, const int64_t *k, const double *p,
                               const int64_t *byte0, const uint64_t *valid, int64_t R,
                               uint64_t Q, int64_t r0, int64_t r1, uint8_t *out)
    void fastldp_md_ue_rerandomize_rows(uint64_t k0, uint64_t k1, const uint8_t *perm,
                                        const uint64_t *valid, int64_t R, uint64_t Qkeep,
                                        uint64_t Qraise, int64_t r0, int64_t r1, uint8_t *out)
    int64_t fastldp_md_smp_ue_rows(uint64_t k0, uint64_t k1, const int64_t *x, int64_t A,
                                   const int64_t *k, const double *p, int64_t R, uint64_t Q,
                                   const int64_t *given, int64_t r0, int64_t r1, uint8_t *out)
    int64_t fastldp_md_smp_ue_rerandomize_rows(uint64_t k0, uint64_t k1, const uint8_t *perm,
                                               int64_t R, int64_t A, const int64_t *k,
                                               uint64_t Qkeep, uint64_t Qraise, int64_t r0,
                                               int64_t r1, uint8_t *out)
    int64_t fastldp_md_grr_given_rows(uint64_t k0, uint64_t k1, const int64_t *s,
                                      const int64_t *v, int64_t width, int64_t A,
                                      const int64_t *k, const double *p, int64_t r0,
                                      int64_t r1, int64_t *out)
    int64_t fastldp_md_count_symbols(const int64_t *y, int64_t A, const int64_t *k,
                                     const int64_t *off, int64_t r0, int64_t r1, int64_t *hits)
    int64_t fastldp_md_count_smp_symbols(const int64_t *y, int64_t A, const int64_t *k,
                                         const int64_t *off, int64_t r0, int64_t r1,
                                         int64_t *hits, int64_t *about)
    int64_t fastldp_md_count_smp_bits(const uint8_t *y, int64_t R, int64_t A, const int64_t *k,
                                      const int64_t *off, int64_t r0, int64_t r1,
                                      int64_t *hits, int64_t *about)
    void fastldp_md_stream_words(uint64_t k0, uint64_t k1, uint64_t row, int64_t count,
                                 uint64_t *out)

#: modes of grr_reports
SPL, SMP, RSPFD = 0, 1, 2
#: modes of ue_reports
UE_SPL, UE_ZERO, UE_RANDOM = 0, 1, 2

#: the fewest rows a thread is given (below, fewer threads)
MIN_ROWS_PER_THREAD = 1024


cdef int _threads(intp_t n, int n_threads):
    return max(1, min(n_threads, <int>max(1, n // MIN_ROWS_PER_THREAD)))


cdef int _chunks(intp_t n, int nt):
    # more ranges than threads, handed out as threads come free: a thread the OS holds back
    # (a busy machine) delays its range only, not the others' (with one range per thread the
    # call waits for the slowest); the ranges do not change what a row draws or counts
    if nt == 1:
        return 1
    return <int>max(1, min(n // MIN_ROWS_PER_THREAD, 16 * nt))


cdef tuple _plan(intp_t n, int n_threads):
    """``(threads, ranges, bad)`` of a call over ``n`` rows: ``bad[t]`` receives the first bad
    row of range ``t`` (``-1``: none), ranges ``[(n t) // ranges, (n (t + 1)) // ranges)``."""
    cdef int nt = _threads(n, n_threads)
    cdef int nc = _chunks(n, nt)
    return nt, nc, np.full(nc, -1, dtype=np.int64)


cdef int64_t _first_bad(int64_t[::1] bad):
    cdef int64_t out = -1
    cdef intp_t t
    for t in range(bad.shape[0]):
        if bad[t] >= 0 and (out < 0 or bad[t] < out):
            out = bad[t]
    return out


def _check_domains(intp_t A, const int64_t[::1] k, int64_t low):
    if k.shape[0] != A:
        raise ValueError(f"k must have one domain size per attribute ({A}), got {k.shape[0]}")
    cdef intp_t j
    for j in range(A):
        if k[j] < low:
            raise ValueError(f"k[{j}] must be >= {low}, got {k[j]}")


def check_records(const int64_t[:, ::1] x, const int64_t[::1] k, int n_threads=1):
    """The first row of ``x`` with ``x[r, j]`` outside ``[0, k[j])``, or -1."""
    cdef intp_t n = x.shape[0], A = x.shape[1]
    _check_domains(A, k, 1)
    if n == 0:
        return -1
    cdef int nt, nc
    nt, nc, bad_arr = _plan(n, n_threads)
    cdef int64_t[::1] bad = bad_arr
    cdef int t
    with nogil:
        for t in prange(nc, num_threads=nt, schedule="dynamic"):
            bad[t] = fastldp_md_check_records(&x[0, 0], A, &k[0], (n * t) // nc,
                                              (n * (t + 1)) // nc)
    return _first_bad(bad)


def grr_reports(uint64_t k0, uint64_t k1, int mode, const int64_t[:, ::1] x,
                const int64_t[::1] k, const double[::1] p, int n_threads=1):
    """GRR reports of records ``x`` (``mode``: SPL, SMP or RSPFD) and the first bad row.

    ``p[j]``: the probability that attribute ``j``'s report keeps its value.
    Returns int64 ``(n, A)`` reports (SMP: ``(n, 2)`` rows ``(j, y)``).
    """
    cdef intp_t n = x.shape[0], A = x.shape[1]
    _check_domains(A, k, 2)
    if p.shape[0] != A:
        raise ValueError(f"p must have {A} entries, got {p.shape[0]}")
    if mode not in (SPL, SMP, RSPFD):
        raise ValueError(f"mode must be SPL, SMP or RSPFD, got {mode}")
    out = np.empty((n, 2 if mode == SMP else A), dtype=np.int64)
    if n == 0:
        return out, -1
    cdef int64_t[:, ::1] o = out
    cdef int nt, nc
    nt, nc, bad_arr = _plan(n, n_threads)
    cdef int64_t[::1] bad = bad_arr
    cdef int t
    with nogil:
        for t in prange(nc, num_threads=nt, schedule="dynamic"):
            bad[t] = fastldp_md_grr_rows(k0, k1, mode, &x[0, 0], A, &k[0], &p[0],
                                         (n * t) // nc, (n * (t + 1)) // nc, &o[0, 0])
    return out, _first_bad(bad)


def grr_given(uint64_t k0, uint64_t k1, const int64_t[::1] s, const int64_t[:, ::1] v,
              const int64_t[::1] k, const double[::1] p, int n_threads=1):
    """Rows ``(s[r], GRR of a value over k[s[r]] values, keeping it w.p. p[s[r]])`` and the
    first row with ``s`` or the value out of range (or -1). Returns int64 ``(n, 2)``.

    The value of row ``r`` is ``v[r, 0]`` when ``v`` has one column, else ``v[r, s[r]]``
    (``v`` the records, one column per attribute).
    """
    cdef intp_t n = s.shape[0], A = k.shape[0]
    if v.shape[0] != n or v.shape[1] not in (1, A):
        raise ValueError(f"v must have shape ({n}, 1) or ({n}, {A}), got {tuple(v.shape)[:2]}")
    _check_domains(A, k, 2)
    if p.shape[0] != A:
        raise ValueError(f"p must have {A} entries, got {p.shape[0]}")
    out = np.empty((n, 2), dtype=np.int64)
    if n == 0:
        return out, -1
    cdef int64_t width = v.shape[1]
    cdef int64_t[:, ::1] o = out
    cdef int nt, nc
    nt, nc, bad_arr = _plan(n, n_threads)
    cdef int64_t[::1] bad = bad_arr
    cdef int t
    with nogil:
        for t in prange(nc, num_threads=nt, schedule="dynamic"):
            bad[t] = fastldp_md_grr_given_rows(k0, k1, &s[0], &v[0, 0], width, A, &k[0], &p[0],
                                               (n * t) // nc, (n * (t + 1)) // nc, &o[0, 0])
    return out, _first_bad(bad)


def _valid_words(const int64_t[::1] k, const int64_t[::1] byte0):
    """The words of a row's bits that hold values (parts side by side from byte0)."""
    cdef intp_t A = k.shape[0], j
    cdef int64_t R = 0, v, pos
    for j in range(A):
        if byte0[j] != R:
            raise ValueError(f"byte0[{j}] must be {R}, got {byte0[j]}")
        R += (k[j] + 7) >> 3
    valid_arr = np.zeros((R + 7) >> 3, dtype=np.uint64)
    cdef uint64_t[::1] valid = valid_arr
    for j in range(A):
        for v in range(k[j]):
            pos = 8 * byte0[j] + v
            valid[pos >> 6] |= (<uint64_t>1) << (pos & 63)
    return valid_arr, R


def ue_rerandomize(uint64_t k0, uint64_t k1, const uint8_t[:, ::1] perm, const int64_t[::1] k,
                   const int64_t[::1] byte0, uint64_t Qkeep, uint64_t Qraise, int n_threads=1):
    """The longitudinal unary protocols' instantaneous round of packed permanent rows.

    Each bit of a value that is set stays set with probability ``Qkeep / 2**64``, each that
    is clear is set with probability ``Qraise / 2**64``; padding bits are 0. Returns uint8
    reports of the rows' shape.
    """
    cdef intp_t n = perm.shape[0], A = k.shape[0]
    _check_domains(A, k, 1)
    if byte0.shape[0] != A:
        raise ValueError(f"byte0 must have {A} entries, got {byte0.shape[0]}")
    valid_arr, R = _valid_words(k, byte0)
    if perm.shape[1] != R:
        raise ValueError(f"perm must have {R} columns, got {perm.shape[1]}")
    cdef uint64_t[::1] valid = valid_arr
    cdef int64_t width = R
    out = np.empty((n, R), dtype=np.uint8)
    if n == 0:
        return out
    cdef uint8_t[:, ::1] o = out
    cdef int nt = _threads(n, n_threads)
    cdef int nc = _chunks(n, nt)
    cdef int t
    with nogil:
        for t in prange(nc, num_threads=nt, schedule="dynamic"):
            fastldp_md_ue_rerandomize_rows(k0, k1, &perm[0, 0], &valid[0], width, Qkeep, Qraise,
                                           (n * t) // nc, (n * (t + 1)) // nc, &o[0, 0])
    return out


def ue_reports(uint64_t k0, uint64_t k1, int mode, const int64_t[:, ::1] x,
               const int64_t[::1] k, const double[::1] p, const int64_t[::1] byte0,
               uint64_t Q, int n_threads=1):
    """Packed unary reports of records ``x`` (``mode``: UE_SPL, UE_ZERO, UE_RANDOM).

    Attribute ``j``'s part starts at byte ``byte0[j]`` and holds ``k[j]``
    bits (``ceil(k[j] / 8)`` bytes, parts in attribute order, nothing
    between); a held bit is 1 with probability ``p[j]``, every other with
    probability ``Q / 2**64``. Returns uint8 ``(n, R)`` and the first bad row.
    """
    cdef intp_t n = x.shape[0], A = x.shape[1]
    _check_domains(A, k, 1)
    if p.shape[0] != A or byte0.shape[0] != A:
        raise ValueError(f"p and byte0 must have {A} entries")
    if mode not in (UE_SPL, UE_ZERO, UE_RANDOM):
        raise ValueError(f"mode must be UE_SPL, UE_ZERO or UE_RANDOM, got {mode}")
    valid_arr, R_rows = _valid_words(k, byte0)
    cdef uint64_t[::1] valid = valid_arr
    cdef int64_t R = R_rows
    out = np.empty((n, R), dtype=np.uint8)
    if n == 0:
        return out, -1
    cdef uint8_t[:, ::1] o = out
    cdef int nt, nc
    nt, nc, bad_arr = _plan(n, n_threads)
    cdef int64_t[::1] bad = bad_arr
    cdef int t
    with nogil:
        for t in prange(nc, num_threads=nt, schedule="dynamic"):
            bad[t] = fastldp_md_ue_rows(k0, k1, mode, &x[0, 0], A, &k[0], &p[0], &byte0[0],
                                        &valid[0], R, Q, (n * t) // nc, (n * (t + 1)) // nc,
                                        &o[0, 0])
    return out, _first_bad(bad)


def smp_ue_reports(uint64_t k0, uint64_t k1, const int64_t[:, ::1] x, const int64_t[::1] k,
                   const double[::1] p, uint64_t Q, int n_threads=1, given=None):
    """SMP's packed unary reports: uint8 ``(n, 2 + max ceil(k / 8))`` and the first bad row.

    ``given``: ``None`` (each record's attribute is drawn) or the int64 attribute of each
    record (the longitudinal SMP's memoized one; a row naming no attribute is a bad row).
    """
    cdef intp_t n = x.shape[0], A = x.shape[1]
    _check_domains(A, k, 1)
    if p.shape[0] != A:
        raise ValueError(f"p must have {A} entries, got {p.shape[0]}")
    if A > 65536:
        raise ValueError(f"at most 65536 attributes, got {A}")
    cdef const int64_t[::1] g
    cdef const int64_t *gp = NULL
    if given is not None:
        g = given
        if g.shape[0] != n:
            raise ValueError(f"given must have {n} entries, got {g.shape[0]}")
        if n:
            gp = &g[0]
    cdef int64_t R = 2 + (max(k) + 7) // 8
    out = np.empty((n, R), dtype=np.uint8)
    if n == 0:
        return out, -1
    cdef uint8_t[:, ::1] o = out
    cdef int nt, nc
    nt, nc, bad_arr = _plan(n, n_threads)
    cdef int64_t[::1] bad = bad_arr
    cdef int t
    with nogil:
        for t in prange(nc, num_threads=nt, schedule="dynamic"):
            bad[t] = fastldp_md_smp_ue_rows(k0, k1, &x[0, 0], A, &k[0], &p[0], R, Q, gp,
                                            (n * t) // nc, (n * (t + 1)) // nc, &o[0, 0])
    return out, _first_bad(bad)


def smp_ue_rerandomize(uint64_t k0, uint64_t k1, const uint8_t[:, ::1] perm,
                       const int64_t[::1] k, uint64_t Qkeep, uint64_t Qraise, int n_threads=1):
    """The longitudinal SMP's instantaneous round of its unary rows (index, part, zeros).

    Returns uint8 reports of the rows' shape and the first row naming no attribute (or -1).
    """
    cdef intp_t n = perm.shape[0], A = k.shape[0]
    _check_domains(A, k, 1)
    cdef int64_t R = 2 + (max(k) + 7) // 8
    if perm.shape[1] != R:
        raise ValueError(f"perm must have {R} columns, got {perm.shape[1]}")
    out = np.empty((n, R), dtype=np.uint8)
    if n == 0:
        return out, -1
    cdef uint8_t[:, ::1] o = out
    cdef int nt, nc
    nt, nc, bad_arr = _plan(n, n_threads)
    cdef int64_t[::1] bad = bad_arr
    cdef int t
    with nogil:
        for t in prange(nc, num_threads=nt, schedule="dynamic"):
            bad[t] = fastldp_md_smp_ue_rerandomize_rows(k0, k1, &perm[0, 0], R, A, &k[0], Qkeep,
                                                        Qraise, (n * t) // nc,
                                                        (n * (t + 1)) // nc, &o[0, 0])
    return out, _first_bad(bad)


def count_symbols(const int64_t[:, ::1] y, const int64_t[::1] k, int n_threads=1):
    """Hits of every (attribute, value) in symbol reports side by side, and the first bad row.

    Returns int64 hits of length ``sum(k)`` (attribute 0's values first).
    """
    cdef intp_t n = y.shape[0], A = y.shape[1]
    _check_domains(A, k, 1)
    off_arr = np.concatenate([[0], np.cumsum(k)]).astype(np.int64)
    cdef int64_t[::1] off = off_arr
    cdef int64_t D = off[A]
    if n == 0:
        return np.zeros(D, dtype=np.int64), -1
    cdef int nt, nc
    nt, nc, bad_arr = _plan(n, n_threads)
    cdef int64_t[::1] bad = bad_arr
    partial = np.zeros((nc, D), dtype=np.int64)
    cdef int64_t[:, ::1] part = partial
    cdef int t
    with nogil:
        for t in prange(nc, num_threads=nt, schedule="dynamic"):
            bad[t] = fastldp_md_count_symbols(&y[0, 0], A, &k[0], &off[0], (n * t) // nc,
                                              (n * (t + 1)) // nc, &part[t, 0])
    return partial.sum(axis=0), _first_bad(bad)


def count_smp_symbols(const int64_t[:, ::1] y, const int64_t[::1] k, int n_threads=1):
    """Hits, reports per attribute and the first bad row of SMP's ``(j, y)`` symbol rows."""
    cdef intp_t n = y.shape[0], A = k.shape[0]
    if y.shape[1] != 2:
        raise ValueError(f"y must have 2 columns, got {y.shape[1]}")
    _check_domains(A, k, 1)
    off_arr = np.concatenate([[0], np.cumsum(k)]).astype(np.int64)
    cdef int64_t[::1] off = off_arr
    cdef int64_t D = off[A]
    if n == 0:
        return np.zeros(D, dtype=np.int64), np.zeros(A, dtype=np.int64), -1
    cdef int nt, nc
    nt, nc, bad_arr = _plan(n, n_threads)
    cdef int64_t[::1] bad = bad_arr
    partial = np.zeros((nc, D + A), dtype=np.int64)
    cdef int64_t[:, ::1] part = partial
    cdef int t
    with nogil:
        for t in prange(nc, num_threads=nt, schedule="dynamic"):
            bad[t] = fastldp_md_count_smp_symbols(&y[0, 0], A, &k[0], &off[0], (n * t) // nc,
                                                  (n * (t + 1)) // nc, &part[t, 0],
                                                  &part[t, D])
    total = partial.sum(axis=0)
    return total[:D], total[D:], _first_bad(bad)


def count_smp_bits(const uint8_t[:, ::1] y, const int64_t[::1] k, int n_threads=1):
    """Hits, reports per attribute and the first bad row of SMP's packed unary rows."""
    cdef intp_t n = y.shape[0], A = k.shape[0]
    _check_domains(A, k, 1)
    cdef int64_t R = 2 + (max(k) + 7) // 8
    if y.shape[1] != R:
        raise ValueError(f"y must have {R} columns, got {y.shape[1]}")
    off_arr = np.concatenate([[0], np.cumsum(k)]).astype(np.int64)
    cdef int64_t[::1] off = off_arr
    cdef int64_t D = off[A]
    if n == 0:
        return np.zeros(D, dtype=np.int64), np.zeros(A, dtype=np.int64), -1
    cdef int nt, nc
    nt, nc, bad_arr = _plan(n, n_threads)
    cdef int64_t[::1] bad = bad_arr
    # hits, then 8 spare entries (the bits after the last attribute's values, always 0, are
    # added there), then the reports per attribute
    partial = np.zeros((nc, D + 8 + A), dtype=np.int64)
    cdef int64_t[:, ::1] part = partial
    cdef int t
    with nogil:
        for t in prange(nc, num_threads=nt, schedule="dynamic"):
            bad[t] = fastldp_md_count_smp_bits(&y[0, 0], R, A, &k[0], &off[0], (n * t) // nc,
                                               (n * (t + 1)) // nc, &part[t, 0], &part[t, D + 8])
    total = partial.sum(axis=0)
    return total[:D], total[D + 8:], _first_bad(bad)


def stream_words(uint64_t k0, uint64_t k1, const uint64_t[::1] rows, int64_t count):
    """The first ``count`` words of each record's stream: uint64 ``(len(rows), count)``."""
    if count < 0:
        raise ValueError(f"count must be >= 0, got {count}")
    out = np.empty((rows.shape[0], count), dtype=np.uint64)
    if count == 0 or rows.shape[0] == 0:
        return out
    cdef uint64_t[:, ::1] o = out
    cdef intp_t i
    for i in range(rows.shape[0]):
        fastldp_md_stream_words(k0, k1, rows[i], count, &o[i, 0])
    return out
