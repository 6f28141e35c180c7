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

Codebooks
---------
The pair signs come from one of two versioned codebooks (``codebook=``):

``"philox4x64-10"`` (the default)
    the layout above, bit-compatible with ``numpy.random.Philox``;
``"philox4x32-10"`` (opt-in)
    block ``b`` of the pair-sign stream is two Philox4x32-10 blocks
    ``h = 0, 1`` (Random123's ``philox4x32_R(10, ctr, key)``) with
    ``ctr = (lo32(2b + h), hi32(2b + h), lo32(i), hi32(i))`` and
    ``key = (lo32(s), hi32(s))``; their 32-bit words ``u0..u3`` form the
    64-bit words ``2h + r = u_{2r} | u_{2r+1} << 32``, so pair ``e`` is still
    bit ``e & 63`` of word ``(e >> 6) & 3`` of block ``e >> 8``. Its 32-bit
    products run eight to an AVX2 vector (chosen at run time by a CPU feature
    check; a portable C twin gives the same words).

Both are pseudorandom functions of the public (seed, identity, pair), so
the privacy of JPRS does not depend on the choice; reports made with one
codebook decode only with the same one. The other streams (OLH hash,
sanitize, min-hash) are Philox4x64-10 in either case.
"""

import numpy as np

from ._typedefs cimport intp_t, uint64_t, uint32_t, int64_t, int8_t
from ._cdefs cimport (
    fastldp_philox_block, fastldp_philox4x64_10, fastldp_hash_block,
    fastldp_block_bit, fastldp_pair_sign, fastldp_philox32_block, fastldp_philox4x32_10,
    fastldp_pair_block, fastldp_pair_sign_cb, fastldp_pair_blocks, fastldp_simd_level,
)
cimport fastldp._kernels._cdefs as _cdefs

from cython.parallel cimport prange

PAIR_SIGN_STREAM = 0
OLH_HASH_STREAM = 1
SANITIZE_STREAM = 2
MINHASH_STREAM = 3
PAIRS_PER_BLOCK = 256

#: The pair-sign codebooks by public name (the kernels' codebook numbers).
CODEBOOKS = {"philox4x64-10": 0, "philox4x32-10": 1}
DEFAULT_CODEBOOK = "philox4x64-10"


def codebook_id(codebook):
    """The kernel number of a codebook given by name (or by that number).

    Raises
    ------
    ValueError
        Naming the parameter, the known codebooks and the value given.
    """
    if isinstance(codebook, str) and codebook in CODEBOOKS:
        return CODEBOOKS[codebook]
    if (isinstance(codebook, (int, np.integer)) and not isinstance(codebook, bool)
            and int(codebook) in CODEBOOKS.values()):
        return int(codebook)
    raise ValueError(f"The 'codebook' parameter must be one of {sorted(CODEBOOKS)}; "
                     f"got {codebook!r}")


def simd_level():
    """The SIMD level of this module's kernels on this CPU (see ``_sketch.simd_level``)."""
    return fastldp_simd_level()


def set_simd_cap(int cap):
    """Cap this module's SIMD level at ``cap`` (0 to 3); return the old cap (tests)."""
    if cap not in (0, 1, 2, 3):
        raise ValueError(f"cap must be 0, 1, 2 or 3, got {cap}")
    old = _cdefs.fastldp_simd_cap
    _cdefs.fastldp_simd_cap = cap
    return old


def philox4x32_10(counter, key):
    """Return the Philox4x32-10 block for a 4-word counter and 2-word key.

    The portable C reference (Random123's ``philox4x32_R(10, ctr, key)``).

    Parameters
    ----------
    counter : sequence of 4 int
        32-bit counter words, least significant first.
    key : sequence of 2 int
        32-bit key words.

    Returns
    -------
    numpy.ndarray of uint32, shape (4,)
    """
    cdef uint32_t c[4]
    cdef uint32_t k[2]
    for j in range(4):
        c[j] = <uint32_t>int(counter[j])
    for j in range(2):
        k[j] = <uint32_t>int(key[j])
    cdef fastldp_philox32_block blk = fastldp_philox4x32_10(c[0], c[1], c[2], c[3], k[0], k[1])
    return np.array([blk.v[0], blk.v[1], blk.v[2], blk.v[3]], dtype=np.uint32)


def pair_blocks(uint64_t seed, const uint64_t[::1] identities, int64_t n_blocks,
                codebook=DEFAULT_CODEBOOK, bint batched=True):
    """Return pair-sign blocks ``0 .. n_blocks-1`` of each identity in ``codebook``.

    ``batched`` takes the kernels' batch generator (SIMD where the CPU has
    it); ``batched=False`` the scalar one, block by block. Both must agree.

    Returns
    -------
    numpy.ndarray of uint64, shape (len(identities), n_blocks, 4)
    """
    cdef int cb = codebook_id(codebook)
    cdef intp_t n = identities.shape[0]
    out = np.empty((n, n_blocks, 4), dtype=np.uint64)
    cdef uint64_t[:, :, ::1] o = out
    cdef intp_t i, b, j0, m
    cdef int level = fastldp_simd_level()
    cdef fastldp_philox_block blk[16]
    cdef fastldp_philox_block one
    with nogil:
        for b in range(n_blocks):
            if batched:
                j0 = 0
                while j0 < n:
                    m = min(16, n - j0)
                    fastldp_pair_blocks(cb, seed, &identities[j0], <int>m, <uint64_t>b, blk, level)
                    for i in range(m):
                        o[j0 + i, b, 0] = blk[i].v[0]
                        o[j0 + i, b, 1] = blk[i].v[1]
                        o[j0 + i, b, 2] = blk[i].v[2]
                        o[j0 + i, b, 3] = blk[i].v[3]
                    j0 = j0 + m
            else:
                for i in range(n):
                    one = fastldp_pair_block(cb, seed, identities[i], <uint64_t>b)
                    o[i, b, 0] = one.v[0]
                    o[i, b, 1] = one.v[1]
                    o[i, b, 2] = one.v[2]
                    o[i, b, 3] = one.v[3]
    return out


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


def pair_signs(uint64_t seed, const uint64_t[::1] identities, const int64_t[::1] pairs,
               codebook=DEFAULT_CODEBOOK):
    """Return ``R_{identities[j]}(pairs[j])`` in {-1, +1} for each j (int8)."""
    cdef int cb = codebook_id(codebook)
    cdef intp_t n = pairs.shape[0]
    if identities.shape[0] != n:
        raise ValueError("identities and pairs must have the same length")
    out = np.empty(n, dtype=np.int8)
    cdef int8_t[::1] o = out
    cdef intp_t j
    with nogil:
        for j in range(n):
            o[j] = <int8_t>fastldp_pair_sign_cb(cb, seed, identities[j], pairs[j])
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
                  const int64_t[::1] indptr, const int64_t[::1] pairs, int n_threads=1,
                  codebook=DEFAULT_CODEBOOK):
    """Return ``sum_{e in E_i} R_i(e)`` for every identity (CSR sets).

    Pairs of one identity that share a block reuse it, so the cost is at most
    one Philox block per pair.
    """
    cdef int cb = codebook_id(codebook)
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
                    blk = fastldp_pair_block(cb, seed, identities[i], <uint64_t>blkidx)
                    cur = blkidx
                total = total + 1 - 2 * fastldp_block_bit(&blk, e & 255)
            o[i] = total
    return out


