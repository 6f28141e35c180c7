/*
 * Multi-attribute frequency protocols (SPL, SMP, RSpFD over GRR and the unary
 * encodings): fused clients and servers, one pass over the records or reports.
 *
 * Client randomness: record r draws every random word it needs, for all its
 * attributes, from one xoshiro256++ stream seeded with the Philox4x64-10 block
 * of the caller's key (k0, k1) at counter (0, r, FASTLDP_MD_STREAM, 0) (as
 * unary.h seeds a row). A record's report depends on the key, the record and
 * its row index only, never on the thread count.
 *
 * The draws of one record, in order (fastldp_md_* below; tests/
 * test_multidim_kernel.py replays them in Python from the same words):
 *   coin(p):      one word u; 1 when (u >> 11) 2^-53 < p (numpy's random() < p).
 *   bounded(m):   uniform in [0, m) by Lemire's multiply-shift with rejection:
 *                 word u, (hi, lo) = u m; while lo < (2^64 - m) mod m, a new word.
 *   grr(x, k, p): c = coin(p), then o = bounded(k - 1) (drawn either way, so
 *                 that no branch depends on the coin); c ? x : o + (o >= x).
 *   lanes(Q, N):  Bernoulli(Q 2^-64) bits at the set bits of the word N, as
 *                 fastldp_ue_bernoulli64 (unary.h) draws 64 of them, but stopping as
 *                 soon as the lanes of N are decided (the others are discarded).
 * SPL GRR:   grr(x_j, k_j, p_j) for j = 0 .. A-1.
 * SMP GRR:   s = bounded(A); grr(x_s, k_s, p_s).
 * RSpFD GRR: s = bounded(A); for j: j == s ? grr(x_j, k_j, p_j) : bounded(k_j).
 * Unary (one Q for every non-held bit of the report):
 * SPL:       lanes(Q, valid bits) for every 64-bit word of the row, then
 *            for j: bit x_j of part j := coin(p_j).
 * RSpFD:     s = bounded(A); the lanes; then for j: zero fakes: only j == s,
 *            bit x_s := coin(p_s); random fakes: v = j == s ? x_j : bounded(k_j),
 *            bit v of part j := coin(p_j).
 * SMP:       s = bounded(A); lanes(Q, bits below k_s) for each of part s's words;
 *            bit x_s := coin(p_s).
 * Longitudinal unary, second round: per word of the permanent row, lanes(Qkeep, its
 *            set valid bits), then lanes(Qraise, its clear valid bits).
 * Longitudinal SMP, unary: the first round as SMP's with s given; the second as the
 *            longitudinal unary second round over part s's words (lanes at its k_s bits).
 * Given (s, v) per row (longitudinal SMP): grr(v, k_s, p_s) (v a value, or row r's
 *            value of attribute s).
 *
 * Every client returns the first row of its range with a record out of range,
 * or -1; the rows of the range from it on are not written (the caller raises).
 *
 * Servers: hits per (attribute, value) over a range of reports, returning
 * the first illegal report of the range (or -1), in which case the counts
 * are to be discarded (the caller repairs the reports and counts again).
 */
#ifndef FASTLDP_MULTIDIM_H
#define FASTLDP_MULTIDIM_H

#include <stdint.h>
#include <string.h>
#include "philox.h"
#include "unary.h"

#define FASTLDP_MD_STREAM 0x4D44ULL /* "MD" */

typedef fastldp_ue_stream fastldp_md_stream;

static inline void fastldp_md_init(fastldp_md_stream *st, uint64_t k0, uint64_t k1, uint64_t row)
{
    fastldp_philox_block blk = fastldp_philox4x64_10(0, row, FASTLDP_MD_STREAM, 0, k0, k1);
    st->s[0] = blk.v[0];
    st->s[1] = blk.v[1];
    st->s[2] = blk.v[2];
    st->s[3] = blk.v[3];
    if (!(st->s[0] | st->s[1] | st->s[2] | st->s[3])) st->s[0] = 1;
}

