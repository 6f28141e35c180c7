/*
 * Unary encoding (OUE, SUE) on packed bit rows.
 *
 * A report is a row of nbytes = ceil(D / 8) bytes; item v is bit (v & 7) of
 * byte (v >> 3) (numpy.packbits(..., bitorder="little")). Rows are read and
 * written 64 items at a time: word j holds items 64 j .. 64 j + 63, byte k of
 * the word (least significant first) being byte 8 j + k of the row, so the
 * layout does not depend on the machine's byte order.
 *
 * Client. Bit v is 1 with probability q for every item the user does not
 * hold. A Bernoulli(q) bit is [U < Q] for a uniform 64-bit U and
 * Q = q 2^64 (exact for a double q >= 2^-12, within 2^-64 of q below). The
 * 64 bits of a word are decided together: the binary expansions of their 64
 * U's are drawn one position at a time (one random word per position, most
 * significant first) and compared with Q's; a lane is decided at the first
 * position where its bit differs from Q's, so all 64 lanes are decided after
 * about log2(64) + 1.3 random words on average. Below Q's lowest set bit an
 * undecided lane can only end at U >= Q, so the draw stops there. The held
 * item's bit is [u53 2^-53 < p] with u53 the top 53 bits of a random word,
 * exactly numpy's Generator.random() < p (exact for p >= 1/2).
 *
 * Client randomness: row r's words come from xoshiro256++ seeded with the
 * Philox4x64-10 block keyed by (k0, k1), a key the caller draws from its
 * Generator, at counter (0, r, FASTLDP_UE_STREAM, 0): a row's bits depend on
 * the key and the row index only, never on the thread.
 *
 * Server. Column counts by a Harley-Seal carry-save adder: sixteen rows at
 * a time are reduced to bit-sliced ones / twos / fours / eights words and a
 * carry word of weight sixteen, which is rippled into a 7-level bit-sliced
 * counter. A block of at most 16 * 127 rows cannot overflow it; the counters are flushed
 * into int64 counts at the end of every block. About six word operations
 * per 64 report bits, in loops over the words of a row that compilers
 * vectorize.
 */
#ifndef FASTLDP_UNARY_H
#define FASTLDP_UNARY_H

#include <stdint.h>
#include <string.h>
#include "philox.h"

#define FASTLDP_UE_STREAM 0x5545ULL

#if defined(_MSC_VER)
#define FASTLDP_RESTRICT __restrict
#elif defined(__GNUC__) || defined(__clang__)
#define FASTLDP_RESTRICT __restrict__
#else
#define FASTLDP_RESTRICT
#endif
#define FASTLDP_UE_BLOCK_ROWS 2032 /* 16 * 127: the sixteens counter holds 127 */

/* A row's generator: xoshiro256++ (Blackman and Vigna) seeded with the
 * Philox4x64-10 block of the caller's key at counter (0, row, UE stream, 0).
 * Philox makes the rows' streams independent and keyed by the row index;
 * xoshiro then costs about a nanosecond per word, which matters because a
 * report draws about 7 D / 64 words. */
typedef struct {
    uint64_t s[4];
} fastldp_ue_stream;

static inline uint64_t fastldp_rotl64(uint64_t x, int k)
{
    return (x << k) | (x >> (64 - k));
}

static inline void fastldp_ue_stream_init(fastldp_ue_stream *st, uint64_t k0, uint64_t k1, uint64_t row)
{
    fastldp_philox_block blk = fastldp_philox4x64_10(0, row, FASTLDP_UE_STREAM, 0, k0, k1);
    st->s[0] = blk.v[0];
    st->s[1] = blk.v[1];
    st->s[2] = blk.v[2];
    st->s[3] = blk.v[3];
    if (!(st->s[0] | st->s[1] | st->s[2] | st->s[3])) st->s[0] = 1; /* the one bad state */
}