cdef extern from "src/pair_blocks.h" nogil:
    # the XOR of blocks 0 .. nblocks-1 of ids[0 .. m) (pair_blocks.h; its
    # scratch is local to the call, so private to the thread running it)
    uint64_t fastldp_pair_fold(int codebook, uint64_t seed, const uint64_t *ids, int m,
                               int64_t nblocks, int level)


def philox_floor(uint64_t seed, const uint64_t[::1] identities, int64_t p, int n_threads=1,
                 codebook=DEFAULT_CODEBOOK):
    """Generate every pair-sign block an exact decoder needs and fold them.

    This is the floor of any exact JPRS decoder: ``n * ceil(p / 256)``
    pair-sign blocks of ``codebook`` (Philox4x64-10 blocks, or twice as many
    Philox4x32-10 blocks, with SIMD where the CPU has it: with AVX-512
    four identities' runs of four blocks at a time, as the equal-budget
    counting kernel generates them). The blocks are XOR-folded (one word per
    group of sixteen identities, then one in all) so the work cannot be
    optimized away.

    Returns
    -------
    int
        The XOR of all generated words.
    """
    cdef int cb = codebook_id(codebook)
    cdef intp_t n = identities.shape[0]
    cdef int64_t nblocks = (p + 255) >> 8
    cdef intp_t ngroups = (n + 15) // 16
    fold = np.zeros(ngroups, dtype=np.uint64)
    cdef uint64_t[::1] f = fold
    cdef intp_t g
    cdef int level = fastldp_simd_level()
    with nogil:
        for g in prange(ngroups, num_threads=n_threads, schedule='static'):
            f[g] = fastldp_pair_fold(cb, seed, &identities[16 * g], <int>min(16, n - 16 * g),
                                     nblocks, level)
    return int(np.bitwise_xor.reduce(fold)) if n else 0
