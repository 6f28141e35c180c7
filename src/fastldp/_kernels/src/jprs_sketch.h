/*
 * Inner loop of the JPRS global sketch (paper 000, Eq. (8)) for one chunk of
 * identities:  out[e] += sum_i w_i * R_i(e)  for every e in [0, p).
 *
 * R_i(e) = 1 - 2 * bit(e) of the Philox stream of (seed, identity_i); see
 * philox.h for the layout. Identities are taken eight at a time. For a group
 * of eight, every position's eight sign bits form a byte, and the group's
 * contribution to that position is a lookup in a 256-entry table of signed
 * weight sums. The bytes are obtained by transposing the 8 x 64 bit matrix
 * of the group's Philox words (a byte transpose of eight words, then one
 * 8 x 8 bit transpose per byte lane), which costs far less than one
 * floating-point operation per identity and position.
 *
 * The floating-point result depends only on the identities, weights and
 * their order in the chunk, never on the thread that runs it.
 */
#ifndef FASTLDP_JPRS_SKETCH_H
#define FASTLDP_JPRS_SKETCH_H

#include <stdint.h>
#include <math.h>
#include <string.h>
#include "philox.h"
#include "portable.h"
#include "pair_blocks.h"

/* x holds an 8 x 8 bit matrix, row r in byte r, column c in bit c of it;
 * returns its transpose (row c in byte c). Hacker's Delight, 7-3. */
static inline uint64_t fastldp_transpose_bits8x8(uint64_t x)
{
    uint64_t t;
    t = (x ^ (x >> 7)) & 0x00AA00AA00AA00AAULL;
    x = x ^ t ^ (t << 7);
    t = (x ^ (x >> 14)) & 0x0000CCCC0000CCCCULL;
    x = x ^ t ^ (t << 14);
    t = (x ^ (x >> 28)) & 0x00000000F0F0F0F0ULL;
    x = x ^ t ^ (t << 28);
    return x;
}

/* In place: treat x[0..7] as an 8 x 8 byte matrix (row j = word j, column L
 * = byte L) and transpose it, so that afterwards byte j of x[L] is byte L
 * of the original x[j]. */
static inline void fastldp_transpose_bytes8x8(uint64_t x[8])
{
    uint64_t t;
    int r;
    for (r = 0; r < 8; r += 2) {
        t = ((x[r] >> 8) ^ x[r + 1]) & 0x00FF00FF00FF00FFULL;
        x[r + 1] ^= t;
        x[r] ^= t << 8;
    }
    for (r = 0; r < 8; r += (r & 1) ? 3 : 1) {
        t = ((x[r] >> 16) ^ x[r + 2]) & 0x0000FFFF0000FFFFULL;
        x[r + 2] ^= t;
        x[r] ^= t << 16;
    }
    for (r = 0; r < 4; ++r) {
        t = ((x[r] >> 32) ^ x[r + 4]) & 0x00000000FFFFFFFFULL;
        x[r + 4] ^= t;
        x[r] ^= t << 32;
    }
}

/* table[b] = sum_j w[j] * (bit j of b ? -1 : +1), built in a fixed order. */
static inline void fastldp_signed_sum_table(const double w[8], double table[256])
{
    double total = 0.0;
    int j, b;
    for (j = 0; j < 8; ++j) total += w[j];
    table[0] = total;
    for (b = 1; b < 256; ++b) {
        table[b] = table[b & (b - 1)] - 2.0 * w[fastldp_ctz32((uint32_t)b)];
    }
}

/* Adds one 64-position word group (8 identities' words at one word index)
 * to out[base .. base + limit). */
static inline void fastldp_add_word_group(
    uint64_t words[8], const double table[256], double *out, int64_t base, int64_t limit)
{
    int lane, t;
    fastldp_transpose_bytes8x8(words);
    if (limit >= 64) {
        for (lane = 0; lane < 8; ++lane) {
            uint64_t y = fastldp_transpose_bits8x8(words[lane]);
            double *o = out + base + 8 * lane;
            for (t = 0; t < 8; ++t) {
                o[t] += table[(y >> (8 * t)) & 255];
            }
        }
    } else {
        for (lane = 0; lane < 8; ++lane) {
            uint64_t y = fastldp_transpose_bits8x8(words[lane]);
            for (t = 0; t < 8; ++t) {
                int64_t pos = 8 * lane + t;
                if (pos < limit) out[base + pos] += table[(y >> (8 * t)) & 255];
            }
        }
    }
}

