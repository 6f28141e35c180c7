"""Fast-local-hashing server kernel: ``out[x] = sum_j C[j, H_j(x)]`` over a public pool of hashes.

Hash function ``j`` of the pool is the OLH hash of identity ``j`` under the
codebook seed (``src/olh.h``: 32-bit lane ``x & 7`` of block ``x >> 3`` of
the OLH stream, multiply-shift onto ``g`` buckets). The server first counts
reports per ``(j, bucket)`` in ``O(n)``; this kernel then maps all ``D``
items through each of the ``h`` functions, ``O(h D)`` lane evaluations and
``h D / 8`` Philox blocks. Chunks of ``POOL_CHUNK`` hash functions are
reduced in chunk order, so the result is bit-identical for any thread count.
"""

import numpy as np

from ._typedefs cimport intp_t, uint64_t, int64_t
from ._cdefs cimport (
    fastldp_philox_block, fastldp_hash_block, fastldp_block_lane32, fastldp_bucket_of_lane,
    fastldp_ordered_chunk_sum, FASTLDP_STREAM_OLH_HASH,
)

POOL_CHUNK = 128  # h = 1024: 8 chunks, one wave of the ordered sum on <= 2 threads


cdef struct PoolContext:
    uint64_t seed
    const double *counts
    int64_t g
    int64_t p


cdef void _pool_range(const void *ctx, int64_t start, int64_t stop, double *part) noexcept nogil:
    cdef const PoolContext *c = <const PoolContext *>ctx
    cdef int64_t j, b, x, full = c.p >> 3
    cdef int lane, q
    cdef uint64_t word, ug = <uint64_t>c.g
    cdef const double *row
    cdef double *o
    cdef fastldp_philox_block blk
    for j in range(start, stop):
        row = c.counts + j * c.g
        # full blocks: the eight 32-bit lanes of the four words, multiply-shift
        # onto g buckets (fastldp_bucket_of_lane, unrolled)
        for b in range(full):
            blk = fastldp_hash_block(c.seed, <uint64_t>j, <uint64_t>b, FASTLDP_STREAM_OLH_HASH)
            o = part + (b << 3)
            for q in range(4):
                word = blk.v[q]
                o[2 * q] += row[((word & 0xFFFFFFFFULL) * ug) >> 32]
                o[2 * q + 1] += row[((word >> 32) * ug) >> 32]
        if (full << 3) < c.p:
            blk = fastldp_hash_block(c.seed, <uint64_t>j, <uint64_t>full, FASTLDP_STREAM_OLH_HASH)
            for lane in range(8):
                x = (full << 3) + lane
                if x >= c.p:
                    break
                part[x] += row[fastldp_bucket_of_lane(fastldp_block_lane32(&blk, lane), c.g)]


def flh_support(uint64_t seed, const double[:, ::1] counts, int64_t p, int n_threads=1):
    """Return ``out[x] = sum_j counts[j, H_j(x)]`` for ``x in [0, p)``.

    Parameters
    ----------
    seed : int
        Codebook seed of the pool.
    counts : float64 array, shape (h, g)
        Per hash function ``j`` and bucket, the (weighted) number of reports.
    p : int
        Domain size.
    n_threads : int
    """
    cdef int64_t h = counts.shape[0]
    cdef int64_t g = counts.shape[1]
    if g < 2 or p < 1:
        raise ValueError("need g >= 2 buckets and p >= 1")
    if g > (<int64_t>1 << 32):
        raise ValueError(f"g must be <= 2**32, got {g}")
    out = np.zeros(p, dtype=np.float64)
    if h == 0:
        return out
    cdef int nt = max(1, n_threads)
    cdef int64_t chunk = POOL_CHUNK
    cdef int64_t nchunks = (h + chunk - 1) // chunk
    cdef int64_t slots = min(nchunks, 4 * nt)
    buf = np.empty(slots * p, dtype=np.float64)
    cdef double[::1] o = out
    cdef double[::1] bb = buf
    cdef PoolContext ctx
    ctx.seed = seed
    ctx.counts = &counts[0, 0]
    ctx.g = g
    ctx.p = p
    with nogil:
        fastldp_ordered_chunk_sum(_pool_range, &ctx, h, p, chunk, nt, slots, &bb[0], &o[0])
    return out
