/*
 * Exact integer (fixed-point) JPRS global sketch:
 *
 *   out[e] = sum_i w_i * R_i(e),   w_i an int64 with |w_i| <= 2^32,
 *
 * for every e in [0, p), in int64. With n <= 2^30 identities every partial
 * sum is below 2^62 in magnitude, so nothing overflows and, integer addition
 * being associative, the result is the same for any chunking, thread count
 * or order of the additions - no ordered reduction is needed.
 *
 * Two inner loops, as in the float kernel (jprs_sketch.h, jprs_count.h):
 *
 * - equal magnitudes (every |w_i| = c): bit-sliced sign counts
 *   (fastldp_add16 of jprs_count.h), then c * (n - 2 * count);
 * - general weights: sixteen identities per group, two 256-entry int64
 *   tables of signed weight sums (identities 0-7 and 8-15 of the group).
 *   The sixteen identities' sign bits of one position form a 16-bit index
 *   whose low byte selects in the first table and high byte in the second.
 *
 * Why sixteen: SSE2's pmovmskb collects the top bit of each of the sixteen
 * bytes of a vector. Once the group's sixteen Philox words (one word = 64
 * positions of one identity) are transposed into eight vectors whose byte j
 * is byte k of identity j's word, one pmovmskb gives the sixteen-identity
 * index of one position and one byte-wise doubling moves to the next: two
 * instructions per sixteen sign bits, against some eighteen per sixty-four
 * for the 8 x 8 bit transposes the float kernel uses. Without
 * SSE2 (or with FASTLDP_PORTABLE, so that CI tests it) the same indices come
 * from those bit transposes in plain C; results are identical.
 *
 * Why tiles: a tile of FASTLDP_FIXED_TILE_GROUPS groups keeps its tables
 * (4 KiB per group) in L1 while every position's accumulator passes through
 * registers once per tile instead of once per group.
 *
 * Where the CPU has AVX-512 F/BW/VBMI, GFNI and BMI2 (checked at run time,
 * SIMD level 3), general weights take fastldp_fixed_table_range_vbmi
 * instead: sixteen-entry tables of four identities in vector registers,
 * looked up eight positions at a time, with the next block's Philox rounds
 * interleaved between the lookups; for the opt-in codebook,
 * fastldp_fixed_table_range_q4x32 (the words straight from the SIMD
 * generator). Same integers (tests compare every path with a naive twin).
 */
#ifndef FASTLDP_JPRS_FIXED_H
#define FASTLDP_JPRS_FIXED_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "philox.h"
#include "portable.h"
#include "jprs_sketch.h"
#include "jprs_count.h"

#if !defined(FASTLDP_PORTABLE) && (defined(__SSE2__) || defined(_M_X64) || \
                                   (defined(_M_IX86_FP) && _M_IX86_FP >= 2))
#define FASTLDP_FIXED_SSE2 1
#include <emmintrin.h>
#else
#define FASTLDP_FIXED_SSE2 0
#endif

/* Groups of sixteen identities per tile: 8 * 4 KiB of tables fit a 48 KiB L1
 * (overridable at build time for tuning). */
#ifndef FASTLDP_FIXED_TILE_GROUPS
#define FASTLDP_FIXED_TILE_GROUPS 8
#endif
#define FASTLDP_FIXED_TILE (16 * FASTLDP_FIXED_TILE_GROUPS)

/* Identities per tile of the AVX-512 path (a multiple of 8): its tables
 * take 32 bytes per identity. */
#ifndef FASTLDP_FIXED_VTILE
#define FASTLDP_FIXED_VTILE 128
#endif
#define FASTLDP_FIXED_MAXTILE \
    (FASTLDP_FIXED_VTILE > FASTLDP_FIXED_TILE ? FASTLDP_FIXED_VTILE : FASTLDP_FIXED_TILE)

/* Where the identities and weights come from; identities == NULL means
 * identity_i = first_identity + i. */
typedef struct {
    uint64_t seed;
    int codebook; /* FASTLDP_CODEBOOK_* of philox.h */
    const uint64_t *identities;
    uint64_t first_identity;
    const int64_t *weights;
    int64_t p;
    /* set by the entry points, never by their callers: the +-1 signs of
     * fastldp_fixed_sign_sketch (weights is then NULL), or NULL */
    const int8_t *signs;
} fastldp_fixed_source;

static inline uint64_t fastldp_fixed_identity(const fastldp_fixed_source *src, int64_t i)
{
    return src->identities ? src->identities[i] : src->first_identity + (uint64_t)i;
}

/* Whether w_i < 0 (the counting paths read only the sign). */
static inline int fastldp_fixed_negative(const fastldp_fixed_source *src, int64_t i)
{
    return src->signs ? src->signs[i] < 0 : src->weights[i] < 0;
}

/* table[b] = sum_j w[j] * (bit j of b ? -1 : +1). Every entry is a signed sum
 * of the eight weights, so |table[b]| <= 8 * 2^32: no overflow. Built by
 * doubling (the entries with bit j set are those without it, minus 2 w[j]):
 * independent, vectorizable subtractions instead of one chain through memory. */
static inline void fastldp_fixed_table8(const int64_t w[8], int64_t table[256])
{
    int64_t total = 0;
    int j, b;
    for (j = 0; j < 8; ++j) total += w[j];
    table[0] = total;
    for (j = 0; j < 8; ++j) {
        int step = 1 << j;
        int64_t d = 2 * w[j];
        for (b = 0; b < step; ++b) table[step + b] = table[b] - d;
    }
}

/* Per-thread scratch of the table path, on the heap: 37 KiB would crowd the
 * small stacks some OpenMP runtimes give their worker threads. */
typedef struct {
    int64_t tables[FASTLDP_FIXED_TILE_GROUPS][2][256];
    /* words[q][m]: word q of tile member m's current Philox block, so a
     * group's sixteen words of one q lie side by side for the transpose */
    uint64_t words[4][FASTLDP_FIXED_TILE];
    uint64_t ids[FASTLDP_FIXED_MAXTILE];
    fastldp_philox_block blk[FASTLDP_FIXED_MAXTILE];
    /* the AVX-512 path's tables: 16 signed sums per four identities */
    int64_t quads[FASTLDP_FIXED_VTILE / 4][16];
    /* its words, double-buffered: block b + 1's are written while block b's
     * are summed */
    uint64_t next[2][4][FASTLDP_FIXED_VTILE];
    /* the opt-in codebook's words on that path, double-buffered, in the
     * generator's lane order: per sixteen identities, its four lo vectors
     * then its four hi vectors (fastldp_fixed_q4x32_group16) */
    uint64_t gen4x32[2][FASTLDP_FIXED_VTILE / 16][64];
} fastldp_fixed_scratch;