static inline int fastldp_md_coin(fastldp_md_stream *st, double p)
{
    /* through int64: a signed conversion is one instruction, an unsigned one is not */
    return ((double)(int64_t)(fastldp_ue_next(st) >> 11) * (1.0 / 9007199254740992.0)) < p;
}

/* uniform in [0, m), m >= 1 */
static inline int64_t fastldp_md_bounded(fastldp_md_stream *st, uint64_t m)
{
    uint64_t hi, lo = fastldp_mulhilo64(fastldp_ue_next(st), m, &hi);
    if (lo < m) {
        uint64_t t = (0 - m) % m;
        while (lo < t) lo = fastldp_mulhilo64(fastldp_ue_next(st), m, &hi);
    }
    return (int64_t)hi;
}

/* Bernoulli(Q / 2^64) bits at the lanes of need (others 0); low = the lowest set bit of Q. */
static inline uint64_t fastldp_md_lanes(fastldp_md_stream *st, uint64_t Q, int low, uint64_t need)
{
    uint64_t undecided = need, ones = 0;
    int k;
    if (Q == 0) return 0;
    for (k = 63; k >= low && undecided; --k) {
        uint64_t r = fastldp_ue_next(st);
        if ((Q >> k) & 1) {
            ones |= undecided & ~r;
            undecided &= r;
        } else {
            undecided &= ~r;
        }
    }
    return ones;
}

static inline int64_t fastldp_md_grr(fastldp_md_stream *st, int64_t x, int64_t k, double p)
{
    int64_t keep = fastldp_md_coin(st, p);
    int64_t o = fastldp_md_bounded(st, (uint64_t)(k - 1));
    o += (o >= x);
    /* a mask, not "keep ? x : o": compilers branch on the ternary, mispredicted half the
     * time (6 ns against 3 ns a GRR draw, GCC 12 -O3) */
    return o ^ ((x ^ o) & -keep);
}

/* whether every value of a record is in its domain */
static inline int fastldp_md_record_ok(const int64_t *row, int64_t A, const int64_t *k)
{
    int64_t j;
    int ok = 1;
    for (j = 0; j < A; ++j) ok &= (uint64_t)row[j] < (uint64_t)k[j];
    return ok;
}

/* The first row in [r0, r1) with a value out of its domain, or -1. */
static int64_t fastldp_md_check_records(const int64_t *x, int64_t A, const int64_t *k,
                                        int64_t r0, int64_t r1)
{
    int64_t r;
    for (r = r0; r < r1; ++r)
        if (!fastldp_md_record_ok(x + r * A, A, k)) return r;
    return -1;
}

/* mode: 0 SPL, 1 SMP, 2 RSpFD (GRR reports; SMP writes (s, y) rows of 2). */
static int64_t fastldp_md_grr_rows(uint64_t k0, uint64_t k1, int mode, const int64_t *x,
                                   int64_t A, const int64_t *k, const double *p,
                                   int64_t r0, int64_t r1, int64_t *out)
{
    int64_t r, j;
    fastldp_md_stream st;
    for (r = r0; r < r1; ++r) {
        const int64_t *row = x + r * A;
        if (!fastldp_md_record_ok(row, A, k)) return r;
        fastldp_md_init(&st, k0, k1, (uint64_t)r);
        if (mode == 0) {
            int64_t *o = out + r * A;
            for (j = 0; j < A; ++j) o[j] = fastldp_md_grr(&st, row[j], k[j], p[j]);
        } else if (mode == 1) {
            int64_t s = fastldp_md_bounded(&st, (uint64_t)A);
            out[2 * r] = s;
            out[2 * r + 1] = fastldp_md_grr(&st, row[s], k[s], p[s]);
        } else {
            int64_t *o = out + r * A;
            int64_t s = fastldp_md_bounded(&st, (uint64_t)A);
            for (j = 0; j < A; ++j)
                o[j] = (j == s) ? fastldp_md_grr(&st, row[j], k[j], p[j])
                                : fastldp_md_bounded(&st, (uint64_t)k[j]);
        }
    }
    return -1;
}

