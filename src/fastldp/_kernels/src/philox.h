/*
 * Philox4x64-10 counter-based generator (Salmon, Moraes, Dror, Shaw,
 * "Parallel random numbers: as easy as 1, 2, 3", SC 2011), written from the
 * published round function. The output for a (counter, key) pair is
 * bit-exact with Random123's philox4x64_R(10, ctr, key) and therefore with
 * numpy.random.Philox, which returns philox(counter + 1, key) as its next
 * four 64-bit words (numpy increments the counter before each block).
 *
 * fastldp's keying (documented in fastldp._kernels._hash):
 *   key     = (codebook seed, identity)
 *   counter = (block index, stream tag, 0, 0)
 */
#ifndef FASTLDP_PHILOX_H
#define FASTLDP_PHILOX_H

#include <stdint.h>
#include "portable.h"

#define FASTLDP_PHILOX_M0 0xD2E7470EE14C6C93ULL
#define FASTLDP_PHILOX_M1 0xCA5A826395121157ULL
#define FASTLDP_PHILOX_W0 0x9E3779B97F4A7C15ULL
#define FASTLDP_PHILOX_W1 0xBB67AE8584CAA73BULL

/* Stream tags: independent sub-streams of one (seed, identity) key. */
#define FASTLDP_STREAM_PAIR_SIGN 0ULL
#define FASTLDP_STREAM_OLH_HASH 1ULL
#define FASTLDP_STREAM_SANITIZE 2ULL
#define FASTLDP_STREAM_MINHASH 3ULL

typedef struct {
    uint64_t v[4];
} fastldp_philox_block;

static inline uint64_t fastldp_mulhilo64(uint64_t a, uint64_t b, uint64_t *hi)
{
    return fastldp_mul64x64_128(a, b, hi);
}

static inline void fastldp_philox_round(uint64_t c[4], uint64_t k0, uint64_t k1)
{
    uint64_t hi0, hi1;
    uint64_t lo0 = fastldp_mulhilo64(FASTLDP_PHILOX_M0, c[0], &hi0);
    uint64_t lo1 = fastldp_mulhilo64(FASTLDP_PHILOX_M1, c[2], &hi1);
    uint64_t n0 = hi1 ^ c[1] ^ k0;
    uint64_t n2 = hi0 ^ c[3] ^ k1;
    c[0] = n0;
    c[1] = lo1;
    c[2] = n2;
    c[3] = lo0;
}

/* One Philox4x64-10 block for a full 256-bit counter and 128-bit key. */
static inline fastldp_philox_block fastldp_philox4x64_10(
    uint64_t c0, uint64_t c1, uint64_t c2, uint64_t c3, uint64_t k0, uint64_t k1)
{
    fastldp_philox_block out;
    uint64_t c[4] = {c0, c1, c2, c3};
    int r;
    fastldp_philox_round(c, k0, k1);
    for (r = 1; r < 10; ++r) {
        k0 += FASTLDP_PHILOX_W0;
        k1 += FASTLDP_PHILOX_W1;
        fastldp_philox_round(c, k0, k1);
    }
    out.v[0] = c[0];
    out.v[1] = c[1];
    out.v[2] = c[2];
    out.v[3] = c[3];
    return out;
}

/* The block of (seed, identity) at (block index, stream). */
static inline fastldp_philox_block fastldp_hash_block(
    uint64_t seed, uint64_t identity, uint64_t block, uint64_t stream)
{
    return fastldp_philox4x64_10(block, stream, 0, 0, seed, identity);
}

/* Bit b (0..255) of a block: word b >> 6, bit b & 63 (LSB first). */
static inline int fastldp_block_bit(const fastldp_philox_block *blk, int64_t b)
{
    return (int)((blk->v[(b >> 6) & 3] >> (b & 63)) & 1ULL);
}

/* ------------------------------------------------------------------------
 * Philox4x32-10 (the same paper; Random123's philox4x32_R(10, ctr, key)),
 * in ISO C: the 32 x 32 -> 64-bit products need no builtins, so this one
 * function is the portable reference that the vector path
 * (pair_blocks.h) must match word for word.
 */
#define FASTLDP_PHILOX32_M0 0xD2511F53u
#define FASTLDP_PHILOX32_M1 0xCD9E8D57u
#define FASTLDP_PHILOX32_W0 0x9E3779B9u
#define FASTLDP_PHILOX32_W1 0xBB67AE85u

typedef struct {
    uint32_t v[4];
} fastldp_philox32_block;