static inline uint64_t fastldp_ue_next(fastldp_ue_stream *st)
{
    uint64_t *s = st->s;
    uint64_t result = fastldp_rotl64(s[0] + s[3], 23) + s[0];
    uint64_t t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = fastldp_rotl64(s[3], 45);
    return result;
}

/* 64 independent Bernoulli(Q / 2^64) bits; low = the lowest set bit of Q (Q > 0). */
static inline uint64_t fastldp_ue_bernoulli64(fastldp_ue_stream *s, uint64_t Q, int low)
{
    uint64_t undecided = ~(uint64_t)0, ones = 0;
    int k;
    for (k = 63; k >= low && undecided; --k) {
        uint64_t r = fastldp_ue_next(s);
        if ((Q >> k) & 1) {
            ones |= undecided & ~r;   /* U bit 0 < Q bit 1: U < Q */
            undecided &= r;
        } else {
            undecided &= ~r;          /* U bit 1 > Q bit 0: U > Q */
        }
    }
    return ones;
}

/* index of the lowest set bit (64 for 0) */
static inline int fastldp_lowest_bit(uint64_t x)
{
    uint32_t lo = (uint32_t)x;
    if (lo) return fastldp_ctz32(lo);
    if (x >> 32) return 32 + fastldp_ctz32((uint32_t)(x >> 32));
    return 64;
}

/* eight bytes as a little-endian word */
static inline uint64_t fastldp_load_full_word(const uint8_t *b)
{
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    uint64_t w;
    memcpy(&w, b, 8);
    return w;
#else
    return (uint64_t)b[0] | ((uint64_t)b[1] << 8) | ((uint64_t)b[2] << 16)
        | ((uint64_t)b[3] << 24) | ((uint64_t)b[4] << 32) | ((uint64_t)b[5] << 40)
        | ((uint64_t)b[6] << 48) | ((uint64_t)b[7] << 56);
#endif
}

static inline uint64_t fastldp_load_word(const uint8_t *row, int64_t j, int64_t nbytes)
{
    const uint8_t *b = row + 8 * j;
    int64_t m = nbytes - 8 * j;
    uint64_t w = 0;
    int k;
    if (m >= 8) return fastldp_load_full_word(b);
    for (k = 0; k < m; ++k) w |= (uint64_t)b[k] << (8 * k);
    return w;
}

static inline void fastldp_store_word(uint8_t *row, int64_t j, int64_t nbytes, uint64_t w)
{
    uint8_t *b = row + 8 * j;
    int64_t m = nbytes - 8 * j;
    int k;
    if (m > 8) m = 8;
    for (k = 0; k < m; ++k) b[k] = (uint8_t)(w >> (8 * k));
}

/* One report: D bits, held item v (or -1 for none), thresholds Q (others), p (held). */
static inline void fastldp_ue_perturb_row(
    uint64_t k0, uint64_t k1, uint64_t row_index, int64_t D, int64_t v, uint64_t Q, double p,
    uint8_t *row)
{
    fastldp_ue_stream s;
    int64_t nbytes = (D + 7) >> 3, W = (D + 63) >> 6, j;
    int low = fastldp_lowest_bit(Q);
    fastldp_ue_stream_init(&s, k0, k1, row_index);
    for (j = 0; j < W; ++j) {
        uint64_t w = (Q == 0) ? 0 : fastldp_ue_bernoulli64(&s, Q, low);
        if (j == W - 1 && (D & 63)) w &= (((uint64_t)1) << (D & 63)) - 1;
        if (v >= 0 && (v >> 6) == j) {
            uint64_t u = fastldp_ue_next(&s);
            uint64_t bit = ((double)(u >> 11) * (1.0 / 9007199254740992.0)) < p;
            w = (w & ~(((uint64_t)1) << (v & 63))) | (bit << (v & 63));
        }
        fastldp_store_word(row, j, nbytes, w);
    }
}