/* GRR of a given attribute per row (the longitudinal SMP's rounds): row r reports
 * (s_r, grr(v, k[s_r], p[s_r])), its stream drawing only that GRR, where v is v[r] (width 1)
 * or v[r, s_r] (width A: the sampled attribute's value of a record). */
static int64_t fastldp_md_grr_given_rows(uint64_t k0, uint64_t k1, const int64_t *s,
                                         const int64_t *v, int64_t width, int64_t A,
                                         const int64_t *k, const double *p, int64_t r0,
                                         int64_t r1, int64_t *out)
{
    int64_t r;
    fastldp_md_stream st;
    for (r = r0; r < r1; ++r) {
        int64_t j = s[r], value;
        if ((uint64_t)j >= (uint64_t)A) return r;
        value = v[r * width + (width == 1 ? 0 : j)];
        if ((uint64_t)value >= (uint64_t)k[j]) return r;
        fastldp_md_init(&st, k0, k1, (uint64_t)r);
        out[2 * r] = j;
        out[2 * r + 1] = fastldp_md_grr(&st, value, k[j], p[j]);
    }
    return -1;
}

static inline void fastldp_md_set_bit(uint8_t *row, int64_t pos, int bit)
{
    uint8_t m = (uint8_t)(1u << (pos & 7));
    row[pos >> 3] = (uint8_t)((row[pos >> 3] & ~m) | (m & (uint8_t)(0 - (unsigned)bit)));
}

/* Unary reports of R bytes per row. mode: 0 SPL, 1 RSpFD zero fakes, 2 RSpFD random fakes.
 * byte0[j]: the first byte of part j; valid: the W = ceil(R / 8) words of the row's
 * non-padding bits. */
static int64_t fastldp_md_ue_rows(uint64_t k0, uint64_t k1, int mode, const int64_t *x,
                                  int64_t A, const int64_t *k, const double *p,
                                  const int64_t *byte0, const uint64_t *valid, int64_t R,
                                  uint64_t Q, int64_t r0, int64_t r1, uint8_t *out)
{
    int64_t r, j, w, W = (R + 7) >> 3;
    int low = fastldp_lowest_bit(Q);
    fastldp_md_stream st;
    for (r = r0; r < r1; ++r) {
        const int64_t *row = x + r * A;
        uint8_t *o = out + r * R;
        int64_t s = -1;
        if (!fastldp_md_record_ok(row, A, k)) return r;
        fastldp_md_init(&st, k0, k1, (uint64_t)r);
        if (mode != 0) s = fastldp_md_bounded(&st, (uint64_t)A);
        for (w = 0; w < W; ++w) {
            fastldp_store_word(o, w, R, fastldp_md_lanes(&st, Q, low, valid[w]));
        }
        for (j = 0; j < A; ++j) {
            int64_t v;
            if (mode == 0 || j == s) v = row[j];
            else if (mode == 2) v = fastldp_md_bounded(&st, (uint64_t)k[j]);
            else continue;
            fastldp_md_set_bit(o, 8 * byte0[j] + v, fastldp_md_coin(&st, p[j]));
        }
    }
    return -1;
}

/* The instantaneous round of the longitudinal unary protocols on rows of R bytes: every
 * valid bit set in perm stays set with probability Qkeep / 2^64, every valid bit clear is set
 * with probability Qraise / 2^64. Per 64-bit word: lanes(Qkeep, set bits), then
 * lanes(Qraise, clear bits). */
