/*
 * Column counts of Apple's Count Mean Sketch reports, one sketch row at a time.
 *
 * A CMS report is a row of 1 + W int64 words: the sketch row index, then the
 * m signs as bits (sign l is bit l % 64 of word 1 + l / 64, read as the
 * word's integer value, so the layout does not depend on the byte order).
 * The server needs, for every sketch row j, how many of the reports that
 * chose row j set each bit. The reports of one sketch row are listed by
 * their indices (a counting sort done by the caller) and counted in place,
 * without gathering them into a copy, by the Harley-Seal carry-save adder of
 * src/unary.h: sixteen reports at a time are reduced to bit-sliced ones /
 * twos / fours / eights words and a carry of weight sixteen, rippled into a
 * 7-level bit-sliced counter; the counters are flushed into int64 counts
 * every FASTLDP_CMS_BLOCK_ROWS reports (16 * 127, so they cannot overflow).
 * Only bit operations: no compiler builtin is needed (portable.h's rule).
 * Integer counts: the result does not depend on how the rows are split
 * between threads.
 */
#ifndef FASTLDP_CMS_H
#define FASTLDP_CMS_H

#include <stdint.h>
#include <string.h>

#include "portable.h"

#if defined(_MSC_VER)
#define FASTLDP_CMS_RESTRICT __restrict
#elif defined(__GNUC__) || defined(__clang__)
#define FASTLDP_CMS_RESTRICT __restrict__
#else
#define FASTLDP_CMS_RESTRICT
#endif

/* A report's words are read in the order of the counting sort, not in memory
 * order: asking for the next sixteen reports' cache lines early hides most of
 * the misses. A hint only (no effect on results); plain C has none. */
#if FASTLDP_HAVE_BUILTINS
#define FASTLDP_CMS_PREFETCH(p) __builtin_prefetch((const void *)(p), 0, 0)
#else
#define FASTLDP_CMS_PREFETCH(p) ((void)(p))
#endif

#define FASTLDP_CMS_BLOCK_ROWS (16 * 127)

/* carry-save adder: (h, l) = a + b + c as bit slices */
#define FASTLDP_CMS_CSA(h, l, a, b, c) do { \
    uint64_t u_ = (a) ^ (b); \
    (h) = ((a) & (b)) | (u_ & (c)); \
    (l) = u_ ^ (c); \
} while (0)