#if FASTLDP_FIXED_SSE2
/* v[k] byte j = byte k of w[j], for the sixteen words w[0..15]: a 16 x 8 byte
 * transpose in four unpack stages. */
static inline void fastldp_fixed_transpose16(const uint64_t *w, __m128i v[8])
{
    __m128i a[8], b[8], c[8];
    int r;
    for (r = 0; r < 8; ++r) {
        a[r] = _mm_unpacklo_epi8(_mm_loadl_epi64((const __m128i *)(w + 2 * r)),
                                 _mm_loadl_epi64((const __m128i *)(w + 2 * r + 1)));
    }
    /* a[r]: byte k of words 2r, 2r+1 interleaved */
    for (r = 0; r < 4; ++r) {
        b[2 * r] = _mm_unpacklo_epi16(a[2 * r], a[2 * r + 1]);     /* bytes 0-3 of 4r..4r+3 */
        b[2 * r + 1] = _mm_unpackhi_epi16(a[2 * r], a[2 * r + 1]); /* bytes 4-7 */
    }
    for (r = 0; r < 2; ++r) {
        /* words 8r..8r+7: (b[4r], b[4r+2]) hold bytes 0-3, (b[4r+1], b[4r+3]) 4-7 */
        c[4 * r + 0] = _mm_unpacklo_epi32(b[4 * r], b[4 * r + 2]);     /* bytes 0, 1 */
        c[4 * r + 1] = _mm_unpackhi_epi32(b[4 * r], b[4 * r + 2]);     /* bytes 2, 3 */
        c[4 * r + 2] = _mm_unpacklo_epi32(b[4 * r + 1], b[4 * r + 3]); /* bytes 4, 5 */
        c[4 * r + 3] = _mm_unpackhi_epi32(b[4 * r + 1], b[4 * r + 3]); /* bytes 6, 7 */
    }
    for (r = 0; r < 4; ++r) {
        v[2 * r] = _mm_unpacklo_epi64(c[r], c[4 + r]);
        v[2 * r + 1] = _mm_unpackhi_epi64(c[r], c[4 + r]);
    }
}

/* The positions' indices of one 64-position word, for every group. */
typedef struct {
    __m128i v[FASTLDP_FIXED_TILE_GROUPS][8];
} fastldp_fixed_index;

static inline void fastldp_fixed_prepare(
    const uint64_t *words_q, int ngroups, fastldp_fixed_index *ix)
{
    int g;
    for (g = 0; g < ngroups; ++g) fastldp_fixed_transpose16(words_q + 16 * g, ix->v[g]);
}

/* o[t] += the tile's sum at position 8k + t, t = 0..7. */
static inline void fastldp_fixed_lookup8(
    int64_t *o, const fastldp_fixed_index *ix, int k, int ngroups,
    const int64_t (*tables)[2][256])
{
    int64_t a0 = o[0], a1 = o[1], a2 = o[2], a3 = o[3];
    int64_t a4 = o[4], a5 = o[5], a6 = o[6], a7 = o[7];
    int g;
    for (g = 0; g < ngroups; ++g) {
        const int64_t *lo = tables[g][0];
        const int64_t *hi = tables[g][1];
        __m128i v = ix->v[g][k];
        unsigned m;
        /* pmovmskb takes the top bit of each byte, position 8k + 7; doubling
         * the bytes brings up the next position down */
#define FASTLDP_FIXED_STEP(acc)                   \
    m = (unsigned)_mm_movemask_epi8(v);           \
    acc += lo[m & 255u] + hi[m >> 8];             \
    v = _mm_add_epi8(v, v);
        FASTLDP_FIXED_STEP(a7)
        FASTLDP_FIXED_STEP(a6)
        FASTLDP_FIXED_STEP(a5)
        FASTLDP_FIXED_STEP(a4)
        FASTLDP_FIXED_STEP(a3)
        FASTLDP_FIXED_STEP(a2)
        FASTLDP_FIXED_STEP(a1)
        FASTLDP_FIXED_STEP(a0)
#undef FASTLDP_FIXED_STEP
    }
    o[0] = a0; o[1] = a1; o[2] = a2; o[3] = a3;
    o[4] = a4; o[5] = a5; o[6] = a6; o[7] = a7;
}
#else
/* Plain C: y[g][h][k] byte t is the index of position 8k + t in table h of
 * group g, from the 8 x 8 byte and bit transposes of jprs_sketch.h. */
typedef struct {
    uint64_t y[FASTLDP_FIXED_TILE_GROUPS][2][8];
} fastldp_fixed_index;

static inline void fastldp_fixed_prepare(
    const uint64_t *words_q, int ngroups, fastldp_fixed_index *ix)
{
    int g, h, j;
    for (g = 0; g < ngroups; ++g) {
        for (h = 0; h < 2; ++h) {
            uint64_t *y = ix->y[g][h];
            for (j = 0; j < 8; ++j) y[j] = words_q[16 * g + 8 * h + j];
            fastldp_transpose_bytes8x8(y);
            for (j = 0; j < 8; ++j) y[j] = fastldp_transpose_bits8x8(y[j]);
        }
    }
}

static inline void fastldp_fixed_lookup8(
    int64_t *o, const fastldp_fixed_index *ix, int k, int ngroups,
    const int64_t (*tables)[2][256])
{
    int64_t acc[8];
    int g, t;
    for (t = 0; t < 8; ++t) acc[t] = o[t];
    for (g = 0; g < ngroups; ++g) {
        const int64_t *lo = tables[g][0];
        const int64_t *hi = tables[g][1];
        uint64_t ylo = ix->y[g][0][k], yhi = ix->y[g][1][k];
        for (t = 0; t < 8; ++t) {
            acc[t] += lo[(ylo >> (8 * t)) & 255u] + hi[(yhi >> (8 * t)) & 255u];
        }
    }
    for (t = 0; t < 8; ++t) o[t] = acc[t];
}
#endif

/* part[e] += sum over identities [start, stop) of w_i * R_i(e) for e below
 * p rounded up to a multiple of 64: part is padded to whole blocks, so every
 * 64-position word is summed in full without bounds checks (the sums past p
 * are simply not used).
 *
 * (Generating the next block's Philox words in slices between the table
 * lookups, for the out-of-order core to overlap the multiplier-bound and the
 * load-bound work, was tried and measured no faster on a Xeon with AVX-512:
 * both parts seem to be limited by the instruction issue width. The AVX-512
 * path below does overlap them: its lookups run in the vector units.) */