/* Where a chunk's identities and weights come from. identities == NULL means
 * identity = first_identity + i. weights == NULL means
 * w_i = scale * tanh(eps_i / 2) * bits_i (the JPRS weights of Eq. (8)),
 * computed on the fly so the decoder needs no length-n temporaries. */
typedef struct {
    uint64_t seed;
    int codebook; /* FASTLDP_CODEBOOK_* of philox.h */
    const uint64_t *identities;
    uint64_t first_identity;
    const double *weights;
    const int8_t *bits;
    const double *eps;
    double scale;
    int64_t p;
} fastldp_sketch_source;

static inline uint64_t fastldp_source_identity(const fastldp_sketch_source *src, int64_t i)
{
    return src->identities ? src->identities[i] : src->first_identity + (uint64_t)i;
}

static inline double fastldp_source_weight(const fastldp_sketch_source *src, int64_t i)
{
    return src->weights ? src->weights[i]
                        : src->scale * tanh(0.5 * src->eps[i]) * (double)src->bits[i];
}

#define FASTLDP_TILE_GROUPS 16

/* out[e] += sum over identities [start, stop) of w_i * R_i(e).
 *
 * Identities go in tiles of FASTLDP_TILE_GROUPS groups of eight. For each
 * 8-position lane the tile's groups are added into eight register
 * accumulators in group order, so out[] is read and written once per tile
 * instead of once per group, while the order of the floating-point
 * additions into each out[e] stays group by group. */
static inline void fastldp_sketch_range(
    const fastldp_sketch_source *src, int64_t start, int64_t stop, double *out)
{
    int64_t p = src->p;
    int64_t nblocks = (p + 255) >> 8;
    int64_t t0, b;
    int g, j, q, lane, t;
    double w[8];
    double tables[FASTLDP_TILE_GROUPS][256];
    uint64_t ids[8 * FASTLDP_TILE_GROUPS];
    uint64_t lanes[FASTLDP_TILE_GROUPS][8];
    fastldp_philox_block blk[8 * FASTLDP_TILE_GROUPS];
    int level = fastldp_simd_level();

    for (t0 = start; t0 < stop; t0 += 8 * FASTLDP_TILE_GROUPS) {
        int members = (int)((stop - t0) < 8 * FASTLDP_TILE_GROUPS ? (stop - t0) : 8 * FASTLDP_TILE_GROUPS);
        int ngroups = (members + 7) / 8;
        for (g = 0; g < ngroups; ++g) {
            for (j = 0; j < 8; ++j) {
                int m = 8 * g + j;
                w[j] = (m < members) ? fastldp_source_weight(src, t0 + m) : 0.0;
                ids[m] = (m < members) ? fastldp_source_identity(src, t0 + m) : 0;
            }
            fastldp_signed_sum_table(w, tables[g]);
        }
        for (b = 0; b < nblocks; ++b) {
            fastldp_pair_blocks(src->codebook, src->seed, ids, members, (uint64_t)b, blk, level);
            for (j = members; j < 8 * ngroups; ++j) memset(&blk[j], 0, sizeof(blk[j]));
            for (q = 0; q < 4; ++q) {
                int64_t base = (b << 8) + 64 * q;
                int64_t limit;
                if (base >= p) break;
                limit = p - base;
                for (g = 0; g < ngroups; ++g) {
                    for (j = 0; j < 8; ++j) lanes[g][j] = blk[8 * g + j].v[q];
                    fastldp_transpose_bytes8x8(lanes[g]);
                }
                for (lane = 0; lane < 8; ++lane) {
                    double acc[8];
                    int64_t pos0 = 8 * lane;
                    if (pos0 >= limit) break;
                    for (t = 0; t < 8; ++t) acc[t] = (pos0 + t < limit) ? out[base + pos0 + t] : 0.0;
                    for (g = 0; g < ngroups; ++g) {
                        uint64_t y = fastldp_transpose_bits8x8(lanes[g][lane]);
                        const double *table = tables[g];
                        for (t = 0; t < 8; ++t) acc[t] += table[(y >> (8 * t)) & 255];
                    }
                    for (t = 0; t < 8; ++t) {
                        if (pos0 + t < limit) out[base + pos0 + t] = acc[t];
                    }
                }
            }
        }
    }
}

#endif
