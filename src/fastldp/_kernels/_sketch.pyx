"""The JPRS global sketch kernel (paper 000, Eq. (8)).

``global_sketch`` computes ``V(e) = sum_i w_i R_i(e)`` for every encoded pair
``e`` in ``[0, p)`` in ``O(n p)`` sign operations and ``O(threads * p)``
memory; the caller supplies ``w_i = sqrt(k) gamma_i Ybar_i / (kappa_k D)``.
Identities are processed in chunks of ``SKETCH_CHUNK`` with one partial per
chunk, reduced in chunk order, so the result is bit-identical for any
thread count.

Two inner loops (both exact functions of the inputs, never of the threads):

* equal magnitudes (every ``|w_i|`` the same, as with homogeneous budgets):
  integer counts in bit-sliced planes (``src/jprs_count.h``), scaled by the
  magnitude once at the end - close to the cost of the Philox blocks;
* general float weights: eight identities at a time through a 256-entry
  table of signed weight sums (``src/jprs_sketch.h``).
"""

import numpy as np

from ._typedefs cimport intp_t, uint64_t, int64_t
from ._cdefs cimport (
    fastldp_sketch_chunk, fastldp_sign_count_chunk, fastldp_ordered_chunk_sum,
)

SKETCH_CHUNK = 1024


cdef struct SketchContext:
    uint64_t seed
    const uint64_t *identities
    const double *weights
    int64_t p


cdef void _sketch_range(const void *ctx, int64_t start, int64_t stop, double *part) noexcept nogil:
    cdef const SketchContext *c = <const SketchContext *>ctx
    fastldp_sketch_chunk(c.seed, c.identities + start, c.weights + start, stop - start, c.p, part)


cdef void _count_range(const void *ctx, int64_t start, int64_t stop, double *part) noexcept nogil:
    cdef const SketchContext *c = <const SketchContext *>ctx
    if fastldp_sign_count_chunk(c.seed, c.identities + start, c.weights + start,
                                stop - start, c.p, part) != 0:
        # out of memory for the bit planes: fall back to the table path,
        # scaled to unit weights so the caller's final scaling still applies
        _unit_table_range(c, start, stop, part)


cdef void _unit_table_range(const SketchContext *c, int64_t start, int64_t stop, double *part) noexcept nogil:
    cdef int64_t i
    cdef int j
    cdef double unit[8]
    for i in range(start, stop, 8):
        for j in range(8):
            unit[j] = (1.0 if c.weights[i + j] > 0 else -1.0) if i + j < stop else 0.0
        fastldp_sketch_chunk(c.seed, c.identities + i, unit, min(8, stop - i), c.p, part)


def global_sketch(uint64_t seed, const uint64_t[::1] identities, const double[::1] weights,
                  int64_t p, int n_threads=1):
    """Return ``V(e) = sum_i weights[i] * R_{identities[i]}(e)`` for e in [0, p).

    Parameters
    ----------
    seed : int
        Codebook seed (64 bits).
    identities : uint64 array, shape (n,)
    weights : float64 array, shape (n,)
    p : int
        Number of encoded pairs, ``p >= 1``.
    n_threads : int
        Threads to use (>= 1).

    Returns
    -------
    numpy.ndarray of float64, shape (p,)
    """
    cdef intp_t n = identities.shape[0]
    if weights.shape[0] != n:
        raise ValueError("identities and weights must have the same length")
    if p < 1:
        raise ValueError("p must be >= 1")
    cdef int nt = max(1, n_threads)
    cdef int64_t chunk = SKETCH_CHUNK
    cdef int64_t nchunks = (n + chunk - 1) // chunk
    if nchunks < nt:
        nt = max(1, <int>nchunks)
    out = np.zeros(p, dtype=np.float64)
    buf = np.empty(nt * p, dtype=np.float64)
    cdef double[::1] o = out
    cdef double[::1] bb = buf
    cdef SketchContext ctx
    ctx.seed = seed
    ctx.p = p
    if n == 0:
        return out
    ctx.identities = &identities[0]
    ctx.weights = &weights[0]
    magnitude = abs(weights[0])
    equal_magnitude = bool(np.all(np.abs(np.asarray(weights)) == magnitude))
    with nogil:
        if equal_magnitude:
            fastldp_ordered_chunk_sum(_count_range, &ctx, n, p, chunk, nt, &bb[0], &o[0])
        else:
            fastldp_ordered_chunk_sum(_sketch_range, &ctx, n, p, chunk, nt, &bb[0], &o[0])
    if equal_magnitude:
        out *= magnitude
    return out
