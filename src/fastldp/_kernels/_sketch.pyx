"""The JPRS global sketch kernel (paper 000, Eq. (8)).

``global_sketch`` computes ``V(e) = sum_i w_i R_i(e)`` for every encoded pair
``e`` in ``[0, p)`` in ``O(n p)`` sign operations and ``O(threads * p)``
memory; the caller supplies ``w_i = sqrt(k) gamma_i Ybar_i / (kappa_k D)``.
Identities are processed in chunks of ``SKETCH_CHUNK`` with one partial per
chunk, reduced in chunk order, so the result is bit-identical for any
thread count.
"""

import numpy as np

from ._typedefs cimport intp_t, uint64_t, int64_t
from ._cdefs cimport fastldp_sketch_chunk, fastldp_ordered_chunk_sum

SKETCH_CHUNK = 1024


cdef struct SketchContext:
    uint64_t seed
    const uint64_t *identities
    const double *weights
    int64_t p


cdef void _sketch_range(const void *ctx, int64_t start, int64_t stop, double *part) noexcept nogil:
    cdef const SketchContext *c = <const SketchContext *>ctx
    fastldp_sketch_chunk(c.seed, c.identities + start, c.weights + start, stop - start, c.p, part)


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
    with nogil:
        fastldp_ordered_chunk_sum(_sketch_range, &ctx, n, p, chunk, nt, &bb[0], &o[0])
    return out