/* Add the words carry[0..W) (weight one) into the L-level bit-sliced counter c. */
static inline void fastldp_cms_ripple(uint64_t *c, uint64_t *carry, int64_t W, int levels)
{
    int l;
    int64_t j;
    for (l = 0; l < levels; ++l) {
        uint64_t *cl = c + l * W;
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

/* Sixteen reports' words (p[0..16)) into the bit-sliced ones / twos / fours /
 * eights words; the weight-sixteen carries go to carry. A function of its
 * own, with restrict pointers, so that compilers vectorize the loop over j. */
static inline void fastldp_cms_csa16(
    const uint64_t *const *p, int64_t W, uint64_t *FASTLDP_CMS_RESTRICT ones,
    uint64_t *FASTLDP_CMS_RESTRICT twos, uint64_t *FASTLDP_CMS_RESTRICT fours,
    uint64_t *FASTLDP_CMS_RESTRICT eights, uint64_t *FASTLDP_CMS_RESTRICT carry)
{
    int64_t j;
    const uint64_t *FASTLDP_CMS_RESTRICT p0 = p[0], *FASTLDP_CMS_RESTRICT p1 = p[1];
    const uint64_t *FASTLDP_CMS_RESTRICT p2 = p[2], *FASTLDP_CMS_RESTRICT p3 = p[3];
    const uint64_t *FASTLDP_CMS_RESTRICT p4 = p[4], *FASTLDP_CMS_RESTRICT p5 = p[5];
    const uint64_t *FASTLDP_CMS_RESTRICT p6 = p[6], *FASTLDP_CMS_RESTRICT p7 = p[7];
    const uint64_t *FASTLDP_CMS_RESTRICT p8 = p[8], *FASTLDP_CMS_RESTRICT p9 = p[9];
    const uint64_t *FASTLDP_CMS_RESTRICT p10 = p[10], *FASTLDP_CMS_RESTRICT p11 = p[11];
    const uint64_t *FASTLDP_CMS_RESTRICT p12 = p[12], *FASTLDP_CMS_RESTRICT p13 = p[13];
    const uint64_t *FASTLDP_CMS_RESTRICT p14 = p[14], *FASTLDP_CMS_RESTRICT p15 = p[15];
    for (j = 0; j < W; ++j) {
        uint64_t o = ones[j], tw = twos[j], f = fours[j], e = eights[j];
        uint64_t twosA, twosB, foursA, foursB, eightsA, eightsB, x;
        FASTLDP_CMS_CSA(twosA, o, o, p0[j], p1[j]);
        FASTLDP_CMS_CSA(twosB, o, o, p2[j], p3[j]);
        FASTLDP_CMS_CSA(foursA, tw, tw, twosA, twosB);
        FASTLDP_CMS_CSA(twosA, o, o, p4[j], p5[j]);
        FASTLDP_CMS_CSA(twosB, o, o, p6[j], p7[j]);
        FASTLDP_CMS_CSA(foursB, tw, tw, twosA, twosB);
        FASTLDP_CMS_CSA(eightsA, f, f, foursA, foursB);
        FASTLDP_CMS_CSA(twosA, o, o, p8[j], p9[j]);
        FASTLDP_CMS_CSA(twosB, o, o, p10[j], p11[j]);
        FASTLDP_CMS_CSA(foursA, tw, tw, twosA, twosB);
        FASTLDP_CMS_CSA(twosA, o, o, p12[j], p13[j]);
        FASTLDP_CMS_CSA(twosB, o, o, p14[j], p15[j]);
        FASTLDP_CMS_CSA(foursB, tw, tw, twosA, twosB);
        FASTLDP_CMS_CSA(eightsB, f, f, foursA, foursB);
        FASTLDP_CMS_CSA(x, e, e, eightsA, eightsB);
        ones[j] = o;
        twos[j] = tw;
        fours[j] = f;
        eights[j] = e;
        carry[j] = x;
    }
}

/* As in src/unary.h: GCC on x86-64 glibc also compiles an AVX2 clone (the
 * carry-save loop and the flush vectorize there) and picks one at load time. */
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && defined(__GLIBC__) \
    && !defined(FASTLDP_PORTABLE)
#define FASTLDP_CMS_CLONES __attribute__((target_clones("avx2", "default")))
#else
#define FASTLDP_CMS_CLONES
#endif

/* counts[64 w + b] += the number of listed reports whose word w has bit b set.
 *
 * words: the first sign word of report 0; report r's words start at
 * words + idx[r] * stride. cnt reports are listed in idx. counts holds 64 W
 * int64; scratch 12 W words. */
FASTLDP_CMS_CLONES static void fastldp_cms_count_rows(const int64_t *words, int64_t stride, const int64_t *idx,
                                   int64_t cnt, int64_t W, int64_t *counts, uint64_t *scratch)
{
    uint64_t *FASTLDP_CMS_RESTRICT ones = scratch, *FASTLDP_CMS_RESTRICT twos = scratch + W;
    uint64_t *FASTLDP_CMS_RESTRICT fours = scratch + 2 * W;
    uint64_t *FASTLDP_CMS_RESTRICT eights = scratch + 3 * W, *c16 = scratch + 4 * W;
    uint64_t *FASTLDP_CMS_RESTRICT carry = scratch + 11 * W;
    const uint64_t *p[16];
    int64_t start, r, j;
    int l, t;
    for (start = 0; start < cnt; start += FASTLDP_CMS_BLOCK_ROWS) {
        int64_t stop = start + FASTLDP_CMS_BLOCK_ROWS < cnt ? start + FASTLDP_CMS_BLOCK_ROWS : cnt;
        memset(scratch, 0, (size_t)(12 * W) * sizeof(uint64_t));
        r = start;
        for (; r + 16 <= stop; r += 16) {
            for (t = 0; t < 16; ++t)
                p[t] = (const uint64_t *)(words + idx[r + t] * stride);
            if (r + 32 <= stop) {
                for (t = 0; t < 16; ++t) {
                    const int64_t *next = words + idx[r + 16 + t] * stride;
                    int64_t off;
                    for (off = 0; off < W; off += 8) FASTLDP_CMS_PREFETCH(next + off);
                    FASTLDP_CMS_PREFETCH(next + W - 1);
                }
            }
            fastldp_cms_csa16(p, W, ones, twos, fours, eights, carry);
            fastldp_cms_ripple(c16, carry, W, 7);
        }
        for (; r < stop; ++r) { /* leftover reports, one at a time */
            const uint64_t *row = (const uint64_t *)(words + idx[r] * stride);
            for (j = 0; j < W; ++j) {
                uint64_t x = row[j], s;
                s = ones[j] & x; ones[j] ^= x; x = s;
                s = twos[j] & x; twos[j] ^= x; x = s;
                s = fours[j] & x; fours[j] ^= x; x = s;
                s = eights[j] & x; eights[j] ^= x; x = s;
                carry[j] = x;
            }
            fastldp_cms_ripple(c16, carry, W, 7);
        }
        /* the levels that hold a bit (a row of a few hundred reports needs about ten) */
        {
            uint64_t *level[11];
            int64_t weight[11];
            int used = 0;
            for (l = 0; l < 11; ++l) {
                uint64_t *lv = l < 4 ? scratch + l * W : c16 + (l - 4) * W;
                uint64_t any = 0;
                for (j = 0; j < W; ++j) any |= lv[j];
                if (any) {
                    level[used] = lv;
                    weight[used] = l < 4 ? ((int64_t)1 << l) : ((int64_t)16 << (l - 4));
                    ++used;
                }
            }
            for (t = 0; t < used; ++t) {
                const uint64_t *lv = level[t];
                int64_t wt = weight[t];
                for (j = 0; j < W; ++j) {
                    uint64_t x = lv[j];
                    int64_t *FASTLDP_CMS_RESTRICT cj = counts + 64 * j;
                    int64_t bb;
                    for (bb = 0; bb < 64; ++bb) cj[bb] += -(int64_t)((x >> bb) & 1) & wt;
                }
            }
        }
    }
}

/* x <- x H_m in place (Sylvester order, m a power of two): integer
 * butterflies, exact while the sums stay in int64. */
FASTLDP_CMS_CLONES static void fastldp_fwht_i64(int64_t *x, int64_t m)
{
    int64_t h, a, b;
    for (h = 1; h < m; h <<= 1) {
        for (a = 0; a < m; a += 2 * h) {
            int64_t *lo = x + a, *hi = x + a + h;
            for (b = 0; b < h; ++b) {
                int64_t u = lo[b], v = hi[b];
                lo[b] = u + v;
                hi[b] = u - v;
            }
        }
    }
}

/* Rows u0 .. u1 - 1 of G = X^T diag(w) X for a 0/1 matrix X in compressed rows
 * (row r: columns row_cols[row_ptr[r] .. row_ptr[r + 1]), increasing).
 * G is filled B rows at a time (a block that stays in cache) by one pass over
 * X's rows in order: every row r that holds a candidate u of the block adds
 * w[r] to G[u, v] for each of its candidates v. cursor[r] must point at the
 * first column >= u0 of row r; it is advanced. Each G[u, v] is summed over r
 * in increasing order whatever u0, u1 and B are. */
static void fastldp_gram_rows(const int64_t *row_ptr, const int64_t *row_cols, const double *w,
                              int64_t R, int64_t D, int64_t u0, int64_t u1, int64_t B,
                              int64_t *cursor, double *G)
{
    int64_t start, r, a, b;
    for (start = u0; start < u1; start += B) {
        int64_t stop = start + B < u1 ? start + B : u1;
        for (r = 0; r < R; ++r) {
            int64_t lo = row_ptr[r], hi = row_ptr[r + 1], len = hi - lo;
            const int64_t *cols = row_cols + lo;
            double wr = w[r];
            for (a = cursor[r]; a < hi && row_cols[a] < stop; ++a) {
                double *g = G + row_cols[a] * D;
                for (b = 0; b < len; ++b) g[cols[b]] += wr;
            }
            cursor[r] = a;
        }
    }
}

#endif
