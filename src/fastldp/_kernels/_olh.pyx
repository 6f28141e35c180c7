"""Optimized-local-hashing kernels on the counter-based hash.

Identity ``i`` hashes item ``x`` into ``g_i`` buckets with
``H_i(x) = (lane * g_i) >> 32``, ``lane`` being 32-bit lane ``x & 7`` of block
``x >> 3`` of the OLH stream of ``(seed, i)`` (see ``src/olh.h``). Each bucket
has probability within ``2**-32`` of ``1 / g_i``.
"""

import numpy as np

from ._typedefs cimport intp_t, uint64_t, int64_t
from ._cdefs cimport (
    fastldp_olh_bucket, fastldp_olh_support_one, fastldp_ordered_chunk_sum,
)

from cython.parallel cimport prange

SUPPORT_CHUNK = 1024


def _check_lengths(n, **arrays):
    for name, arr in arrays.items():
        if arr.shape[0] != n:
            raise ValueError(f"{name} must have length {n}, got {arr.shape[0]}")


#: The largest bucket count: a bucket is ``(lane * g) >> 32`` of a 32-bit hash lane.
MAX_G = 1 << 32


cdef int _check_g(const int64_t[::1] g) except -1:
    cdef intp_t j
    for j in range(g.shape[0]):
        if g[j] < 2 or g[j] > MAX_G:
            raise ValueError(f"g must be in [2, 2**32], got {g[j]} at index {j}")
    return 0


cdef int _check_items(const int64_t[::1] items) except -1:
    cdef intp_t j
    for j in range(items.shape[0]):
        if items[j] < 0:
            raise ValueError(f"items must be >= 0, got {items[j]} at index {j}")
    return 0


def olh_buckets(uint64_t seed, const uint64_t[::1] identities, const int64_t[::1] items,
                const int64_t[::1] g):
    """Return ``H_{identities[j]}(items[j])`` in ``[0, g[j])`` for each j."""
    cdef intp_t n = identities.shape[0]
    _check_lengths(n, items=items, g=g)
    out = np.empty(n, dtype=np.int64)
    cdef int64_t[::1] o = out
    cdef intp_t j
    _check_g(g)
    _check_items(items)
    with nogil:
        for j in range(n):
            o[j] = fastldp_olh_bucket(seed, identities[j], items[j], g[j])
    return out


def olh_hash_all(uint64_t seed, uint64_t identity, int64_t p, int64_t g):
    """Return the buckets of all items ``0 .. p-1`` for one identity."""
    if g < 2 or g > MAX_G or p < 1:
        raise ValueError(f"need g in [2, 2**32] and p >= 1, got g = {g}, p = {p}")
    out = np.empty(p, dtype=np.int64)
    cdef int64_t[::1] o = out
    cdef int64_t x
    with nogil:
        for x in range(p):
            o[x] = fastldp_olh_bucket(seed, identity, x, g)
    return out


cdef struct SupportContext:
    uint64_t seed
    const uint64_t *identities
    const int64_t *reports
    const int64_t *g
    const double *weights
    int64_t p


cdef void _support_range(const void *ctx, int64_t start, int64_t stop, double *part) noexcept nogil:
    cdef const SupportContext *c = <const SupportContext *>ctx
    cdef int64_t i
    for i in range(start, stop):
        fastldp_olh_support_one(c.seed, c.identities[i], c.reports[i], c.g[i], c.weights[i], c.p, part)


def olh_support(uint64_t seed, const uint64_t[::1] identities, const int64_t[::1] reports,
                const int64_t[::1] g, const double[::1] weights, int64_t p, int n_threads=1):
    """Return ``C(x) = sum_i weights[i] * [H_i(x) == reports[i]]`` for x in [0, p).

    Chunks of ``SUPPORT_CHUNK`` identities, reduced in chunk order: the result
    is bit-identical for any thread count.
    """
    cdef intp_t n = identities.shape[0]
    _check_lengths(n, reports=reports, g=g, weights=weights)
    if p < 1:
        raise ValueError("p must be >= 1")
    _check_g(g)
    cdef intp_t r
    for r in range(n):
        if reports[r] < 0 or reports[r] >= g[r]:
            raise ValueError(f"reports must lie in [0, g), got {reports[r]} with g = {g[r]} "
                             f"at index {r}")
    cdef int nt = max(1, n_threads)
    cdef int64_t chunk = SUPPORT_CHUNK
    cdef int64_t nchunks = (n + chunk - 1) // chunk
    if nchunks < nt:
        nt = max(1, <int>nchunks)
    out = np.zeros(p, dtype=np.float64)
    if n == 0:
        return out
    cdef int64_t slots = min(nchunks, 4 * nt)
    buf = np.empty(slots * p, dtype=np.float64)
    cdef double[::1] o = out
    cdef double[::1] bb = buf
    cdef SupportContext ctx
    ctx.seed = seed
    ctx.identities = &identities[0]
    ctx.reports = &reports[0]
    ctx.g = &g[0]
    ctx.weights = &weights[0]
    ctx.p = p
    with nogil:
        fastldp_ordered_chunk_sum(_support_range, &ctx, n, p, chunk, nt, slots, &bb[0], &o[0])
    return out