static inline fastldp_philox32_block fastldp_philox4x32_10(
    uint32_t c0, uint32_t c1, uint32_t c2, uint32_t c3, uint32_t k0, uint32_t k1)
{
    fastldp_philox32_block out;
    int r;
    for (r = 0; r < 10; ++r) {
        uint64_t p0 = (uint64_t)FASTLDP_PHILOX32_M0 * c0;
        uint64_t p1 = (uint64_t)FASTLDP_PHILOX32_M1 * c2;
        uint32_t n0, n2;
        if (r > 0) {
            k0 += FASTLDP_PHILOX32_W0;
            k1 += FASTLDP_PHILOX32_W1;
        }
        n0 = (uint32_t)(p1 >> 32) ^ c1 ^ k0;
        n2 = (uint32_t)(p0 >> 32) ^ c3 ^ k1;
        c0 = n0;
        c1 = (uint32_t)p1;
        c2 = n2;
        c3 = (uint32_t)p0;
    }
    out.v[0] = c0;
    out.v[1] = c1;
    out.v[2] = c2;
    out.v[3] = c3;
    return out;
}

/* Pair-sign codebooks (the public `codebook` parameter of JPRS):
 *
 *   FASTLDP_CODEBOOK_PHILOX4X64 (0, "philox4x64-10", the default): block b
 *     of (seed, identity) is fastldp_hash_block(seed, identity, b, 0).
 *   FASTLDP_CODEBOOK_PHILOX4X32 (1, "philox4x32-10", version 1 of its
 *     layout): block b is two Philox4x32-10 blocks h = 0, 1 with
 *     counter = (lo32(2b + h), hi32(2b + h), lo32(identity), hi32(identity))
 *     and key = (lo32(seed), hi32(seed)); their words u0..u3 give the 64-bit
 *     words 2h + r = u_{2r} | u_{2r+1} << 32. Pair e is then bit e & 31 of
 *     32-bit word (e >> 5) & 3 of sub-block (e >> 7) & 1 of block e >> 8,
 *     the same bit as fastldp_block_bit reads.
 *
 * Both are pseudorandom functions of the public (seed, identity, pair); the
 * second trades NumPy compatibility for 32-bit products that SIMD lanes
 * compute (pair_blocks.h). Only the pair-sign stream depends on the
 * codebook; the other streams stay Philox4x64-10. */
#define FASTLDP_CODEBOOK_PHILOX4X64 0
#define FASTLDP_CODEBOOK_PHILOX4X32 1

/* Pair-sign block b of (seed, identity) in the given codebook (scalar). */
static inline fastldp_philox_block fastldp_pair_block(
    int codebook, uint64_t seed, uint64_t identity, uint64_t b)
{
    if (codebook == FASTLDP_CODEBOOK_PHILOX4X32) {
        fastldp_philox_block out;
        int h;
        for (h = 0; h < 2; ++h) {
            uint64_t sub = 2 * b + (uint64_t)h;
            fastldp_philox32_block u = fastldp_philox4x32_10(
                (uint32_t)sub, (uint32_t)(sub >> 32), (uint32_t)identity,
                (uint32_t)(identity >> 32), (uint32_t)seed, (uint32_t)(seed >> 32));
            out.v[2 * h] = (uint64_t)u.v[0] | ((uint64_t)u.v[1] << 32);
            out.v[2 * h + 1] = (uint64_t)u.v[2] | ((uint64_t)u.v[3] << 32);
        }
        return out;
    }
    return fastldp_hash_block(seed, identity, b, FASTLDP_STREAM_PAIR_SIGN);
}

/* Sign of encoded pair e for (seed, identity) in the given codebook. */
static inline int fastldp_pair_sign_cb(int codebook, uint64_t seed, uint64_t identity, int64_t e)
{
    fastldp_philox_block blk = fastldp_pair_block(codebook, seed, identity, (uint64_t)(e >> 8));
    return 1 - 2 * fastldp_block_bit(&blk, e & 255);
}

/* Public sign of encoded pair e for (seed, identity): +1 for bit 0, -1 for bit 1. */
static inline int fastldp_pair_sign(uint64_t seed, uint64_t identity, int64_t e)
{
    fastldp_philox_block blk =
        fastldp_hash_block(seed, identity, (uint64_t)(e >> 8), FASTLDP_STREAM_PAIR_SIGN);
    return 1 - 2 * fastldp_block_bit(&blk, e & 255);
}

#endif
