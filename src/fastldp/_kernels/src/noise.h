/*
 * Exact integer noise: Bernoulli(exp(-a/b)), the discrete Laplace of scale
 * t/s and the discrete Gaussian of variance parameter p/q, by Canonne,
 * Kamath and Steinke, "The Discrete Gaussian for Differential Privacy"
 * (NeurIPS 2020), Algorithms 1-3. Every decision compares integers; there is
 * no floating point anywhere in this file.
 *
 * Randomness: output block b (BLOCK samples, fixed by the caller) reads the
 * Philox4x64-10 stream with key (key, b) and counter (c, FASTLDP_STREAM_NOISE,
 * 0, 0), c = 0, 1, 2, ...: the samples of a block depend on (key, b) only,
 * never on which thread runs it. Words are consumed three ways, each exact:
 *   - 64-bit words for uniform integers below n > 2^32;
 *   - 32-bit halves of words for uniform integers below n <= 2^32;
 *   - single bits, LSB first, for fair coins and powers of two;
 * a uniform integer below n is Lemire's multiply-and-reject ("Fast random
 * integer generation in an interval", ACM TOMACS 2019), exactly uniform.
 *
 * Overflow: t, s, a, b, p, q are below 2^63 (the Python side checks it, and
 * 2 p q t^2 < 2^63 for the Gaussian). Intermediate products that can exceed
 * 64 bits (t V in the Laplace, (|Y| q t - p)^2 in the Gaussian) are held in
 * 128 bits through fastldp_mul64x64_128 (portable.h). A sample whose exact
 * value lies outside int64 is not representable: the block then returns
 * FASTLDP_NOISE_OVERFLOW and the caller raises (probability below
 * exp(-2^62 s / t) for the Laplace).
 */
#ifndef FASTLDP_NOISE_H
#define FASTLDP_NOISE_H

#include <stdint.h>
#include "portable.h"
#include "philox.h"

/* Stream tag of the exact samplers (philox.h's tags are 0-3). */
#define FASTLDP_STREAM_NOISE 4ULL

#define FASTLDP_NOISE_OK 0
#define FASTLDP_NOISE_OVERFLOW 1

typedef struct {
    uint64_t k0, k1;     /* Philox key: (caller key, block index) */
    uint64_t ctr;        /* counter of the next Philox block */
    uint64_t w[4];       /* the current block's words */
    int next;            /* index of the next unread word (4: none left) */
    uint64_t bits;       /* unread bits of a word taken for coins, LSB first */
    int nbits;
    uint32_t half;       /* the unread high half of a word taken for 32-bit draws */
    int has_half;
} fastldp_noise_stream;

static inline void fastldp_noise_init(fastldp_noise_stream *st, uint64_t key, uint64_t block)
{
    st->k0 = key;
    st->k1 = block;
    st->ctr = 0;
    st->next = 4;
    st->bits = 0;
    st->nbits = 0;
    st->half = 0;
    st->has_half = 0;
}

static inline uint64_t fastldp_noise_word64(fastldp_noise_stream *st)
{
    if (st->next == 4) {
        fastldp_philox_block blk =
            fastldp_philox4x64_10(st->ctr, FASTLDP_STREAM_NOISE, 0, 0, st->k0, st->k1);
        st->ctr++;
        st->w[0] = blk.v[0];
        st->w[1] = blk.v[1];
        st->w[2] = blk.v[2];
        st->w[3] = blk.v[3];
        st->next = 0;
    }
    return st->w[st->next++];
}

static inline uint32_t fastldp_noise_word32(fastldp_noise_stream *st)
{
    uint64_t x;
    if (st->has_half) {
        st->has_half = 0;
        return st->half;
    }
    x = fastldp_noise_word64(st);
    st->half = (uint32_t)(x >> 32);
    st->has_half = 1;
    return (uint32_t)x;
}

/* j (1 <= j <= 32) uniform bits. Leftover bits too few for j are dropped:
 * they are independent of everything drawn after, so nothing is biased. */
static inline uint64_t fastldp_noise_bits(fastldp_noise_stream *st, int j)
{
    uint64_t r;
    if (st->nbits < j) {
        st->bits = fastldp_noise_word64(st);
        st->nbits = 64;
    }
    r = st->bits & ((1ULL << j) - 1ULL);
    st->bits >>= j;
    st->nbits -= j;
    return r;
}