/* carry-save adder: (h, l) = a + b + c as bit slices */
#define FASTLDP_UE_CSA(h, l, a, b, c) do { \
    uint64_t u_ = (a) ^ (b); \
    (h) = ((a) & (b)) | (u_ & (c)); \
    (l) = u_ ^ (c); \
} while (0)

/* Sixteen rows of W full words into the bit-sliced ones / twos / fours /
 * eights words; returns the weight-sixteen carries in sixteens. Written so
 * that compilers vectorize the loop over j. */
static inline void fastldp_ue_csa16(
    const uint8_t *FASTLDP_RESTRICT p0, int64_t nbytes, int64_t W,
    uint64_t *FASTLDP_RESTRICT ones, uint64_t *FASTLDP_RESTRICT twos,
    uint64_t *FASTLDP_RESTRICT fours, uint64_t *FASTLDP_RESTRICT eights,
    uint64_t *FASTLDP_RESTRICT sixteens)
{
    int64_t j;
    for (j = 0; j < W; ++j) {
        const uint8_t *q = p0 + 8 * j;
        uint64_t o = ones[j], tw = twos[j], f = fours[j], e = eights[j];
        uint64_t twosA, twosB, foursA, foursB, eightsA, eightsB, x;
        FASTLDP_UE_CSA(twosA, o, o, fastldp_load_full_word(q), fastldp_load_full_word(q + nbytes));
        FASTLDP_UE_CSA(twosB, o, o, fastldp_load_full_word(q + 2 * nbytes),
                       fastldp_load_full_word(q + 3 * nbytes));
        FASTLDP_UE_CSA(foursA, tw, tw, twosA, twosB);
        FASTLDP_UE_CSA(twosA, o, o, fastldp_load_full_word(q + 4 * nbytes),
                       fastldp_load_full_word(q + 5 * nbytes));
        FASTLDP_UE_CSA(twosB, o, o, fastldp_load_full_word(q + 6 * nbytes),
                       fastldp_load_full_word(q + 7 * nbytes));
        FASTLDP_UE_CSA(foursB, tw, tw, twosA, twosB);
        FASTLDP_UE_CSA(eightsA, f, f, foursA, foursB);
        FASTLDP_UE_CSA(twosA, o, o, fastldp_load_full_word(q + 8 * nbytes),
                       fastldp_load_full_word(q + 9 * nbytes));
        FASTLDP_UE_CSA(twosB, o, o, fastldp_load_full_word(q + 10 * nbytes),
                       fastldp_load_full_word(q + 11 * nbytes));
        FASTLDP_UE_CSA(foursA, tw, tw, twosA, twosB);
        FASTLDP_UE_CSA(twosA, o, o, fastldp_load_full_word(q + 12 * nbytes),
                       fastldp_load_full_word(q + 13 * nbytes));
        FASTLDP_UE_CSA(twosB, o, o, fastldp_load_full_word(q + 14 * nbytes),
                       fastldp_load_full_word(q + 15 * nbytes));
        FASTLDP_UE_CSA(foursB, tw, tw, twosA, twosB);
        FASTLDP_UE_CSA(eightsB, f, f, foursA, foursB);
        FASTLDP_UE_CSA(x, e, e, eightsA, eightsB);
        ones[j] = o;
        twos[j] = tw;
        fours[j] = f;
        eights[j] = e;
        sixteens[j] = x;
    }
}

/* Add the words carry[0..W) (weight one) into an L-level bit-sliced
 * counter c (level l at c + l W); carry is consumed. */
static inline void fastldp_ue_ripple(uint64_t *FASTLDP_RESTRICT c, uint64_t *FASTLDP_RESTRICT carry,
                                     int64_t W, int levels)
{
    int l;
    int64_t j;
    for (l = 0; l < levels; ++l) {
        uint64_t *FASTLDP_RESTRICT cl = c + l * W;
        uint64_t any = 0;
        for (j = 0; j < W; ++j) {
            uint64_t t = cl[j] & carry[j];
            cl[j] ^= carry[j];
            carry[j] = t;
            any |= t;
        }
        if (!any) break;
    }
}