static inline void fastldp_fixed_table_range(
    const fastldp_fixed_source *src, int64_t start, int64_t stop, int64_t *part,
    fastldp_fixed_scratch *ws, int level)
{
    int64_t p = src->p;
    int64_t nblocks = (p + 255) >> 8;
    int64_t t0, b;
    int g, j, q, k, m;
    fastldp_fixed_index ix;

    for (t0 = start; t0 < stop; t0 += FASTLDP_FIXED_TILE) {
        int members = (int)(stop - t0 < FASTLDP_FIXED_TILE ? stop - t0 : FASTLDP_FIXED_TILE);
        int ngroups = (members + 15) / 16;
        int padded = 16 * ngroups;
        for (g = 0; g < ngroups; ++g) {
            int64_t w[16];
            for (j = 0; j < 16; ++j) {
                m = 16 * g + j;
                /* padding members weigh 0: whatever their bits, they add 0 */
                w[j] = m < members ? src->weights[t0 + m] : 0;
                ws->ids[m] = m < members ? fastldp_fixed_identity(src, t0 + m) : 0;
            }
            fastldp_fixed_table8(w, ws->tables[g][0]);
            fastldp_fixed_table8(w + 8, ws->tables[g][1]);
        }
        for (m = members; m < padded; ++m) {
            for (q = 0; q < 4; ++q) ws->words[q][m] = 0;
        }
        for (b = 0; b < nblocks; ++b) {
            fastldp_pair_blocks(src->codebook, src->seed, ws->ids, members, (uint64_t)b, ws->blk,
                                level);
            for (m = 0; m < members; ++m) {
                ws->words[0][m] = ws->blk[m].v[0];
                ws->words[1][m] = ws->blk[m].v[1];
                ws->words[2][m] = ws->blk[m].v[2];
                ws->words[3][m] = ws->blk[m].v[3];
            }
            for (q = 0; q < 4; ++q) {
                int64_t *o = part + (b << 8) + 64 * q;
                if ((b << 8) + 64 * q >= p) break;
                fastldp_fixed_prepare(ws->words[q], ngroups, &ix);
                for (k = 0; k < 8; ++k) {
                    fastldp_fixed_lookup8(o + 8 * k, &ix, k, ngroups,
                                          (const int64_t (*)[2][256])ws->tables);
                }
            }
        }
    }
}

#if FASTLDP_HAVE_AVX2_PATH
#define FASTLDP_FIXED_VBMI 1
/* Whether the AVX-512 table path (AVX-512 F/BW/VBMI, GFNI, and BMI2's mulx
 * for the Philox products) runs at SIMD `level`: a run-time CPU check, never
 * a build flag. */
static inline int fastldp_fixed_vbmi_ok(int level)
{
    return level >= 3 && __builtin_cpu_supports("avx512bw") &&
           __builtin_cpu_supports("avx512vbmi") && __builtin_cpu_supports("gfni") &&
           __builtin_cpu_supports("bmi2");
}

/* table[b] = sum_{j<4} w[j] * (bit j of b ? -1 : +1), b = 0..15. */
static inline void fastldp_fixed_table4(const int64_t w[4], int64_t table[16])
{
    int j, b;
    table[0] = w[0] + w[1] + w[2] + w[3];
    for (j = 0; j < 4; ++j) {
        int step = 1 << j;
        int64_t d = 2 * w[j];
        for (b = 0; b < step; ++b) table[step + b] = table[b] - d;
    }
}

/* Block b (philox4x32-10) of the sixteen identities ids[0..15], stored as
 * the generator leaves it (fastldp_philox4x32_q_avx512, the lanes of
 * fastldp_philox4x32_blocks16_avx512: lane 2i + h of vector s runs
 * sub-block h of identity 4s + i): dst[8 s ..] = lo[s] (words 0 and 2),
 * dst[32 + 8 s ..] = hi[s] (words 1 and 3). No reordering here: the table
 * loop's byte permute picks each identity's word out of two vectors. */
__attribute__((target("avx512f"), always_inline)) static inline void
fastldp_fixed_q4x32_group16(uint64_t seed, const uint64_t *ids, uint64_t b, uint64_t *dst)
{
    __m512i sub[FASTLDP_PHILOX32Q_STATES], id[FASTLDP_PHILOX32Q_STATES];
    __m512i lo[FASTLDP_PHILOX32Q_STATES], hi[FASTLDP_PHILOX32Q_STATES];
    const __m512i pairs = _mm512_set_epi64(3, 3, 2, 2, 1, 1, 0, 0);
    const long long even = (long long)(2 * b), odd = (long long)(2 * b + 1);
    int s;
    for (s = 0; s < FASTLDP_PHILOX32Q_STATES; ++s) {
        sub[s] = _mm512_set_epi64(odd, even, odd, even, odd, even, odd, even);
        id[s] = _mm512_permutexvar_epi64(
            pairs, _mm512_castsi256_si512(_mm256_loadu_si256((const __m256i *)(ids + 4 * s))));
    }
    fastldp_philox4x32_q_avx512(seed, sub, id, lo, hi);
    for (s = 0; s < FASTLDP_PHILOX32Q_STATES; ++s) {
        _mm512_storeu_si512((void *)(dst + 8 * s), lo[s]);
        _mm512_storeu_si512((void *)(dst + 32 + 8 * s), hi[s]);
    }
}

/* The steps both AVX-512 table paths share, on their locals: the eight
 * accumulators a0..a7 of 64 positions (loaded from and stored to out), and
 * one lookup of the tables (la, lb: identities 0-3; ha, hb: 4-7) by the sign
 * bits e of eight identities at eight positions per lane (vpermt2q reads
 * bits 0-3 of each lane: identities 0-3, then, shifted by 4, identities
 * 4-7, at position 8 l + t). */
#define FASTLDP_FIXED_LOAD8(out)                                                  \
    a0 = _mm512_loadu_si512((const void *)((out) + 0));                           \
    a1 = _mm512_loadu_si512((const void *)((out) + 8));                           \
    a2 = _mm512_loadu_si512((const void *)((out) + 16));                          \
    a3 = _mm512_loadu_si512((const void *)((out) + 24));                          \
    a4 = _mm512_loadu_si512((const void *)((out) + 32));                          \
    a5 = _mm512_loadu_si512((const void *)((out) + 40));                          \
    a6 = _mm512_loadu_si512((const void *)((out) + 48));                          \
    a7 = _mm512_loadu_si512((const void *)((out) + 56));
