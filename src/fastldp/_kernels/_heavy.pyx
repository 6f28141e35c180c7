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

:func:`heavy_prefix_keys` maps a prefix wider than 64 bits (several words)
to the one ``uint64`` key those hashes see (:func:`fastldp.heavyhitters.items.prefix_keys`).
"""

import numpy as np

from ._typedefs cimport intp_t, uint64_t, int64_t
from ._cdefs cimport (
    fastldp_philox_block, fastldp_hash_block, fastldp_block_lane32, fastldp_bucket_of_lane,
    fastldp_olh_bucket, fastldp_philox4x64_10, FASTLDP_STREAM_OLH_HASH, FASTLDP_STREAM_SANITIZE,
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


#: Counter word 2 of the prefix-key chain (ASCII "prefixke"): no other stream of the
#: package uses it, so the chain's blocks are apart from every identity's blocks.
PREFIX_KEY_TAG = 0x7072656669786B65
cdef uint64_t _PREFIX_KEY_TAG = 0x7072656669786B65ULL


cdef inline uint64_t _prefix_key(const uint64_t *words, intp_t W, uint64_t bits) noexcept nogil:
    """``2^63 | (h << 3) | (prefix & 7)`` of one prefix (``W`` words, most significant first)."""
    cdef uint64_t k0 = bits
    cdef uint64_t k1 = <uint64_t>W
    cdef uint64_t q
    cdef intp_t t
    cdef fastldp_philox_block blk
    blk.v[2] = 0
    for t in range(W):
        # word t of prefix >> 3 (most significant first)
        q = words[t] >> 3
        if t > 0:
            q |= words[t - 1] << 61
        blk = fastldp_philox4x64_10(q, <uint64_t>t, _PREFIX_KEY_TAG, 0, k0, k1)
        k0 = blk.v[0]
        k1 = blk.v[1]
    return (<uint64_t>1 << 63) | ((blk.v[2] >> 4) << 3) | (words[W - 1] & 7)


def heavy_prefix_keys(const uint64_t[:, ::1] prefixes, int64_t bits):
    """The 64-bit key of each prefix of ``bits > 64`` bits (rows: words, most significant first).

    ``key = 2^63 | (h << 3) | (prefix & 7)`` with ``h`` the top 60 bits of
    word 2 of the last block of a Philox chain over the words of
    ``q = prefix >> 3`` (``W = ceil(bits / 64)`` words, most significant
    first): ``(k0, k1) = (bits, W)``, then for ``t = 0 .. W-1`` the block
    ``Philox4x64-10(counter = (q_t, t, PREFIX_KEY_TAG, 0), key = (k0, k1))``,
    whose words 0 and 1 key the next step. Public (no seed); the 8
    prefixes that differ only in their low 3 bits share ``h``.
    """
    if bits <= 64 or bits > 64 * 64:
        raise ValueError(f"bits must be in [65, 4096], got {bits}")
    cdef intp_t W = (bits + 63) // 64
    if prefixes.shape[1] != W:
        raise ValueError(f"prefixes of {bits} bits take {W} words; got {prefixes.shape[1]}")
    cdef intp_t n = prefixes.shape[0]
    out = np.empty(n, dtype=np.uint64)
    if n == 0:
        return out
    cdef uint64_t[::1] o = out
    cdef intp_t i
    cdef uint64_t ub = <uint64_t>bits
    with nogil:
        for i in range(n):
            o[i] = _prefix_key(&prefixes[i, 0], W, ub)
    return out