/* The column count is compute-bound (about three cycles per 64-bit word with
 * 16-byte vectors): GCC on x86-64 glibc (ifunc) also compiles an AVX2 clone and
 * picks one at load time (the baseline clone runs everywhere else). */
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && defined(__GLIBC__) \
    && !defined(FASTLDP_PORTABLE)
#define FASTLDP_UE_CLONES __attribute__((target_clones("avx2", "default")))
#else
#define FASTLDP_UE_CLONES
#endif

/* counts[64 j + b] += number of rows in [r0, r1) with bit b of word j set.
 * scratch: 12 W words. */
FASTLDP_UE_CLONES static void fastldp_ue_count_range(
    const uint8_t *rows, int64_t nbytes, int64_t r0, int64_t r1, int64_t *counts, uint64_t *scratch)
{
    int64_t W = (nbytes + 7) >> 3;
    uint64_t *ones = scratch, *twos = scratch + W, *fours = scratch + 2 * W, *eights = scratch + 3 * W;
    uint64_t *c16 = scratch + 4 * W; /* 7 levels of W words: the number of sixteens */
    uint64_t *carry = scratch + 11 * W;
    int64_t start, r, j;
    int l, b;
    for (start = r0; start < r1; start += FASTLDP_UE_BLOCK_ROWS) {
        int64_t stop = start + FASTLDP_UE_BLOCK_ROWS < r1 ? start + FASTLDP_UE_BLOCK_ROWS : r1;
        memset(scratch, 0, (size_t)(12 * W) * sizeof(uint64_t));
        r = start;
        if (nbytes == 8 * W) {
            for (; r + 16 <= stop; r += 16) {
                fastldp_ue_csa16(rows + r * nbytes, nbytes, W, ones, twos, fours, eights, carry);
                fastldp_ue_ripple(c16, carry, W, 7);
            }
        }
        for (; r < stop; ++r) { /* leftover rows, one at a time */
            const uint8_t *row = rows + r * nbytes;
            for (j = 0; j < W; ++j) {
                uint64_t x = fastldp_load_word(row, j, nbytes), t;
                t = ones[j] & x; ones[j] ^= x; x = t;
                t = twos[j] & x; twos[j] ^= x; x = t;
                t = fours[j] & x; fours[j] ^= x; x = t;
                t = eights[j] & x; eights[j] ^= x; x = t;
                carry[j] = x;
            }
            fastldp_ue_ripple(c16, carry, W, 7);
        }
        for (j = 0; j < W; ++j) {
            for (b = 0; b < 64; ++b) {
                int64_t c = (int64_t)((ones[j] >> b) & 1) + 2 * (int64_t)((twos[j] >> b) & 1)
                    + 4 * (int64_t)((fours[j] >> b) & 1) + 8 * (int64_t)((eights[j] >> b) & 1);
                int64_t hi = 0;
                for (l = 0; l < 7; ++l) hi += (int64_t)((c16[l * W + j] >> b) & 1) << l;
                counts[64 * j + b] += c + 16 * hi;
            }
        }
    }
}

/* out[64 j + b] += weights[r] for every set bit, rows [r0, r1). */
static inline void fastldp_ue_weighted_range(
    const uint8_t *rows, int64_t nbytes, const double *weights, int64_t r0, int64_t r1, double *out)
{
    int64_t W = (nbytes + 7) >> 3, r, j;
    for (r = r0; r < r1; ++r) {
        const uint8_t *row = rows + r * nbytes;
        double w = weights[r];
        for (j = 0; j < W; ++j) {
            uint64_t x = fastldp_load_word(row, j, nbytes);
            while (x) {
                int b = fastldp_lowest_bit(x);
                out[64 * j + b] += w;
                x &= x - 1;
            }
        }
    }
}

#endif