#define FASTLDP_FIXED_STORE8(out)                                                 \
    _mm512_storeu_si512((void *)((out) + 0), a0);                                 \
    _mm512_storeu_si512((void *)((out) + 8), a1);                                 \
    _mm512_storeu_si512((void *)((out) + 16), a2);                                \
    _mm512_storeu_si512((void *)((out) + 24), a3);                                \
    _mm512_storeu_si512((void *)((out) + 32), a4);                                \
    _mm512_storeu_si512((void *)((out) + 40), a5);                                \
    _mm512_storeu_si512((void *)((out) + 48), a6);                                \
    _mm512_storeu_si512((void *)((out) + 56), a7);
#define FASTLDP_FIXED_LOOKUP(acc, shift)                                          \
    x = _mm512_srli_epi64(e, (shift));                                            \
    acc = _mm512_add_epi64(acc, _mm512_permutex2var_epi64(la, x, lb));            \
    acc = _mm512_add_epi64(acc, _mm512_permutex2var_epi64(ha, _mm512_srli_epi64(x, 4), hb));
#define FASTLDP_FIXED_LOOKUP8                                                     \
    FASTLDP_FIXED_LOOKUP(a0, 0)                                                   \
    FASTLDP_FIXED_LOOKUP(a1, 8)                                                   \
    FASTLDP_FIXED_LOOKUP(a2, 16)                                                  \
    FASTLDP_FIXED_LOOKUP(a3, 24)                                                  \
    FASTLDP_FIXED_LOOKUP(a4, 32)                                                  \
    FASTLDP_FIXED_LOOKUP(a5, 40)                                                  \
    FASTLDP_FIXED_LOOKUP(a6, 48)                                                  \
    FASTLDP_FIXED_LOOKUP(a7, 56)

/* fastldp_fixed_table_range_vbmi for the opt-in codebook (philox4x32-10):
 * the same tables, lookups and lane order of part, with the words taken
 * from the SIMD generator's registers as it leaves them (8 vector stores
 * per sixteen identities and block) instead of through pair-sign blocks
 * (fastldp_pair_blocks' permutes and stores, then a scalar copy into word
 * order). One two-source byte permute (vpermt2b) gathers byte k of eight
 * identities' word q from the two generator vectors that hold it into byte
 * 8 k + 7 - j, which is the single-source vpermb's job on the default path,
 * so the lookups cost the same. Block b + 1 of each sixteen identities is
 * generated inside block b's table loop (at octets 0 and 8 of word
 * q = group mod 4).
 *
 * Where the floor is for this codebook: on Zen 4 (AMD EPYC; loops of 16
 * independent chains) vpmuludq, vpsrlq, vpermt2q/vpermt2b/vpermb and
 * gf2p8affineqb on zmm each issue at one per cycle (vpaddq, vpternlogq
 * about two); vpmuludq and vpsrlq together still one pair per cycle, but
 * vpermt2q beside vpmuludq, vpsrlq or gf2p8affineqb 1.5 to 1.7 cycles per
 * pair: they share pipes. So the generator (the floor) and the lookups do
 * not overlap, unlike the default codebook's scalar generator beside its
 * vector lookups: per 8 identities x 64 positions the lookups take 16
 * vpermt2q and 15 shifts (plus one vpermt2b and one gf2p8affineqb).
 * Measured, n = 128,000, p = 4,096, one thread, CPU time: the lookups
 * alone (the generation left out) 1.99x the floor, this path 2.96x, the sum
 * (3.26x through fastldp_pair_blocks before); the 15 shifts replaced by 16
 * gf2p8affineqb (byte 0 of the unit matrix = 1 << t) measured the same.
 * Moving half of a tile's octets to scalar 256-entry tables in L1 (their
 * indices stored by the vector units, looked up with one qword load per
 * eight positions and shifts, so that the integer units work beside the
 * vector ones) measured slower, not faster: 3.75x with the scalar lookups
 * interleaved one per vector lookup, 4.2x to 5.1x for 6 to 12 scalar
 * octets of 16 looked up in runs between the vector octets. */
__attribute__((target("avx512f,avx512bw,avx512vbmi,gfni"))) static void
fastldp_fixed_table_range_q4x32(
    const fastldp_fixed_source *src, int64_t start, int64_t stop, int64_t *part,
    fastldp_fixed_scratch *ws)
{
    int64_t p = src->p;
    int64_t nblocks = (p + 255) >> 8;
    int64_t t0, b;
    int o, j, q, m, g, h, k;
    /* perm[h] byte 8 k + 7 - j = byte k of word 2 h (lo vectors) or 2 h + 1
     * (hi vectors) of octet member j: members 0-3 in lanes 2 j + h of the
     * first source, 4-7 in lanes 2 (j - 4) + h of the second (index + 64) */
    uint8_t perm_bytes[2][64];
    __m512i perm[2], unit;
    for (h = 0; h < 2; ++h) {
        for (k = 0; k < 8; ++k) {
            for (j = 0; j < 8; ++j) {
                perm_bytes[h][8 * k + 7 - j] =
                    (uint8_t)(j < 4 ? 8 * (2 * j + h) + k : 64 + 8 * (2 * (j - 4) + h) + k);
            }
        }
        perm[h] = _mm512_loadu_si512((const void *)perm_bytes[h]);
    }
    unit = _mm512_set1_epi64((long long)0x8040201008040201ULL);

    for (t0 = start; t0 < stop; t0 += FASTLDP_FIXED_VTILE) {
        int members = (int)(stop - t0 < FASTLDP_FIXED_VTILE ? stop - t0 : FASTLDP_FIXED_VTILE);
        int noct = (members + 7) / 8;
        int ngroups = (members + 15) / 16;
        for (o = 0; o < noct; ++o) {
            int64_t w[8];
            for (j = 0; j < 8; ++j) {
                m = 8 * o + j;
                /* padding members weigh 0: whatever their bits, they add 0 */
                w[j] = m < members ? src->weights[t0 + m] : 0;
            }
            fastldp_fixed_table4(w, ws->quads[2 * o]);
            fastldp_fixed_table4(w + 4, ws->quads[2 * o + 1]);
        }
        /* the generator takes sixteen identities: pad the last group */
        for (m = 0; m < 16 * ngroups; ++m) {
            ws->ids[m] = m < members ? fastldp_fixed_identity(src, t0 + m) : 0;
        }
        for (g = 0; g < ngroups; ++g) {
            fastldp_fixed_q4x32_group16(src->seed, ws->ids + 16 * g, 0, ws->gen4x32[0][g]);
        }
        for (b = 0; b < nblocks; ++b) {
            uint64_t (*cur)[64] = ws->gen4x32[b & 1];
            uint64_t (*nxt)[64] = ws->gen4x32[(b + 1) & 1];
            int gen_next = b + 1 < nblocks;
            for (q = 0; q < 4; ++q) {
                int64_t *out = part + (b << 8) + 64 * q;
                const __m512i perm_q = perm[q >> 1];
                __m512i a0, a1, a2, a3, a4, a5, a6, a7;
                if ((b << 8) + 64 * q >= p) break; /* only in the last block */
                FASTLDP_FIXED_LOAD8(out)
                for (o = 0; o < noct; ++o) {
                    const int64_t *lo = ws->quads[2 * o], *hi = ws->quads[2 * o + 1];
                    /* octet o: identities 0-7 or 8-15 of group o / 2, in
                     * generator vectors 2 (o & 1) and 2 (o & 1) + 1 */
                    const uint64_t *words = cur[o >> 1] + 32 * (q & 1) + 16 * (o & 1);
                    __m512i la, lb, ha, hb, e, x;
                    if (gen_next && (o & 7) == 0) {
                        /* group g of block b + 1 at octet 8 (g / 4) of word
                         * g mod 4: every group, as 16 g < members means
                         * 8 (g / 4) <= 2 g < noct */
                        g = 4 * (o >> 3) + q;
                        if (g < ngroups) {
                            fastldp_fixed_q4x32_group16(src->seed, ws->ids + 16 * g,
                                                        (uint64_t)b + 1, nxt[g]);
                        }
                    }
                    la = _mm512_loadu_si512((const void *)lo);
                    lb = _mm512_loadu_si512((const void *)(lo + 8));
                    ha = _mm512_loadu_si512((const void *)hi);
                    hb = _mm512_loadu_si512((const void *)(hi + 8));
                    e = _mm512_gf2p8affine_epi64_epi8(
                        unit,
                        _mm512_permutex2var_epi8(_mm512_loadu_si512((const void *)words), perm_q,
                                                 _mm512_loadu_si512((const void *)(words + 8))),
                        0);
                    FASTLDP_FIXED_LOOKUP8
                }
                FASTLDP_FIXED_STORE8(out)
            }
        }
    }
}