/* A uniform integer in [0, n), n >= 1. */
static inline uint64_t fastldp_noise_below(fastldp_noise_stream *st, uint64_t n)
{
    if (n <= 1ULL)
        return 0;
    if ((n & (n - 1ULL)) == 0 && n <= (1ULL << 32)) {
        if (n == (1ULL << 32))
            return (uint64_t)fastldp_noise_word32(st);
        return fastldp_noise_bits(st, fastldp_ctz32((uint32_t)n));
    }
    if (n <= (1ULL << 32)) {
        /* x * n / 2^32 for a 32-bit x; the low halves below (2^32 - n) mod n are
         * rejected, leaving every value with exactly floor(2^32 / n) preimages */
        uint64_t m = (uint64_t)fastldp_noise_word32(st) * n;
        uint32_t low = (uint32_t)m;
        if (low < n) {
            uint32_t threshold = (uint32_t)(((1ULL << 32) - n) % n);
            while (low < threshold) {
                m = (uint64_t)fastldp_noise_word32(st) * n;
                low = (uint32_t)m;
            }
        }
        return m >> 32;
    } else {
        uint64_t hi;
        uint64_t low = fastldp_mul64x64_128(fastldp_noise_word64(st), n, &hi);
        if (low < n) {
            uint64_t threshold = (0ULL - n) % n;  /* 2^64 mod n */
            while (low < threshold)
                low = fastldp_mul64x64_128(fastldp_noise_word64(st), n, &hi);
        }
        return hi;
    }
}

/* Bernoulli(a / d) for integers a >= 0, d >= 1: U < a for U uniform in [0, d). */
static inline int fastldp_noise_bernoulli(fastldp_noise_stream *st, uint64_t a, uint64_t d)
{
    if (a == 0)
        return 0;
    if (a >= d)
        return 1;
    return fastldp_noise_below(st, d) < a;
}

/* Bernoulli(exp(-a / b)) for 0 <= a <= b, b >= 1 (CKS Algorithm 1, gamma <= 1):
 * A_k ~ Bernoulli(a / (b k)) until the first A_K = 0; P[K > k] = gamma^k / k!,
 * so P[K odd] = exp(-gamma). When b k would overflow, Bernoulli(a / (b k)) is
 * drawn as Bernoulli(a / b) AND Bernoulli(1 / k), the same probability. */
static inline int fastldp_noise_bexp_frac(fastldp_noise_stream *st, uint64_t a, uint64_t b)
{
    uint64_t k = 1, hi, bk;
    if (a == 0)
        return 1;
    for (;;) {
        int accept;
        bk = fastldp_mul64x64_128(b, k, &hi);
        if (hi == 0)
            accept = fastldp_noise_bernoulli(st, a, bk);
        else
            accept = fastldp_noise_bernoulli(st, a, b) && fastldp_noise_below(st, k) == 0;
        if (!accept)
            break;
        k++;
    }
    return (int)(k & 1ULL);
}

/* Bernoulli(exp(-1)). */
static inline int fastldp_noise_bexp_one(fastldp_noise_stream *st)
{
    /* the same loop for a = b = 1: A_1 = 1 always, A_k = [U_k == 0], U_k uniform below k */
    uint64_t k = 2;
    while (fastldp_noise_below(st, k) == 0)
        k++;
    return (int)(k & 1ULL);
}

/* Bernoulli(exp(-a / b)) for any a >= 0, b >= 1: floor(a / b) Bernoulli(exp(-1))
 * draws and one Bernoulli(exp(-(a mod b) / b)) must all be 1. */
static inline int fastldp_noise_bexp(fastldp_noise_stream *st, uint64_t a, uint64_t b)
{
    uint64_t whole = a / b, i;
    for (i = 0; i < whole; ++i)
        if (!fastldp_noise_bexp_one(st))
            return 0;
    return fastldp_noise_bexp_frac(st, a % b, b);
}

/* floor((hi 2^64 + lo) / d) for hi < d (so the quotient fits in 64 bits):
 * restoring long division, one quotient bit per step (the rare path). */
static inline uint64_t fastldp_noise_div128(uint64_t hi, uint64_t lo, uint64_t d)
{
    uint64_t q = 0;
    int i;
    for (i = 0; i < 64; ++i) {
        uint64_t carry = hi >> 63;
        hi = (hi << 1) | (lo >> 63);
        lo <<= 1;
        q <<= 1;
        if (carry || hi >= d) {
            hi -= d;  /* the true remainder 2r + bit - d < d fits: wraparound is exact */
            q |= 1ULL;
        }
    }
    return q;
}

/* One discrete Laplace sample of scale t / s (CKS Algorithm 2). */
static inline int fastldp_noise_laplace_one(fastldp_noise_stream *st, uint64_t t, uint64_t s,
                                            int64_t *out)
{
    for (;;) {
        uint64_t u, v = 0, hi, lo, y;
        int negative;
        /* U uniform in [0, t), kept with probability exp(-U / t) */
        u = fastldp_noise_below(st, t);
        if (!fastldp_noise_bexp_frac(st, u, t))
            continue;
        /* V geometric: P[V >= v] = exp(-v) */
        while (fastldp_noise_bexp_one(st))
            v++;
        /* X = U + t V geometric with ratio exp(-1 / t); Y = floor(X / s) */
        lo = fastldp_mul64x64_128(t, v, &hi);
        lo += u;
        if (lo < u)
            hi++;
        if (hi == 0)
            y = s == 1 ? lo : lo / s;
        else if (hi < s)
            y = fastldp_noise_div128(hi, lo, s);
        else
            return FASTLDP_NOISE_OVERFLOW;
        if (y > (uint64_t)INT64_MAX)
            return FASTLDP_NOISE_OVERFLOW;
        negative = (int)fastldp_noise_bits(st, 1);
        if (negative && y == 0)
            continue;  /* -0 rejected: 0 would otherwise come twice as often */
        *out = negative ? -(int64_t)y : (int64_t)y;
        return FASTLDP_NOISE_OK;
    }
}

