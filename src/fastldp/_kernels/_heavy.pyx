"""Heavy-hitter kernels: OLH hashes of 64-bit codes and support counts of chosen candidates.

The hash is OLH's (``src/olh.h``): identity ``i`` maps code ``x`` to bucket
``(lane * g) >> 32`` of 32-bit lane ``x & 7`` of block ``x >> 3`` of the OLH
stream of ``(seed, i)``, the code read as a signed 64-bit integer (so every
code below ``2**63`` hashes exactly as :func:`fastldp._kernels._olh.olh_buckets`
hashes it, and the codes from ``2**63`` on get blocks no smaller code uses).

:func:`heavy_support` counts, for each candidate ``c``, the reports with
``H_i(c) = y_i``: a prefix-extending server evaluates only its candidates,
``O(n |C| / 8)`` Philox blocks when the candidates come in runs of 8
consecutive codes. Counts are integers: the result does not depend on the
thread count (each candidate run is counted by one thread).
"""

import numpy as np

from ._typedefs cimport intp_t, uint64_t, int64_t
from ._cdefs cimport (
    fastldp_philox_block, fastldp_hash_block, fastldp_block_lane32, fastldp_bucket_of_lane,
    fastldp_olh_bucket, FASTLDP_STREAM_OLH_HASH, FASTLDP_STREAM_SANITIZE,
)

from cython.parallel cimport prange

#: The largest bucket count (a bucket is ``(lane * g) >> 32`` of a 32-bit lane).
MAX_G = 1 << 32


def _check_g(const int64_t[::1] g):
    cdef intp_t j
    for j in range(g.shape[0]):
        if g[j] < 2 or g[j] > MAX_G:
            raise ValueError(f"g must be in [2, 2**32], got {g[j]} at index {j}")


def heavy_buckets(uint64_t seed, const uint64_t[::1] identities, const uint64_t[::1] codes,
                  const int64_t[::1] g):
    """Return ``H_{identities[j]}(codes[j])`` in ``[0, g[j])`` for each ``j`` (int64)."""
    cdef intp_t n = identities.shape[0]
    if codes.shape[0] != n or g.shape[0] != n:
        raise ValueError(f"codes and g must have length {n}")
    _check_g(g)
    out = np.empty(n, dtype=np.int64)
    cdef int64_t[::1] o = out
    cdef intp_t j
    with nogil:
        for j in range(n):
            o[j] = fastldp_olh_bucket(seed, identities[j], <int64_t>codes[j], g[j])
    return out


def heavy_groups(uint64_t seed, const uint64_t[::1] identities, int64_t g):
    """Public group ``(h_i * g) >> 32`` of each identity, int64 in ``[0, g)``.

    ``h_i`` is the high 32-bit half of word 2 of block 0 of the sanitize
    stream of ``(seed, identities[i])`` (word 1 is the sanitization's public
    uniform, so the two are independent). ``g`` in ``[1, 2**32]``.
    """
    if g < 1 or g > MAX_G:
        raise ValueError(f"g must be in [1, 2**32], got {g}")
    cdef intp_t n = identities.shape[0]
    out = np.empty(n, dtype=np.int64)
    cdef int64_t[::1] o = out
    cdef intp_t j
    cdef fastldp_philox_block blk
    with nogil:
        for j in range(n):
            blk = fastldp_hash_block(seed, identities[j], 0, FASTLDP_STREAM_SANITIZE)
            o[j] = <int64_t>(((blk.v[2] >> 32) * <uint64_t>g) >> 32)
    return out


cdef void _count_run(uint64_t seed, const uint64_t *ids, const int64_t *reports,
                     const int64_t *g, intp_t n, const uint64_t *cand, intp_t lo, intp_t hi,
                     int64_t *out) noexcept nogil:
    """Counts of candidates ``cand[lo:hi]`` (one Philox block) over every report."""
    cdef intp_t i, j
    cdef intp_t width = hi - lo
    cdef uint64_t block = <uint64_t>((<int64_t>cand[lo]) >> 3)
    cdef fastldp_philox_block blk
    cdef uint64_t ug
    cdef int64_t y
    cdef int lanes[8]
    cdef int64_t acc[8]
    for j in range(width):
        lanes[j] = <int>(cand[lo + j] & 7)
        acc[j] = 0
    for i in range(n):
        blk = fastldp_hash_block(seed, ids[i], block, FASTLDP_STREAM_OLH_HASH)
        ug = <uint64_t>g[i]
        y = reports[i]
        for j in range(width):
            acc[j] += (<int64_t>((<uint64_t>fastldp_block_lane32(&blk, lanes[j]) * ug) >> 32)
                       == y)
    for j in range(width):
        out[lo + j] += acc[j]


def heavy_support(uint64_t seed, const uint64_t[::1] identities, const int64_t[::1] reports,
                  const int64_t[::1] g, const uint64_t[::1] candidates, int n_threads=1):
    """Return ``C[c] = #{i : H_i(candidates[c]) = reports[i]}`` (int64) for every candidate.

    Consecutive candidates sharing a Philox block (``c >> 3``) are hashed
    once per report, so sorted candidates are fastest; any order is correct. Reports must lie in ``[0, g_i)``. The
    counts are exact integers, so the result is identical for any thread
    count.
    """
    cdef intp_t n = identities.shape[0]
    if reports.shape[0] != n or g.shape[0] != n:
        raise ValueError(f"reports and g must have length {n}")
    _check_g(g)
    cdef intp_t r
    for r in range(n):
        if reports[r] < 0 or reports[r] >= g[r]:
            raise ValueError(f"reports must lie in [0, g), got {reports[r]} with g = {g[r]} "
                             f"at index {r}")
    cdef intp_t m = candidates.shape[0]
    out = np.zeros(m, dtype=np.int64)
    if m == 0 or n == 0:
        return out
    # runs of at most 8 consecutive candidates in one Philox block
    blocks = np.asarray(candidates).view(np.int64) >> 3
    new_block = np.r_[True, blocks[1:] != blocks[:m - 1]]
    index = np.arange(m)
    run_start = np.maximum.accumulate(np.where(new_block, index, 0))
    starts = np.flatnonzero(new_block | ((index - run_start) % 8 == 0)).astype(np.intp)
    bounds = np.r_[starts, m].astype(np.intp)
    cdef intp_t[::1] bd = bounds
    cdef intp_t n_runs = starts.shape[0]
    cdef int64_t[::1] o = out
    cdef int nt = max(1, min(n_threads, <int>n_runs))
    with nogil:
        for r in prange(n_runs, num_threads=nt, schedule="dynamic"):
            _count_run(seed, &identities[0], &reports[0], &g[0], n, &candidates[0],
                       bd[r], bd[r + 1], &o[0])
    return out