/* As fastldp_fixed_table_range, with the sums in AVX-512 registers and part
 * in the lane order of the vectors: part[64 w + 8 t + l] holds position
 * 64 w + 8 l + t (fastldp_fixed_unpermute puts it back).
 *
 * Eight identities' words of one 64-position slice are one vector; a byte
 * permute (vpermb) and one GF(2) affine map (gf2p8affineqb, an 8 x 8 bit
 * transpose per 64-bit lane) turn it into e, whose byte 8 l + t is the
 * eight identities' sign bits at position 8 l + t of the slice. Shifted
 * right by 8 t, the low four bits of each 64-bit lane index a sixteen-entry
 * int64 table of four identities' signed weight sums (two registers), which
 * vpermt2q looks up for eight positions at once; shifted by 4 more, the
 * other four identities'. Four instructions per eight identities and
 * positions, against some 28 on the scalar path, and in the vector units
 * while the Philox blocks keep the integer units busy.
 *
 * For that overlap the default codebook's blocks b + 1 are computed inside
 * block b's lookups, two identities per (word, octet) step with their ten
 * rounds spread between the step's eight lookups, so that the out-of-order
 * window always holds both kinds of work. Measured on an AMD EPYC (Zen 4,
 * AVX-512), n = 128,000, p = 4,096, one thread, CPU time: 1.18x the Philox
 * floor; 1.33x with two whole blocks per step, 1.55x with the blocks
 * generated between the lookups, 2.19x on the SSE2 path. */
