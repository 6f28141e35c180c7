/*
 * Optimized local hashing (Wang et al., USENIX Security 2017) on the
 * counter-based hash. Identity i hashes item x into g buckets with
 *
 *   lane = 32-bit lane (x & 7) of block (x >> 3) of stream OLH_HASH,
 *          lane l being the low (l even) or high (l odd) half of word l >> 1,
 *   H_i(x) = (lane * g) >> 32                       (multiply-shift).
 *
 * Multiply-shift maps the 2^32 lane values onto g buckets whose sizes differ
 * by at most one value, so each bucket has probability pi_b = 1/g + d_b with
 * |d_b| <= 2^-32 and sum d_b = 0. The estimator needs P(H(v) = y) for an item
 * v the identity does not hold; that is sum_b P(y = b) pi_b = 1/g +
 * (p - (1-p)/(g-1)) sum_b d_b^2, which differs from 1/g by at most about
 * g 2^-64 - below double precision - so using 1/g is exact in floating point.
 * Eight items share one Philox block, so hashing all p items costs p / 8
 * blocks.
 */
#ifndef FASTLDP_OLH_H
#define FASTLDP_OLH_H

#include <stdint.h>
#include <string.h>
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

/* w if keep == 1, +0.0 if keep == 0, by masking the bits of w: compilers
 * turn "keep ? w : 0.0" and "w * keep" into a branch, and a match happens
 * with probability 1/g, far too often for a predictable branch. */
static inline double fastldp_masked_weight(uint64_t w_bits, uint64_t keep)
{
    uint64_t bits = w_bits & ((uint64_t)0 - keep);
    double out;
    memcpy(&out, &bits, sizeof(out));
    return out;
}

/* out[x] += w * [H(x) == report] for all x in [0, p); full blocks unrolled
 * and branch-free. */
static inline void fastldp_olh_support_one(
    uint64_t seed, uint64_t identity, int64_t report, int64_t g, double w,
    int64_t p, double *out)
{
    int64_t full = p >> 3;
    int64_t b, x;
    int lane;
    uint64_t ug = (uint64_t)g;
    uint64_t ur = (uint64_t)report;
    uint64_t w_bits;
    memcpy(&w_bits, &w, sizeof(w_bits));
    for (b = 0; b < full; ++b) {
        fastldp_philox_block blk =
            fastldp_hash_block(seed, identity, (uint64_t)b, FASTLDP_STREAM_OLH_HASH);
        double *o = out + (b << 3);
        int q;
        for (q = 0; q < 4; ++q) {
            uint64_t word = blk.v[q];
            uint64_t lo = ((word & 0xFFFFFFFFULL) * ug) >> 32;
            uint64_t hi = ((word >> 32) * ug) >> 32;
            o[2 * q] += fastldp_masked_weight(w_bits, (uint64_t)(lo == ur));
            o[2 * q + 1] += fastldp_masked_weight(w_bits, (uint64_t)(hi == ur));
        }
    }
    if (full << 3 < p) {
        fastldp_philox_block blk =
            fastldp_hash_block(seed, identity, (uint64_t)full, FASTLDP_STREAM_OLH_HASH);
        for (lane = 0; lane < 8; ++lane) {
            x = (full << 3) + lane;
            if (x >= p) break;
            out[x] += (fastldp_bucket_of_lane(fastldp_block_lane32(&blk, lane), g) == report) ? w : 0.0;
        }
    }
}

#endif
