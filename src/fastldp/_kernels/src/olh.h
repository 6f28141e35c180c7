/*
 * Optimized local hashing (Wang et al., USENIX Security 2017) on the
 * counter-based hash. Identity i hashes item x into g buckets with
 *
 *   lane = 32-bit lane (x & 7) of block (x >> 3) of stream OLH_HASH,
 *          lane l being the low (l even) or high (l odd) half of word l >> 1,
 *   H_i(x) = (lane * g) >> 32                       (multiply-shift).
 *
 * Multiply-shift maps the 2^32 lane values onto g buckets whose sizes differ
 * by at most one value, so each bucket has probability within 2^-32 of 1/g.
 * Eight items share one Philox block, so hashing all p items costs p / 8
 * blocks.
 */
#ifndef FASTLDP_OLH_H
#define FASTLDP_OLH_H

#include <stdint.h>
#include "philox.h"

static inline uint32_t fastldp_block_lane32(const fastldp_philox_block *blk, int lane)
{
    uint64_t word = blk->v[(lane >> 1) & 3];
    return (uint32_t)((lane & 1) ? (word >> 32) : word);
}

static inline int64_t fastldp_bucket_of_lane(uint32_t lane_value, int64_t g)
{
    return (int64_t)(((uint64_t)lane_value * (uint64_t)g) >> 32);
}

static inline int64_t fastldp_olh_bucket(uint64_t seed, uint64_t identity, int64_t item, int64_t g)
{
    fastldp_philox_block blk =
        fastldp_hash_block(seed, identity, (uint64_t)(item >> 3), FASTLDP_STREAM_OLH_HASH);
    return fastldp_bucket_of_lane(fastldp_block_lane32(&blk, (int)(item & 7)), g);
}

/* out[x] += w * [H(x) == report] for all x in [0, p). */
static inline void fastldp_olh_support_one(
    uint64_t seed, uint64_t identity, int64_t report, int64_t g, double w,
    int64_t p, double *out)
{
    int64_t nblocks = (p + 7) >> 3;
    int64_t b, x;
    int lane;
    for (b = 0; b < nblocks; ++b) {
        fastldp_philox_block blk =
            fastldp_hash_block(seed, identity, (uint64_t)b, FASTLDP_STREAM_OLH_HASH);
        int64_t base = b << 3;
        for (lane = 0; lane < 8; ++lane) {
            x = base + lane;
            if (x >= p) break;
            out[x] += (fastldp_bucket_of_lane(fastldp_block_lane32(&blk, lane), g) == report) ? w : 0.0;
        }
    }
}

#endif