def olh_bucket_scores(uint64_t seed, uint64_t identity, int64_t g,
                      const int64_t[::1] items, const double[::1] item_weights):
    """Return ``score[b] = sum_{x in items, H(x) = b} item_weights[x]`` for b in [0, g)."""
    if items.shape[0] != item_weights.shape[0]:
        raise ValueError("items and item_weights must have the same length")
    if g < 2 or g > MAX_G:
        raise ValueError(f"g must be in [2, 2**32], got {g}")
    _check_items(items)
    out = np.zeros(g, dtype=np.float64)
    cdef double[::1] o = out
    cdef intp_t j
    with nogil:
        for j in range(items.shape[0]):
            o[fastldp_olh_bucket(seed, identity, items[j], g)] += item_weights[j]
    return out


def olh_bucket_search(uint64_t seed, const uint64_t[::1] identities, const int64_t[::1] g,
                      const int64_t[::1] items, const double[::1] item_weights,
                      int n_threads=1):
    """For each identity, find a legal bucket maximizing the weighted item score.

    The score of bucket ``b`` for identity ``i`` is the sum of
    ``item_weights[j]`` over the items ``j`` with ``H_i(items[j]) = b``; every
    bucket in ``[0, g_i)`` is legal, including empty ones (score 0). Cost per
    identity: ``O(len(items))`` hashes and an ``O(len(items))`` scan, because
    only buckets hit by an item can score other than 0.

    Returns
    -------
    best : int64 array
        The smallest maximizing bucket per identity.
    best_score : float64 array
        Its score.
    n_maximizers : int64 array
        How many buckets attain the maximum (for a fair tie-break by the caller).
    """
    cdef intp_t n = identities.shape[0]
    cdef intp_t m = items.shape[0]
    _check_lengths(n, g=g)
    if item_weights.shape[0] != m:
        raise ValueError("items and item_weights must have the same length")
    cdef intp_t i, j, a
    _check_g(g)
    _check_items(items)
    best = np.zeros(n, dtype=np.int64)
    best_score = np.zeros(n, dtype=np.float64)
    n_max = np.zeros(n, dtype=np.int64)
    cdef int64_t[::1] bo = best
    cdef double[::1] so = best_score
    cdef int64_t[::1] no = n_max
    # Per identity: buckets hit by items, their summed scores (bucket order
    # resolved by sorting the distinct hit buckets).
    buckets_np = np.empty((n, max(m, 1)), dtype=np.int64)
    cdef int64_t[:, ::1] bk = buckets_np
    with nogil:
        for i in prange(n, num_threads=max(1, n_threads), schedule='static'):
            for j in range(m):
                bk[i, j] = fastldp_olh_bucket(seed, identities[i], items[j], g[i])
    for i in range(n):
        _best_bucket(bk[i, :m], item_weights, g[i], &bo[i], &so[i], &no[i])
    return best, best_score, n_max


cdef void _best_bucket(const int64_t[:] hit, const double[::1] w, int64_t g,
                       int64_t *best, double *best_score, int64_t *n_max):
    # Aggregate scores of the distinct hit buckets, then compare with the
    # implicit 0 of every bucket no item hits.
    cdef intp_t m = hit.shape[0]
    order = np.argsort(np.asarray(hit), kind="stable")
    cdef const int64_t[:] od = order
    cdef intp_t j = 0, a
    cdef int64_t b, n_distinct = 0, first_empty = -1, prev = -1, count = 0
    cdef double s, top = 0.0
    cdef int have = 0
    while j < m:
        b = hit[od[j]]
        s = 0.0
        while j < m and hit[od[j]] == b:
            s += w[od[j]]
            j += 1
        # the smallest bucket not hit lies in a gap before b
        if first_empty < 0 and b > prev + 1:
            first_empty = prev + 1
        prev = b
        n_distinct += 1
        if not have or s > top:
            top = s
            best[0] = b
            count = 1
            have = 1
        elif s == top:
            count += 1
    if first_empty < 0 and prev + 1 < g:
        first_empty = prev + 1
    if n_distinct < g:
        if not have or 0.0 > top:
            top = 0.0
            best[0] = first_empty
            count = g - n_distinct
        elif 0.0 == top:
            count += g - n_distinct
            if first_empty < best[0]:
                best[0] = first_empty
    best_score[0] = top
    n_max[0] = count