static void fastldp_md_ue_rerandomize_rows(uint64_t k0, uint64_t k1, const uint8_t *perm,
                                           const uint64_t *valid, int64_t R, uint64_t Qkeep,
                                           uint64_t Qraise, int64_t r0, int64_t r1,
                                           uint8_t *out)
{
    int64_t r, w, W = (R + 7) >> 3;
    int low_keep = fastldp_lowest_bit(Qkeep), low_raise = fastldp_lowest_bit(Qraise);
    fastldp_md_stream st;
    for (r = r0; r < r1; ++r) {
        const uint8_t *pr = perm + r * R;
        uint8_t *o = out + r * R;
        fastldp_md_init(&st, k0, k1, (uint64_t)r);
        for (w = 0; w < W; ++w) {
            uint64_t bits = fastldp_load_word(pr, w, R);
            uint64_t kept = fastldp_md_lanes(&st, Qkeep, low_keep, bits & valid[w]);
            uint64_t raised = fastldp_md_lanes(&st, Qraise, low_raise, ~bits & valid[w]);
            fastldp_store_word(o, w, R, kept | raised);
        }
    }
}

/* The longitudinal SMP's instantaneous round of its unary rows (index, part, zeros): the
 * part's set bits kept at Qkeep, its clear bits raised at Qraise, per 64-bit word of the
 * part (lanes at the part's k_s bits). Returns the first row naming no attribute, or -1. */
static int64_t fastldp_md_smp_ue_rerandomize_rows(uint64_t k0, uint64_t k1, const uint8_t *perm,
                                                  int64_t R, int64_t A, const int64_t *k,
                                                  uint64_t Qkeep, uint64_t Qraise, int64_t r0,
                                                  int64_t r1, uint8_t *out)
{
    int64_t r, w;
    int low_keep = fastldp_lowest_bit(Qkeep), low_raise = fastldp_lowest_bit(Qraise);
    fastldp_md_stream st;
    for (r = r0; r < r1; ++r) {
        const uint8_t *pr = perm + r * R;
        uint8_t *o = out + r * R;
        int64_t s = (int64_t)pr[0] | ((int64_t)pr[1] << 8), ks, nb, W;
        if (s >= A) return r;
        ks = k[s];
        nb = (ks + 7) >> 3;
        W = (ks + 63) >> 6;
        fastldp_md_init(&st, k0, k1, (uint64_t)r);
        o[0] = pr[0];
        o[1] = pr[1];
        for (w = 0; w < W; ++w) {
            uint64_t need = (w == W - 1 && (ks & 63)) ? (((uint64_t)1) << (ks & 63)) - 1
                                                      : ~(uint64_t)0;
            uint64_t bits = fastldp_load_word(pr + 2, w, nb);
            uint64_t kept = fastldp_md_lanes(&st, Qkeep, low_keep, bits & need);
            uint64_t raised = fastldp_md_lanes(&st, Qraise, low_raise, ~bits & need);
            fastldp_store_word(o + 2, w, nb, kept | raised);
        }
        if (R > 2 + nb) memset(o + 2 + nb, 0, (size_t)(R - 2 - nb));
    }
    return -1;
}

/* SMP unary reports: rows of R = 2 + max_j ceil(k_j / 8) bytes. given: NULL (the attribute
 * of each row is drawn) or the attribute of each row (longitudinal SMP: its memoized one). */
static int64_t fastldp_md_smp_ue_rows(uint64_t k0, uint64_t k1, const int64_t *x, int64_t A,
                                      const int64_t *k, const double *p, int64_t R, uint64_t Q,
                                      const int64_t *given, int64_t r0, int64_t r1, uint8_t *out)
{
    int64_t r, w;
    int low = fastldp_lowest_bit(Q);
    fastldp_md_stream st;
    for (r = r0; r < r1; ++r) {
        const int64_t *row = x + r * A;
        uint8_t *o = out + r * R;
        int64_t s, ks, nb, W;
        if (!fastldp_md_record_ok(row, A, k)) return r;
        if (given && (uint64_t)given[r] >= (uint64_t)A) return r;
        fastldp_md_init(&st, k0, k1, (uint64_t)r);
        s = given ? given[r] : fastldp_md_bounded(&st, (uint64_t)A);
        ks = k[s];
        nb = (ks + 7) >> 3;
        W = (ks + 63) >> 6;
        o[0] = (uint8_t)(s & 0xFF);
        o[1] = (uint8_t)(s >> 8);
        for (w = 0; w < W; ++w) {
            uint64_t need = (w == W - 1 && (ks & 63)) ? (((uint64_t)1) << (ks & 63)) - 1
                                                      : ~(uint64_t)0;
            fastldp_store_word(o + 2, w, nb, fastldp_md_lanes(&st, Q, low, need));
        }
        if (R > 2 + nb) memset(o + 2 + nb, 0, (size_t)(R - 2 - nb));
        fastldp_md_set_bit(o + 2, row[s], fastldp_md_coin(&st, p[s]));
    }
    return -1;
}