__attribute__((target("avx512f,avx512bw,avx512vbmi,gfni,bmi2"))) static void
fastldp_fixed_table_range_vbmi(
    const fastldp_fixed_source *src, int64_t start, int64_t stop, int64_t *part,
    fastldp_fixed_scratch *ws)
{
    int64_t p = src->p;
    int64_t nblocks = (p + 255) >> 8;
    int64_t t0, b;
    int o, j, q, m;
    /* byte 8 k + 7 - j of the permuted vector = byte k of word j */
    uint8_t perm_bytes[64];
    __m512i perm, unit;
    if (src->codebook == FASTLDP_CODEBOOK_PHILOX4X32) {
        fastldp_fixed_table_range_q4x32(src, start, stop, part, ws);
        return;
    }
    for (o = 0; o < 8; ++o) {
        for (j = 0; j < 8; ++j) perm_bytes[8 * o + 7 - j] = (uint8_t)(8 * j + o);
    }
    perm = _mm512_loadu_si512((const void *)perm_bytes);
    /* byte b of each lane = 1 << b: output bit i = bit b of input byte 7 - i */
    unit = _mm512_set1_epi64((long long)0x8040201008040201ULL);

    for (t0 = start; t0 < stop; t0 += FASTLDP_FIXED_VTILE) {
        int members = (int)(stop - t0 < FASTLDP_FIXED_VTILE ? stop - t0 : FASTLDP_FIXED_VTILE);
        int noct = (members + 7) / 8;
        int padded = 8 * noct;
        for (o = 0; o < noct; ++o) {
            int64_t w[8];
            for (j = 0; j < 8; ++j) {
                m = 8 * o + j;
                /* padding members weigh 0: whatever their bits, they add 0 */
                w[j] = m < members ? src->weights[t0 + m] : 0;
                ws->ids[m] = m < members ? fastldp_fixed_identity(src, t0 + m) : 0;
            }
            fastldp_fixed_table4(w, ws->quads[2 * o]);
            fastldp_fixed_table4(w + 4, ws->quads[2 * o + 1]);
        }
        /* the default codebook's blocks are scalar Philox4x64-10, computed
         * inside the table loop of the block before (block 0 here; the
         * opt-in codebook returned above, and there is no third) */
        for (m = members; m < padded; ++m) {
            for (q = 0; q < 4; ++q) ws->next[0][q][m] = ws->next[1][q][m] = 0;
        }
        for (m = 0; m < members; ++m) {
            fastldp_philox_block blk = fastldp_hash_block(src->seed, ws->ids[m], 0,
                                                          FASTLDP_STREAM_PAIR_SIGN);
            for (q = 0; q < 4; ++q) ws->next[0][q][m] = blk.v[q];
        }
        for (b = 0; b < nblocks; ++b) {
            uint64_t (*cur)[FASTLDP_FIXED_VTILE] = ws->next[b & 1];
            uint64_t (*nxt)[FASTLDP_FIXED_VTILE] = ws->next[(b + 1) & 1];
            int gen = 0; /* members of block b + 1 computed so far */
            int gen_to = b + 1 < nblocks ? members : 0;
            for (q = 0; q < 4; ++q) {
                int64_t *out = part + (b << 8) + 64 * q;
                __m512i a0, a1, a2, a3, a4, a5, a6, a7;
                if ((b << 8) + 64 * q >= p) break;
                FASTLDP_FIXED_LOAD8(out)
                for (o = 0; o < noct; ++o) {
                    const int64_t *lo = ws->quads[2 * o], *hi = ws->quads[2 * o + 1];
                    __m512i la = _mm512_loadu_si512((const void *)lo);
                    __m512i lb = _mm512_loadu_si512((const void *)(lo + 8));
                    __m512i ha = _mm512_loadu_si512((const void *)hi);
                    __m512i hb = _mm512_loadu_si512((const void *)(hi + 8));
                    __m512i e = _mm512_gf2p8affine_epi64_epi8(
                        unit,
                        _mm512_permutexvar_epi8(
                            perm, _mm512_loadu_si512((const void *)(cur[q] + 8 * o))),
                        0);
                    __m512i x;
                    if (gen < gen_to) {
                        /* two identities' blocks b + 1, their ten Philox
                         * rounds spread between the eight lookups (gen + 1
                         * may be a padding member: computed, not kept) */
                        uint64_t ca[4] = {(uint64_t)b + 1, FASTLDP_STREAM_PAIR_SIGN, 0, 0};
                        uint64_t cb[4] = {(uint64_t)b + 1, FASTLDP_STREAM_PAIR_SIGN, 0, 0};
                        uint64_t k0 = src->seed, ka = ws->ids[gen], kb = ws->ids[gen + 1];
#define FASTLDP_FIXED_ROUNDS                                                      \
    k0 += FASTLDP_PHILOX_W0;                                                      \
    ka += FASTLDP_PHILOX_W1;                                                      \
    kb += FASTLDP_PHILOX_W1;                                                      \
    fastldp_philox_round(ca, k0, ka);                                             \
    fastldp_philox_round(cb, k0, kb);
                        fastldp_philox_round(ca, k0, ka);
                        fastldp_philox_round(cb, k0, kb);
                        FASTLDP_FIXED_LOOKUP(a0, 0)
                        FASTLDP_FIXED_ROUNDS
                        FASTLDP_FIXED_LOOKUP(a1, 8)
                        FASTLDP_FIXED_ROUNDS
                        FASTLDP_FIXED_LOOKUP(a2, 16)
                        FASTLDP_FIXED_ROUNDS
                        FASTLDP_FIXED_LOOKUP(a3, 24)
                        FASTLDP_FIXED_ROUNDS
                        FASTLDP_FIXED_LOOKUP(a4, 32)
                        FASTLDP_FIXED_ROUNDS
                        FASTLDP_FIXED_LOOKUP(a5, 40)
                        FASTLDP_FIXED_ROUNDS
                        FASTLDP_FIXED_LOOKUP(a6, 48)
                        FASTLDP_FIXED_ROUNDS
                        FASTLDP_FIXED_LOOKUP(a7, 56)
                        FASTLDP_FIXED_ROUNDS
                        FASTLDP_FIXED_ROUNDS
#undef FASTLDP_FIXED_ROUNDS
                        nxt[0][gen] = ca[0];
                        nxt[1][gen] = ca[1];
                        nxt[2][gen] = ca[2];
                        nxt[3][gen] = ca[3];
                        if (gen + 1 < gen_to) {
                            nxt[0][gen + 1] = cb[0];
                            nxt[1][gen + 1] = cb[1];
                            nxt[2][gen + 1] = cb[2];
                            nxt[3][gen + 1] = cb[3];
                        }
                        gen += 2;
                    } else {
                        FASTLDP_FIXED_LOOKUP8
                    }
                }
                FASTLDP_FIXED_STORE8(out)
            }
            /* the table loop computed every member of block b + 1: two per
             * step, 4 * noct steps, 8 * noct >= members (the word loop
             * stops early only in the last block, which has no successor) */
        }
    }
}
#undef FASTLDP_FIXED_LOAD8
#undef FASTLDP_FIXED_STORE8
#undef FASTLDP_FIXED_LOOKUP
#undef FASTLDP_FIXED_LOOKUP8
#else
#define FASTLDP_FIXED_VBMI 0
static inline int fastldp_fixed_vbmi_ok(int level)
{
    (void)level;
    return 0;
}
#endif

/* The general-weight table path fastldp_fixed_sketch takes now: 2 = AVX-512
 * (vpermt2q lookups), 1 = SSE2 (pmovmskb indices), 0 = plain C. */
static inline int fastldp_fixed_table_path(void)
{
    if (fastldp_fixed_vbmi_ok(fastldp_simd_level())) return 2;
    return FASTLDP_FIXED_SSE2;
}

/* Undoes the AVX-512 path's lane order: within each 64 entries, entry
 * 8 t + l goes to 8 l + t (an 8 x 8 transpose, its own inverse). */
static inline void fastldp_fixed_unpermute(int64_t *part, int64_t padded_p)
{
    int64_t w;
    int t, l;
    for (w = 0; w < padded_p; w += 64) {
        for (t = 0; t < 8; ++t) {
            for (l = t + 1; l < 8; ++l) {
                int64_t x = part[w + 8 * t + l];
                part[w + 8 * t + l] = part[w + 8 * l + t];
                part[w + 8 * l + t] = x;
            }
        }
    }
}

/* Number of 16s planes the bit-sliced counts of up to n identities need. */
static inline int fastldp_fixed_count_high_planes(int64_t n)
{
    int nhigh = 1;
    while (((int64_t)16 << nhigh) <= n && nhigh < FASTLDP_COUNT_PLANES) ++nhigh;
    return nhigh;
}

/* Adds the identities [start, stop) to the bit-sliced counts of
 * #{i : bit_i(e) XOR [w_i < 0]} in planes (4 + nhigh planes of
 * fastldp_count_stride(p) words, laid out as fastldp_add16 expects), with the
 * counting step `level` (fastldp_simd_level). */
static inline void fastldp_fixed_count_range(
    const fastldp_fixed_source *src, int64_t start, int64_t stop, uint64_t *planes, int level)
{
    int64_t g0;
    int j, members;
    uint64_t flip[FASTLDP_COUNT_GROUP];
    uint64_t ids[FASTLDP_COUNT_GROUP];

    for (g0 = start; g0 < stop; g0 += FASTLDP_COUNT_GROUP) {
        members = (int)(stop - g0 < FASTLDP_COUNT_GROUP ? stop - g0 : FASTLDP_COUNT_GROUP);
        for (j = 0; j < FASTLDP_COUNT_GROUP; ++j) {
            flip[j] = (j < members && fastldp_fixed_negative(src, g0 + j)) ? ~0ULL : 0ULL;
            ids[j] = (j < members) ? fastldp_fixed_identity(src, g0 + j) : 0;
        }
        fastldp_count_group(src->codebook, src->seed, ids, flip, members, src->p, planes, level);
    }
}

