"""The counter-based hash: Philox4x64-10 keyed by (codebook seed, identity).

Layout
------
For a codebook seed ``s`` (64 bits) and an identity ``i`` (64 bits), block
``b`` of stream ``t`` is ``Philox4x64-10(counter=(b, t, 0, 0), key=(s, i))``,
four 64-bit words ``w0..w3``. Streams separate independent uses of one key:

==========  =====  ===========================================================
stream      tag    use
==========  =====  ===========================================================
pair sign   0      JPRS sign ``R_i(e)`` of encoded pair ``e = row * d2 + col``
OLH hash    1      bucket of item ``x`` for optimized local hashing
sanitize    2      public fair coin for packets that carry no sign
min-hash    3      public priority of a pair when capping a set at ``k``
==========  =====  ===========================================================

Pair signs: pair ``e`` lives in block ``e >> 8``, word ``(e >> 6) & 3``,
bit ``e & 63`` (least significant bit first); ``R_i(e) = +1`` when that bit is
0 and ``-1`` when it is 1. One block thus carries 256 signs, and the client
evaluates only the blocks that hold its ``<= k`` pairs.

64-bit words (min-hash): item ``x`` uses word ``x & 3`` of block ``x >> 2``.

The block equals what ``numpy.random.Philox(key=s + (i << 64),
counter=c - 1).random_raw(4)`` returns for the 256-bit counter
``c = b + (t << 64)``, because numpy increments the counter before each block.
"""

import numpy as np

from ._typedefs cimport intp_t, uint64_t, int64_t, int8_t
from ._cdefs cimport (
    fastldp_philox_block, fastldp_philox4x64_10, fastldp_hash_block,
    fastldp_block_bit, fastldp_pair_sign,
)

from cython.parallel cimport prange

PAIR_SIGN_STREAM = 0
OLH_HASH_STREAM = 1
SANITIZE_STREAM = 2
MINHASH_STREAM = 3
PAIRS_PER_BLOCK = 256


def philox4x64_10(counter, key):
    """Return the Philox4x64-10 block for a 4-word counter and 2-word key.

    Parameters
    ----------
    counter : sequence of 4 int
        Counter words, least significant first.
    key : sequence of 2 int
        Key words, least significant first.

    Returns
    -------
    numpy.ndarray of uint64, shape (4,)
    """
    cdef uint64_t c[4]
    cdef uint64_t k[2]
    for j in range(4):
        c[j] = <uint64_t>int(counter[j])
    for j in range(2):
        k[j] = <uint64_t>int(key[j])
    cdef fastldp_philox_block blk = fastldp_philox4x64_10(c[0], c[1], c[2], c[3], k[0], k[1])
    return np.array([blk.v[0], blk.v[1], blk.v[2], blk.v[3]], dtype=np.uint64)


def hash_blocks(uint64_t seed, const uint64_t[::1] identities, int64_t n_blocks, uint64_t stream=0):
    """Return blocks ``0 .. n_blocks-1`` of ``stream`` for each identity.

    Returns
    -------
    numpy.ndarray of uint64, shape (len(identities), n_blocks, 4)
    """
    cdef intp_t n = identities.shape[0]
    out = np.empty((n, n_blocks, 4), dtype=np.uint64)
    cdef uint64_t[:, :, ::1] o = out
    cdef intp_t i, b
    cdef fastldp_philox_block blk
    with nogil:
        for i in range(n):
            for b in range(n_blocks):
                blk = fastldp_hash_block(seed, identities[i], <uint64_t>b, stream)
                o[i, b, 0] = blk.v[0]
                o[i, b, 1] = blk.v[1]
                o[i, b, 2] = blk.v[2]
                o[i, b, 3] = blk.v[3]
    return out