/* One discrete Gaussian sample of variance parameter p / q (CKS Algorithm 3),
 * with t = floor(sqrt(p / q)) + 1 and D = 2 p q t^2 < 2^63 given. */
static inline int fastldp_noise_gaussian_one(fastldp_noise_stream *st, uint64_t p, uint64_t q,
                                             uint64_t t, uint64_t D, int64_t *out)
{
    uint64_t qt = q * t;  /* < D < 2^63 */
    for (;;) {
        int64_t y;
        uint64_t a, hi, lo, dhi, dlo, sq_hi, sq_lo, whole;
        int status = fastldp_noise_laplace_one(st, t, 1, &y);
        if (status != FASTLDP_NOISE_OK)
            return status;
        /* gamma = (|y| - p / (q t))^2 / (2 p / q) = d^2 / D with d = |y| q t - p */
        a = y < 0 ? (uint64_t)0 - (uint64_t)y : (uint64_t)y;
        lo = fastldp_mul64x64_128(a, qt, &hi);
        if (hi == 0 && lo < p) {
            dhi = 0;
            dlo = p - lo;
        } else {
            dlo = lo - p;
            dhi = hi - (lo < p ? 1ULL : 0ULL);
        }
        if (dhi != 0) {
            /* d >= 2^64: gamma >= 2^128 / 2^63 = 2^65, so every one of the
             * first 2^63 Bernoulli(exp(-1)) draws lies within floor(gamma);
             * surviving them all (probability exp(-2^63)) is reported as an
             * overflow instead of sampled */
            for (whole = 0; whole < (1ULL << 63); ++whole)
                if (!fastldp_noise_bexp_one(st))
                    break;
            if (whole == (1ULL << 63))
                return FASTLDP_NOISE_OVERFLOW;
            continue;
        }
        sq_lo = fastldp_mul64x64_128(dlo, dlo, &sq_hi);
        /* floor(d^2 / D) draws of Bernoulli(exp(-1)), subtracting D each time
         * (no division: the loop ends at the first failure, after 1.6 draws on
         * average), then Bernoulli(exp(-(d^2 mod D) / D)) */
        {
            int accept = 1;
            while (sq_hi != 0 || sq_lo >= D) {
                if (sq_lo < D)
                    sq_hi--;
                sq_lo -= D;
                if (!fastldp_noise_bexp_one(st)) {
                    accept = 0;
                    break;
                }
            }
            if (accept && fastldp_noise_bexp_frac(st, sq_lo, D)) {
                *out = y;
                return FASTLDP_NOISE_OK;
            }
        }
    }
}

/* The m samples of output block `block` (m <= the caller's block size); the
 * number of Philox blocks they read goes to *philox_blocks unless it is NULL. */
static inline int fastldp_noise_laplace_block(uint64_t key, uint64_t block, uint64_t t,
                                              uint64_t s, int64_t *out, int64_t m,
                                              uint64_t *philox_blocks)
{
    fastldp_noise_stream st;
    int64_t i;
    fastldp_noise_init(&st, key, block);
    for (i = 0; i < m; ++i)
        if (fastldp_noise_laplace_one(&st, t, s, out + i) != FASTLDP_NOISE_OK)
            return FASTLDP_NOISE_OVERFLOW;
    if (philox_blocks != NULL)
        *philox_blocks = st.ctr;
    return FASTLDP_NOISE_OK;
}

static inline int fastldp_noise_gaussian_block(uint64_t key, uint64_t block, uint64_t p,
                                               uint64_t q, uint64_t t, uint64_t D, int64_t *out,
                                               int64_t m)
{
    fastldp_noise_stream st;
    int64_t i;
    fastldp_noise_init(&st, key, block);
    for (i = 0; i < m; ++i)
        if (fastldp_noise_gaussian_one(&st, p, q, t, D, out + i) != FASTLDP_NOISE_OK)
            return FASTLDP_NOISE_OVERFLOW;
    return FASTLDP_NOISE_OK;
}

static inline int fastldp_noise_bexp_block(uint64_t key, uint64_t block, uint64_t a, uint64_t b,
                                           uint8_t *out, int64_t m)
{
    fastldp_noise_stream st;
    int64_t i;
    fastldp_noise_init(&st, key, block);
    for (i = 0; i < m; ++i)
        out[i] = (uint8_t)fastldp_noise_bexp(&st, a, b);
    return FASTLDP_NOISE_OK;
}

#endif