#if FASTLDP_HAVE_AVX2_PATH
/* Whether the equal-magnitude path counts with fastldp_count_ids_q4x32_avx512
 * (the opt-in codebook at SIMD level 3). */
static inline int fastldp_fixed_count_q4x32(int codebook, int level)
{
    return codebook == FASTLDP_CODEBOOK_PHILOX4X32 && level >= 3;
}

/* The opt-in codebook's counting at SIMD level 3: the identities [start,
 * stop) with w_i >= 0 are counted in pos_planes, those with w_i < 0 in
 * neg_planes, without flipping their words: #{i : bit_i(e) XOR [w_i < 0]}
 * = count_pos(e) + (#negatives - count_neg(e)), read back by
 * fastldp_fixed_count_flush_q4x32. The split takes eight identities at a time
 * (vpcompressq into registers, then one store each: without a branch on
 * the random signs, and without Zen 4's slow compress to memory), and
 * hands out whole batches of FASTLDP_COUNT_Q4X32_BATCH. Returns the number
 * of negatives. */
__attribute__((target("avx512f"))) static int64_t fastldp_fixed_count_range_q4x32(
    const fastldp_fixed_source *src, int64_t start, int64_t stop, int64_t stride,
    uint64_t *pos_planes, uint64_t *neg_planes)
{
    /* eight lanes of slack past a batch: a store of eight may overrun it */
    uint64_t pos[FASTLDP_COUNT_Q4X32_BATCH + 8], neg[FASTLDP_COUNT_Q4X32_BATCH + 8];
    const __m512i iota = _mm512_set_epi64(7, 6, 5, 4, 3, 2, 1, 0);
    const __m512i zero = _mm512_setzero_si512();
    int npos = 0, nneg = 0;
    int64_t negatives = 0, i;
    for (i = start; i + 8 <= stop; i += 8) {
        __m512i id = src->identities
                         ? _mm512_loadu_si512((const void *)(src->identities + i))
                         : _mm512_add_epi64(_mm512_set1_epi64((long long)(src->first_identity +
                                                                          (uint64_t)i)),
                                            iota);
        __mmask8 negative;
        int k;
        if (src->signs) {
            __m128i signs8 = _mm_loadl_epi64((const __m128i *)(const void *)(src->signs + i));
            negative = _mm512_cmplt_epi64_mask(_mm512_cvtepi8_epi64(signs8), zero);
        } else {
            negative = _mm512_cmplt_epi64_mask(
                _mm512_loadu_si512((const void *)(src->weights + i)), zero);
        }
        _mm512_storeu_si512((void *)(neg + nneg), _mm512_maskz_compress_epi64(negative, id));
        _mm512_storeu_si512((void *)(pos + npos),
                            _mm512_maskz_compress_epi64((__mmask8)~negative, id));
        k = __builtin_popcount((unsigned)negative);
        nneg += k;
        npos += 8 - k;
        if (npos >= FASTLDP_COUNT_Q4X32_BATCH) {
            fastldp_count_ids_q4x32_avx512(src->seed, pos, FASTLDP_COUNT_Q4X32_BATCH, src->p,
                                           stride, pos_planes);
            fastldp_count_q4x32_shift(pos, &npos, FASTLDP_COUNT_Q4X32_BATCH);
        }
        if (nneg >= FASTLDP_COUNT_Q4X32_BATCH) {
            fastldp_count_ids_q4x32_avx512(src->seed, neg, FASTLDP_COUNT_Q4X32_BATCH, src->p,
                                           stride, neg_planes);
            negatives += FASTLDP_COUNT_Q4X32_BATCH;
            fastldp_count_q4x32_shift(neg, &nneg, FASTLDP_COUNT_Q4X32_BATCH);
        }
    }
    for (; i < stop; ++i) {
        /* the last few: both lists have room (fewer than a batch each) */
        uint64_t id = fastldp_fixed_identity(src, i);
        if (fastldp_fixed_negative(src, i)) {
            neg[nneg++] = id;
        } else {
            pos[npos++] = id;
        }
    }
    if (npos) fastldp_count_ids_q4x32_avx512(src->seed, pos, npos, src->p, stride, pos_planes);
    if (nneg) fastldp_count_ids_q4x32_avx512(src->seed, neg, nneg, src->p, stride, neg_planes);
    return negatives + nneg;
}

/* part[e] += base - 2 * count_pos(e) + 2 * count_neg(e) for e in [0, p), the
 * counts read from the nplanes planes of both sets (words in the order of
 * fastldp_count_word_q4x32): eight positions at a time, each plane's eight
 * bits a mask that ORs the plane's bit value into the int64 lanes. The same
 * integers as the scalar read-back (fastldp_plane_count) of each set. */
__attribute__((target("avx512f"))) static void fastldp_fixed_count_flush_q4x32(
    const uint64_t *pos_planes, const uint64_t *neg_planes, int nplanes, int64_t p,
    int64_t stride, int64_t base, int64_t *part)
{
    const __m512i base_vec = _mm512_set1_epi64((long long)base);
    int64_t e;
    int l;
    for (e = 0; e < p; e += 8) {
        int64_t word = fastldp_count_word_q4x32(e >> 6);
        int shift = (int)(e & 63);
        __mmask8 keep = p - e >= 8 ? (__mmask8)0xFF : (__mmask8)((1u << (p - e)) - 1u);
        __m512i count_pos = _mm512_setzero_si512(), count_neg = _mm512_setzero_si512();
        __m512i value;
        for (l = 0; l < nplanes; ++l) {
            __m512i bit = _mm512_set1_epi64((long long)1 << l);
            __mmask8 in_pos = (__mmask8)(pos_planes[(int64_t)l * stride + word] >> shift);
            __mmask8 in_neg = (__mmask8)(neg_planes[(int64_t)l * stride + word] >> shift);
            count_pos = _mm512_mask_or_epi64(count_pos, in_pos, count_pos, bit);
            count_neg = _mm512_mask_or_epi64(count_neg, in_neg, count_neg, bit);
        }
        value = _mm512_add_epi64(
            base_vec, _mm512_slli_epi64(_mm512_sub_epi64(count_neg, count_pos), 1));
        _mm512_mask_storeu_epi64(
            (void *)(part + e), keep,
            _mm512_add_epi64(_mm512_maskz_loadu_epi64(keep, (const void *)(part + e)), value));
    }
}
#else
static inline int fastldp_fixed_count_q4x32(int codebook, int level)
{
    (void)codebook;
    (void)level;
    return 0;
}
#endif