def pair_signs(uint64_t seed, const uint64_t[::1] identities, const int64_t[::1] pairs):
    """Return ``R_{identities[j]}(pairs[j])`` in {-1, +1} for each j (int8)."""
    cdef intp_t n = pairs.shape[0]
    if identities.shape[0] != n:
        raise ValueError("identities and pairs must have the same length")
    out = np.empty(n, dtype=np.int8)
    cdef int8_t[::1] o = out
    cdef intp_t j
    with nogil:
        for j in range(n):
            o[j] = <int8_t>fastldp_pair_sign(seed, identities[j], pairs[j])
    return out


def hash_words(uint64_t seed, const uint64_t[::1] identities, const int64_t[::1] items, uint64_t stream):
    """Return the 64-bit word of ``items[j]`` for ``identities[j]`` in ``stream``.

    Item ``x`` uses word ``x & 3`` of block ``x >> 2``.
    """
    cdef intp_t n = items.shape[0]
    if identities.shape[0] != n:
        raise ValueError("identities and items must have the same length")
    out = np.empty(n, dtype=np.uint64)
    cdef uint64_t[::1] o = out
    cdef intp_t j
    cdef fastldp_philox_block blk
    with nogil:
        for j in range(n):
            blk = fastldp_hash_block(seed, identities[j], <uint64_t>(items[j] >> 2), stream)
            o[j] = blk.v[items[j] & 3]
    return out


def set_sign_sums(uint64_t seed, const uint64_t[::1] identities,
                  const int64_t[::1] indptr, const int64_t[::1] pairs, int n_threads=1):
    """Return ``sum_{e in E_i} R_i(e)`` for every identity (CSR sets).

    Pairs of one identity that share a block reuse it, so the cost is at most
    one Philox block per pair.
    """
    cdef intp_t n = identities.shape[0]
    if indptr.shape[0] != n + 1:
        raise ValueError("indptr must have length len(identities) + 1")
    out = np.zeros(n, dtype=np.int64)
    cdef int64_t[::1] o = out
    cdef intp_t i, j
    cdef int64_t e, cur, blkidx, total
    cdef fastldp_philox_block blk
    for i in range(n):
        if indptr[i] > indptr[i + 1] or indptr[i] < 0 or indptr[i + 1] > pairs.shape[0]:
            raise ValueError("indptr must be non-decreasing and within the pairs array")
    for j in range(pairs.shape[0]):
        if pairs[j] < 0:
            raise ValueError("pairs must be non-negative")
    with nogil:
        for i in prange(n, num_threads=n_threads, schedule='static'):
            total = 0
            cur = -1
            for j in range(indptr[i], indptr[i + 1]):
                e = pairs[j]
                blkidx = e >> 8
                if blkidx != cur:
                    blk = fastldp_hash_block(seed, identities[i], <uint64_t>blkidx, 0)
                    cur = blkidx
                total = total + 1 - 2 * fastldp_block_bit(&blk, e & 255)
            o[i] = total
    return out


def philox_floor(uint64_t seed, const uint64_t[::1] identities, int64_t p, int n_threads=1):
    """Generate every pair-sign block an exact decoder needs and fold them.

    This is the floor of any exact JPRS decoder: ``n * ceil(p / 256)``
    Philox4x64-10 blocks. The blocks are XOR-folded into one word per
    identity so the work cannot be optimized away.

    Returns
    -------
    int
        The XOR of all generated words.
    """
    cdef intp_t n = identities.shape[0]
    cdef int64_t nblocks = (p + 255) >> 8
    fold = np.zeros(n, dtype=np.uint64)
    cdef uint64_t[::1] f = fold
    cdef intp_t i
    cdef int64_t b
    cdef uint64_t acc
    cdef fastldp_philox_block blk
    with nogil:
        for i in prange(n, num_threads=n_threads, schedule='static'):
            acc = 0
            for b in range(nblocks):
                blk = fastldp_hash_block(seed, identities[i], <uint64_t>b, 0)
                acc = acc ^ blk.v[0] ^ blk.v[1] ^ blk.v[2] ^ blk.v[3]
            f[i] = acc
    return int(np.bitwise_xor.reduce(fold)) if n else 0
