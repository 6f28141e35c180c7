"""Unary-encoding kernels (OUE, SUE): the client's packed Bernoulli rows and the server's column sums.

A report is a row of ``ceil(D / 8)`` bytes; item ``v`` is bit ``v & 7`` of
byte ``v >> 3`` (``numpy.packbits(..., bitorder="little")``). The algorithms
and the client's randomness are described in ``src/unary.h``: every row is
drawn from xoshiro256++ seeded by Philox4x64-10 keyed by a caller-drawn key
and the row index, so
the result does not depend on the thread count; the column counts are
integers, so their sum does not either; the weighted sums are reduced in
chunk order.
"""

import numpy as np

from libc.stdint cimport uint8_t
from libc.stdlib cimport malloc, free

from ._typedefs cimport intp_t, uint64_t, int64_t
from ._cdefs cimport fastldp_ordered_chunk_sum

from cython.parallel cimport prange

WEIGHTED_CHUNK = 1024


cdef extern from "src/unary.h" nogil:
    void fastldp_ue_perturb_row(
        uint64_t k0, uint64_t k1, uint64_t row_index, int64_t D, int64_t v, uint64_t Q, double p,
        uint8_t *row)
    void fastldp_ue_count_range(
        const uint8_t *rows, int64_t nbytes, int64_t r0, int64_t r1, int64_t *counts,
        uint64_t *scratch)
    void fastldp_ue_weighted_range(
        const uint8_t *rows, int64_t nbytes, const double *weights, int64_t r0, int64_t r1,
        double *out)


def ue_perturb(uint64_t k0, uint64_t k1, const int64_t[::1] values, const uint64_t[::1] q_threshold,
               const double[::1] p, int64_t D, int n_threads=1):
    """Return the packed ``(n, ceil(D / 8))`` uint8 reports.

    Row ``i`` has bit ``values[i]`` set with probability ``p[i]`` and every
    other bit with probability ``q_threshold[i] / 2**64``; ``values[i] = -1``
    holds no item.
    """
    cdef intp_t n = values.shape[0]
    if q_threshold.shape[0] != n or p.shape[0] != n:
        raise ValueError("values, q_threshold and p must have the same length")
    if D < 1:
        raise ValueError("D must be >= 1")
    cdef intp_t i
    for i in range(n):
        if values[i] < -1 or values[i] >= D:
            raise ValueError(f"values must lie in [-1, {D}), got {values[i]} at index {i}")
    cdef int64_t nbytes = (D + 7) >> 3
    out = np.empty((n, nbytes), dtype=np.uint8)
    if n == 0:
        return out
    cdef uint8_t[:, ::1] o = out
    with nogil:
        for i in prange(n, num_threads=max(1, n_threads), schedule="static"):
            fastldp_ue_perturb_row(k0, k1, <uint64_t>i, D, values[i], q_threshold[i], p[i], &o[i, 0])
    return out


def ue_counts(const uint8_t[:, ::1] reports, int64_t D, int n_threads=1):
    """Return the int64 column counts: how many rows have bit ``v`` set, ``v in [0, D)``."""
    cdef intp_t n = reports.shape[0]
    cdef int64_t nbytes = (D + 7) >> 3
    if D < 1 or reports.shape[1] != nbytes:
        raise ValueError(f"reports must have {nbytes} columns for D = {D}, got {reports.shape[1]}")
    cdef int64_t W = (nbytes + 7) >> 3
    cdef int nt = max(1, min(n_threads, <int>max(1, n // 4096)))
    partial = np.zeros((nt, 64 * W), dtype=np.int64)
    if n == 0:
        return partial[0, :D].copy()
    cdef int64_t[:, ::1] part = partial
    cdef uint64_t *scratch = <uint64_t *>malloc(nt * 12 * W * sizeof(uint64_t))
    if scratch == NULL:
        raise MemoryError()
    cdef int t
    cdef int64_t r0, r1
    try:
        with nogil:
            for t in prange(nt, num_threads=nt, schedule="static"):
                r0 = (n * t) // nt
                r1 = (n * (t + 1)) // nt
                fastldp_ue_count_range(&reports[0, 0], nbytes, r0, r1, &part[t, 0],
                                       scratch + t * 12 * W)
    finally:
        free(scratch)
    return partial.sum(axis=0)[:D]


cdef struct WeightedContext:
    const uint8_t *rows
    const double *weights
    int64_t nbytes


cdef void _weighted_range(const void *ctx, int64_t start, int64_t stop, double *part) noexcept nogil:
    cdef const WeightedContext *c = <const WeightedContext *>ctx
    fastldp_ue_weighted_range(c.rows, c.nbytes, c.weights, start, stop, part)


def ue_weighted_counts(const uint8_t[:, ::1] reports, const double[::1] weights, int64_t D,
                       int n_threads=1):
    """Return ``sum_i weights[i] * bit_i(v)`` for ``v in [0, D)`` (float64).

    Chunks of ``WEIGHTED_CHUNK`` rows, reduced in chunk order: bit-identical
    for any thread count.
    """
    cdef intp_t n = reports.shape[0]
    cdef int64_t nbytes = (D + 7) >> 3
    if D < 1 or reports.shape[1] != nbytes:
        raise ValueError(f"reports must have {nbytes} columns for D = {D}, got {reports.shape[1]}")
    if weights.shape[0] != n:
        raise ValueError(f"weights must have length {n}, got {weights.shape[0]}")
    cdef int64_t W = (nbytes + 7) >> 3
    cdef int64_t width = 64 * W
    out = np.zeros(width, dtype=np.float64)
    if n == 0:
        return out[:D]
    cdef int nt = max(1, n_threads)
    cdef int64_t chunk = WEIGHTED_CHUNK
    cdef int64_t nchunks = (n + chunk - 1) // chunk
    cdef int64_t slots = min(nchunks, 4 * nt)
    buf = np.empty(slots * width, dtype=np.float64)
    cdef double[::1] o = out
    cdef double[::1] bb = buf
    cdef WeightedContext ctx
    ctx.rows = &reports[0, 0]
    ctx.weights = &weights[0]
    ctx.nbytes = nbytes
    with nogil:
        fastldp_ordered_chunk_sum(_weighted_range, &ctx, n, width, chunk, nt, slots, &bb[0], &o[0])
    return out[:D]
