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

/* Public sign of encoded pair e for (seed, identity): +1 for bit 0, -1 for bit 1. */
static inline int fastldp_pair_sign(uint64_t seed, uint64_t identity, int64_t e)
{
    fastldp_philox_block blk =
        fastldp_hash_block(seed, identity, (uint64_t)(e >> 8), FASTLDP_STREAM_PAIR_SIGN);
    return 1 - 2 * fastldp_block_bit(&blk, e & 255);
}

#endif