/* part[e] += counted - 2 * count(e), the count read back from the planes. */
static inline void fastldp_fixed_count_flush(
    const uint64_t *planes, int nplanes, int64_t p, int64_t counted, int64_t *part)
{
    int64_t nwords = (p + 63) >> 6;
    int64_t stride = fastldp_count_stride(p);
    int64_t wi, t;
    for (wi = 0; wi < nwords; ++wi) {
        int64_t limit = p - (wi << 6) < 64 ? p - (wi << 6) : 64;
        for (t = 0; t < limit; ++t) {
            part[(wi << 6) + t] += counted - 2 * fastldp_plane_count(planes, nplanes, stride,
                                                                     wi, (int)t);
        }
    }
}

/* out[e] = sum_i w_i R_i(e) for e in [0, p) over the n identities of src.
 *
 * counting != 0 selects the equal-magnitude path: every |w_i| must then equal
 * magnitude. Identities go in chunks of `chunk` (a multiple of 16), handed to
 * the threads dynamically (a thread that loses its core does not hold up the
 * others); each thread sums into its own int64 partial, and the partials are
 * added into out at the end. The order of those integer additions cannot
 * change the result. out must hold p zeros. Returns 0, or -1 when scratch
 * memory could not be allocated (out is then unspecified). */
static inline int fastldp_fixed_sketch_run(
    const fastldp_fixed_source *src, int64_t n, int64_t chunk, int nthreads,
    int counting, int64_t magnitude, int64_t *out)
{
    int64_t p = src->p;
    int64_t nchunks, e;
    int failed = 0;
    if (n <= 0) return 0;
    if (chunk < 16) chunk = 16;
    nchunks = (n + chunk - 1) / chunk;
    if (nthreads < 1) nthreads = 1;
    if (nthreads > nchunks) nthreads = (int)nchunks;
#ifdef _OPENMP
#pragma omp parallel num_threads(nthreads) if (nthreads > 1) reduction(| : failed)
#endif
    {
        int64_t padded_p = ((p + 255) >> 8) << 8;
        int nplanes = 4 + fastldp_fixed_count_high_planes(n);
        int level = fastldp_simd_level();
        int vbmi = !counting && fastldp_fixed_vbmi_ok(level);
        /* the opt-in codebook's AVX-512 count: two sets of planes (identities
         * with w_i >= 0 and w_i < 0), words in the generator's order */
        int q4x32 = counting && fastldp_fixed_count_q4x32(src->codebook, level);
#if FASTLDP_HAVE_AVX2_PATH
        int64_t stride = q4x32 ? fastldp_count_stride_q4x32(p) : fastldp_count_stride(p);
#else
        int64_t stride = fastldp_count_stride(p);
#endif
        int64_t *part = (int64_t *)calloc((size_t)padded_p, sizeof(int64_t));
        uint64_t *planes = NULL;
        fastldp_fixed_scratch *ws = NULL;
        int64_t c, counted = 0, negatives = 0, i;
        int ok;
#if !FASTLDP_HAVE_AVX2_PATH
        (void)negatives; /* counted only by the AVX-512 path */
#endif
        if (counting) {
            planes = (uint64_t *)calloc((size_t)(q4x32 ? 2 : 1) * (size_t)nplanes * (size_t)stride,
                                        sizeof(uint64_t));
        } else {
            ws = (fastldp_fixed_scratch *)malloc(sizeof(fastldp_fixed_scratch));
        }
        ok = part != NULL && (counting ? planes != NULL : ws != NULL);
        if (!ok) failed = 1;
        /* every thread still enters the loop (a worksharing construct must be
         * met by all); one without memory only skips its chunks */
#ifdef _OPENMP
#pragma omp for schedule(dynamic, 1)
#endif
        for (c = 0; c < nchunks; ++c) {
            int64_t start = c * chunk;
            int64_t stop = start + chunk < n ? start + chunk : n;
            if (!ok) continue;
            if (q4x32) {
#if FASTLDP_HAVE_AVX2_PATH
                negatives += fastldp_fixed_count_range_q4x32(src, start, stop, stride, planes,
                                                             planes + (int64_t)nplanes * stride);
#endif
                counted += stop - start;
            } else if (counting) {
                fastldp_fixed_count_range(src, start, stop, planes, level);
                counted += stop - start;
            } else if (vbmi) {
#if FASTLDP_FIXED_VBMI
                fastldp_fixed_table_range_vbmi(src, start, stop, part, ws);
#endif
            } else {
                fastldp_fixed_table_range(src, start, stop, part, ws, level);
            }
        }
        if (ok) {
            if (q4x32) {
#if FASTLDP_HAVE_AVX2_PATH
                fastldp_fixed_count_flush_q4x32(planes, planes + (int64_t)nplanes * stride,
                                                nplanes, p, stride, counted - 2 * negatives,
                                                part);
#endif
            } else if (counting) {
                fastldp_fixed_count_flush(planes, nplanes, p, counted, part);
            } else if (vbmi) {
                fastldp_fixed_unpermute(part, padded_p);
            }
#ifdef _OPENMP
#pragma omp critical(fastldp_fixed_sketch_sum)
#endif
            {
                for (i = 0; i < p; ++i) out[i] += part[i];
            }
        }
        free(part);
        free(planes);
        free(ws);
    }
    if (failed) return -1;
    if (counting) {
        /* |count sum| <= n <= 2^30 and magnitude <= 2^32: below 2^62 */
        for (e = 0; e < p; ++e) out[e] *= magnitude;
    }
    return 0;
}

/* fastldp_fixed_sketch_run with the weights src->weights (src->signs is
 * ignored: callers need not set it). */
static inline int fastldp_fixed_sketch(
    const fastldp_fixed_source *src, int64_t n, int64_t chunk, int nthreads,
    int counting, int64_t magnitude, int64_t *out)
{
    fastldp_fixed_source weighted = *src;
    weighted.signs = NULL;
    return fastldp_fixed_sketch_run(&weighted, n, chunk, nthreads, counting, magnitude, out);
}

/* out[e] = magnitude * sum_i signs[i] R_i(e) (signs[i] = +1 or -1, checked by
 * the caller; 0 <= magnitude <= 2^32): fastldp_fixed_sketch's counting path
 * with the signs read from int8, no int64 weights needed (src->weights is
 * ignored). Same return values. */
static inline int fastldp_fixed_sign_sketch(
    const fastldp_fixed_source *src, const int8_t *signs, int64_t n, int64_t chunk,
    int nthreads, int64_t magnitude, int64_t *out)
{
    fastldp_fixed_source signed_src = *src;
    signed_src.weights = NULL;
    signed_src.signs = signs;
    return fastldp_fixed_sketch_run(&signed_src, n, chunk, nthreads, 1, magnitude, out);
}

#endif