/* Server, symbol reports side by side (SPL, RSpFD GRR): hits[off[j] + y_j] += 1. */
static int64_t fastldp_md_count_symbols(const int64_t *y, int64_t A, const int64_t *k,
                                        const int64_t *off, int64_t r0, int64_t r1,
                                        int64_t *hits)
{
    int64_t r, j;
    for (r = r0; r < r1; ++r) {
        const int64_t *row = y + r * A;
        if (!fastldp_md_record_ok(row, A, k)) return r;
        for (j = 0; j < A; ++j) hits[off[j] + row[j]] += 1;
    }
    return -1;
}

/* Server, SMP symbol reports (s, y): hits[off[s] + y] += 1, about[s] += 1. */
static int64_t fastldp_md_count_smp_symbols(const int64_t *y, int64_t A, const int64_t *k,
                                            const int64_t *off, int64_t r0, int64_t r1,
                                            int64_t *hits, int64_t *about)
{
    int64_t r;
    for (r = r0; r < r1; ++r) {
        int64_t s = y[2 * r], v = y[2 * r + 1];
        if ((uint64_t)s >= (uint64_t)A || (uint64_t)v >= (uint64_t)k[s]) return r;
        hits[off[s] + v] += 1;
        about[s] += 1;
    }
    return -1;
}

/* Server, SMP unary reports: index, part s's bits (padding 0), zero bytes after. Every bit
 * of part s's bytes is added (the padding's zeros too), so hits must have 8 writable
 * entries after its last attribute's values. */
static int64_t fastldp_md_count_smp_bits(const uint8_t *y, int64_t R, int64_t A,
                                         const int64_t *k, const int64_t *off, int64_t r0,
                                         int64_t r1, int64_t *hits, int64_t *about)
{
    int64_t r, b;
    for (r = r0; r < r1; ++r) {
        const uint8_t *row = y + r * R;
        int64_t s = (int64_t)row[0] | ((int64_t)row[1] << 8), ks, nb;
        uint8_t tail = 0;
        if (s >= A) return r;
        ks = k[s];
        nb = (ks + 7) >> 3;
        for (b = 2 + nb; b < R; ++b) tail |= row[b];
        if (tail) return r;
        if ((ks & 7) && (row[1 + nb] >> (ks & 7))) return r;
        about[s] += 1;
        for (b = 0; b < nb; ++b) {
            /* eight adds, no branch on the bits (a loop over the set bits mispredicts) */
            unsigned int byte = row[2 + b], bit;
            int64_t *h = hits + off[s] + 8 * b;
            for (bit = 0; bit < 8; ++bit) h[bit] += (byte >> bit) & 1;
        }
    }
    return -1;
}

/* The first `count` words of record `row`'s stream (for the tests' naive twins). */
static void fastldp_md_stream_words(uint64_t k0, uint64_t k1, uint64_t row, int64_t count,
                                    uint64_t *out)
{
    fastldp_md_stream st;
    int64_t i;
    fastldp_md_init(&st, k0, k1, row);
    for (i = 0; i < count; ++i) out[i] = fastldp_ue_next(&st);
}

#endif
