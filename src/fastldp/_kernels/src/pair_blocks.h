/*
 * Pair-sign blocks of many identities at once, in either codebook (philox.h).
 *
 * fastldp_pair_blocks(codebook, seed, ids, m, b, out, level) writes block b
 * of ids[0 .. m) to out[0 .. m). Philox4x64-10 needs 64 x 64 -> 128-bit
 * products, which no SIMD unit has, so it is computed one block at a time.
 * Philox4x32-10 needs 32 x 32 -> 64-bit products, which AVX2's vpmuludq
 * computes four at a time: eight identities' sub-blocks run in the eight
 * 32-bit lanes of a vector (the even and odd lanes' products taken by two
 * vpmuludq and put back in place by blends), both sub-blocks of a block side
 * by side so that two independent chains fill the multiplier's latency.
 *
 * The AVX2 code is compiled with a target attribute and chosen at run time
 * by a CPU feature check (fastldp_simd_level), never by -march: a wheel
 * built with it runs on every x86-64. Elsewhere, in FASTLDP_PORTABLE builds,
 * or with the cap lowered, the scalar fastldp_pair_block runs; it gives the
 * same words (tests compare the two).
 */
#ifndef FASTLDP_PAIR_BLOCKS_H
#define FASTLDP_PAIR_BLOCKS_H

#include <stdint.h>
#include <string.h>
#include "portable.h"
#include "philox.h"

#if FASTLDP_HAVE_BUILTINS && (defined(__x86_64__) || defined(__i386__))
#define FASTLDP_HAVE_AVX2_PATH 1
#include <immintrin.h>
#else
#define FASTLDP_HAVE_AVX2_PATH 0
#endif

/* The highest SIMD level the kernels may use: 3 = AVX-512F where the CPU
 * has it (the Philox4x32-10 blocks, sixteen identities at a time), 2 = AVX2
 * where the CPU has it, 1 = vector extensions in baseline instructions (the counting tree of
 * jprs_count.h only), 0 = scalar C. Tests lower it to compare the levels'
 * results (set_simd_cap in _sketch and _hash); each extension module has
 * its own copy. */
static int fastldp_simd_cap = 3;

/* The level the kernels use now (0 to 3). */
static inline int fastldp_simd_level(void)
{
#if FASTLDP_HAVE_BUILTINS
#if FASTLDP_HAVE_AVX2_PATH
    if (fastldp_simd_cap >= 3 && __builtin_cpu_supports("avx512f")) return 3;
    if (fastldp_simd_cap >= 2 && __builtin_cpu_supports("avx2")) return 2;
#endif
    return fastldp_simd_cap >= 1 ? 1 : 0;
#else
    (void)fastldp_simd_cap;
    return 0;
#endif
}

#if FASTLDP_HAVE_AVX2_PATH
/* (hi, lo) = 32-bit halves of m * a in every 32-bit lane of a. */
#define FASTLDP_MULHILO32X8(hi, lo, a, m)                                          \
    do {                                                                           \
        __m256i even_ = _mm256_mul_epu32((a), (m));                                \
        __m256i odd_ = _mm256_mul_epu32(_mm256_srli_epi64((a), 32), (m));          \
        (lo) = _mm256_blend_epi32(even_, _mm256_slli_epi64(odd_, 32), 0xAA);       \
        (hi) = _mm256_blend_epi32(_mm256_srli_epi64(even_, 32), odd_, 0xAA);       \
    } while (0)

#define FASTLDP_PHILOX32X8_ROUND(c0, c1, c2, c3, k0, k1)                           \
    do {                                                                           \
        __m256i hi0_, lo0_, hi1_, lo1_;                                            \
        FASTLDP_MULHILO32X8(hi0_, lo0_, c0, m0);                                   \
        FASTLDP_MULHILO32X8(hi1_, lo1_, c2, m1);                                   \
        (c0) = _mm256_xor_si256(_mm256_xor_si256(hi1_, c1), k0);                   \
        (c1) = lo1_;                                                               \
        (c2) = _mm256_xor_si256(_mm256_xor_si256(hi0_, c3), k1);                   \
        (c3) = lo0_;                                                               \
    } while (0)

/* Pair-sign block b (philox4x32-10) of the eight identities ids[0..7]. */
__attribute__((target("avx2"))) static void fastldp_philox4x32_blocks8_avx2(
    uint64_t seed, const uint64_t *ids, uint64_t b, fastldp_philox_block *out)
{
    uint32_t id_lo[8], id_hi[8];
    __m256i m0 = _mm256_set1_epi32((int)FASTLDP_PHILOX32_M0);
    __m256i m1 = _mm256_set1_epi32((int)FASTLDP_PHILOX32_M1);
    __m256i a0, a1, a2, a3, b0, b1, b2, b3, k0, k1;
    uint32_t key0 = (uint32_t)seed, key1 = (uint32_t)(seed >> 32);
    uint64_t sub0 = 2 * b, sub1 = 2 * b + 1;
    int j, r;
    for (j = 0; j < 8; ++j) {
        id_lo[j] = (uint32_t)ids[j];
        id_hi[j] = (uint32_t)(ids[j] >> 32);
    }
    /* a: sub-block 0 of the eight identities, b: sub-block 1 */
    a0 = _mm256_set1_epi32((int)(uint32_t)sub0);
    a1 = _mm256_set1_epi32((int)(uint32_t)(sub0 >> 32));
    b0 = _mm256_set1_epi32((int)(uint32_t)sub1);
    b1 = _mm256_set1_epi32((int)(uint32_t)(sub1 >> 32));
    a2 = b2 = _mm256_loadu_si256((const __m256i *)id_lo);
    a3 = b3 = _mm256_loadu_si256((const __m256i *)id_hi);
    for (r = 0; r < 10; ++r) {
        if (r > 0) {
            key0 += FASTLDP_PHILOX32_W0;
            key1 += FASTLDP_PHILOX32_W1;
        }
        k0 = _mm256_set1_epi32((int)key0);
        k1 = _mm256_set1_epi32((int)key1);
        FASTLDP_PHILOX32X8_ROUND(a0, a1, a2, a3, k0, k1);
        FASTLDP_PHILOX32X8_ROUND(b0, b1, b2, b3, k0, k1);
    }
    /* 64-bit word 2h + r of identity j is u_{2r} | u_{2r+1} << 32 of
     * sub-block h: the 32-bit unpacks pair the words of one lane, the 64-bit
     * unpacks put words (0, 1) and (2, 3) side by side, and the 128-bit
     * permutes join the two sub-blocks of one identity (identities 0-3 in
     * the low halves, 4-7 in the high halves of the vectors). */
    {
        __m256i a01l = _mm256_unpacklo_epi32(a0, a1), a01h = _mm256_unpackhi_epi32(a0, a1);
        __m256i a23l = _mm256_unpacklo_epi32(a2, a3), a23h = _mm256_unpackhi_epi32(a2, a3);
        __m256i b01l = _mm256_unpacklo_epi32(b0, b1), b01h = _mm256_unpackhi_epi32(b0, b1);
        __m256i b23l = _mm256_unpacklo_epi32(b2, b3), b23h = _mm256_unpackhi_epi32(b2, b3);
        /* x_j: words (0, 1) of identities j and j + 4; y_j: words (2, 3) */
        __m256i x0 = _mm256_unpacklo_epi64(a01l, a23l), x1 = _mm256_unpackhi_epi64(a01l, a23l);
        __m256i x2 = _mm256_unpacklo_epi64(a01h, a23h), x3 = _mm256_unpackhi_epi64(a01h, a23h);
        __m256i y0 = _mm256_unpacklo_epi64(b01l, b23l), y1 = _mm256_unpackhi_epi64(b01l, b23l);
        __m256i y2 = _mm256_unpacklo_epi64(b01h, b23h), y3 = _mm256_unpackhi_epi64(b01h, b23h);
        _mm256_storeu_si256((__m256i *)out[0].v, _mm256_permute2x128_si256(x0, y0, 0x20));
        _mm256_storeu_si256((__m256i *)out[1].v, _mm256_permute2x128_si256(x1, y1, 0x20));
        _mm256_storeu_si256((__m256i *)out[2].v, _mm256_permute2x128_si256(x2, y2, 0x20));
        _mm256_storeu_si256((__m256i *)out[3].v, _mm256_permute2x128_si256(x3, y3, 0x20));
        _mm256_storeu_si256((__m256i *)out[4].v, _mm256_permute2x128_si256(x0, y0, 0x31));
        _mm256_storeu_si256((__m256i *)out[5].v, _mm256_permute2x128_si256(x1, y1, 0x31));
        _mm256_storeu_si256((__m256i *)out[6].v, _mm256_permute2x128_si256(x2, y2, 0x31));
        _mm256_storeu_si256((__m256i *)out[7].v, _mm256_permute2x128_si256(x3, y3, 0x31));
    }
}

/* The same for sixteen identities in the sixteen lanes of an AVX-512
 * vector (the blends become mask blends). Lane t holds identity
 * ids[4 (t & 3) + (t >> 2)], so that after the per-128-bit-lane unpacks
 * each two-block permute lands on two consecutive outputs. */
#define FASTLDP_MULHILO32X16(hi, lo, a, m)                                          \
    do {                                                                            \
        __m512i even_ = _mm512_mul_epu32((a), (m));                                 \
        __m512i odd_ = _mm512_mul_epu32(_mm512_srli_epi64((a), 32), (m));           \
        (lo) = _mm512_mask_blend_epi32((__mmask16)0xAAAA, even_,                    \
                                       _mm512_slli_epi64(odd_, 32));                \
        (hi) = _mm512_mask_blend_epi32((__mmask16)0xAAAA,                           \
                                       _mm512_srli_epi64(even_, 32), odd_);         \
    } while (0)

#define FASTLDP_PHILOX32X16_ROUND(c0, c1, c2, c3, k0, k1)                           \
    do {                                                                            \
        __m512i hi0_, lo0_, hi1_, lo1_;                                             \
        FASTLDP_MULHILO32X16(hi0_, lo0_, c0, m0);                                   \
        FASTLDP_MULHILO32X16(hi1_, lo1_, c2, m1);                                   \
        (c0) = _mm512_xor_si512(_mm512_xor_si512(hi1_, c1), k0);                    \
        (c1) = lo1_;                                                                \
        (c2) = _mm512_xor_si512(_mm512_xor_si512(hi0_, c3), k1);                    \
        (c3) = lo0_;                                                                \
    } while (0)

__attribute__((target("avx512f"))) static void fastldp_philox4x32_blocks16_avx512(
    uint64_t seed, const uint64_t *ids, uint64_t b, fastldp_philox_block *out)
{
    uint32_t id_lo[16], id_hi[16];
    __m512i m0 = _mm512_set1_epi32((int)FASTLDP_PHILOX32_M0);
    __m512i m1 = _mm512_set1_epi32((int)FASTLDP_PHILOX32_M1);
    __m512i a0, a1, a2, a3, b0, b1, b2, b3, k0, k1;
    uint32_t key0 = (uint32_t)seed, key1 = (uint32_t)(seed >> 32);
    uint64_t sub0 = 2 * b, sub1 = 2 * b + 1;
    int t, r;
    for (t = 0; t < 16; ++t) {
        uint64_t id = ids[4 * (t & 3) + (t >> 2)];
        id_lo[t] = (uint32_t)id;
        id_hi[t] = (uint32_t)(id >> 32);
    }
    a0 = _mm512_set1_epi32((int)(uint32_t)sub0);
    a1 = _mm512_set1_epi32((int)(uint32_t)(sub0 >> 32));
    b0 = _mm512_set1_epi32((int)(uint32_t)sub1);
    b1 = _mm512_set1_epi32((int)(uint32_t)(sub1 >> 32));
    a2 = b2 = _mm512_loadu_si512((const void *)id_lo);
    a3 = b3 = _mm512_loadu_si512((const void *)id_hi);
    for (r = 0; r < 10; ++r) {
        if (r > 0) {
            key0 += FASTLDP_PHILOX32_W0;
            key1 += FASTLDP_PHILOX32_W1;
        }
        k0 = _mm512_set1_epi32((int)key0);
        k1 = _mm512_set1_epi32((int)key1);
        FASTLDP_PHILOX32X16_ROUND(a0, a1, a2, a3, k0, k1);
        FASTLDP_PHILOX32X16_ROUND(b0, b1, b2, b3, k0, k1);
    }
    {
        /* x_j (y_j): words (0, 1) ((2, 3)) of lanes j, 4 + j, 8 + j, 12 + j,
         * one per 128-bit lane, as in the AVX2 function */
        __m512i a01l = _mm512_unpacklo_epi32(a0, a1), a01h = _mm512_unpackhi_epi32(a0, a1);
        __m512i a23l = _mm512_unpacklo_epi32(a2, a3), a23h = _mm512_unpackhi_epi32(a2, a3);
        __m512i b01l = _mm512_unpacklo_epi32(b0, b1), b01h = _mm512_unpackhi_epi32(b0, b1);
        __m512i b23l = _mm512_unpacklo_epi32(b2, b3), b23h = _mm512_unpackhi_epi32(b2, b3);
        __m512i x[4], y[4];
        const __m512i first = _mm512_set_epi64(11, 10, 3, 2, 9, 8, 1, 0);
        const __m512i second = _mm512_set_epi64(15, 14, 7, 6, 13, 12, 5, 4);
        int j;
        x[0] = _mm512_unpacklo_epi64(a01l, a23l);
        x[1] = _mm512_unpackhi_epi64(a01l, a23l);
        x[2] = _mm512_unpacklo_epi64(a01h, a23h);
        x[3] = _mm512_unpackhi_epi64(a01h, a23h);
        y[0] = _mm512_unpacklo_epi64(b01l, b23l);
        y[1] = _mm512_unpackhi_epi64(b01l, b23l);
        y[2] = _mm512_unpacklo_epi64(b01h, b23h);
        y[3] = _mm512_unpackhi_epi64(b01h, b23h);
        /* lane t = j + 4k holds ids[4j + k]: blocks of lanes (j, 4 + j) are
         * outputs 4j, 4j + 1 and those of lanes (8 + j, 12 + j) are 4j + 2,
         * 4j + 3 */
        for (j = 0; j < 4; ++j) {
            _mm512_storeu_si512((void *)out[4 * j].v, _mm512_permutex2var_epi64(x[j], first, y[j]));
            _mm512_storeu_si512((void *)out[4 * j + 2].v,
                                _mm512_permutex2var_epi64(x[j], second, y[j]));
        }
    }
}
#endif

/* Block b of the pair-sign stream of ids[0 .. m) in `codebook`, at SIMD
 * `level` (fastldp_simd_level()). */
static inline void fastldp_pair_blocks(
    int codebook, uint64_t seed, const uint64_t *ids, int m, uint64_t b,
    fastldp_philox_block *out, int level)
{
    int j = 0;
#if FASTLDP_HAVE_AVX2_PATH
    if (codebook == FASTLDP_CODEBOOK_PHILOX4X32 && level >= 3) {
        for (; j + 16 <= m; j += 16) fastldp_philox4x32_blocks16_avx512(seed, ids + j, b, out + j);
    }
    if (codebook == FASTLDP_CODEBOOK_PHILOX4X32 && level >= 2) {
        for (; j + 8 <= m; j += 8) fastldp_philox4x32_blocks8_avx2(seed, ids + j, b, out + j);
        if (j < m) {
            /* a ragged tail: pad the lanes, keep the m - j blocks */
            uint64_t tail_ids[8] = {0, 0, 0, 0, 0, 0, 0, 0};
            fastldp_philox_block tail[8];
            int t;
            for (t = 0; t < m - j; ++t) tail_ids[t] = ids[j + t];
            fastldp_philox4x32_blocks8_avx2(seed, tail_ids, b, tail);
            for (t = 0; t < m - j; ++t) out[j + t] = tail[t];
        }
        return;
    }
#endif
    (void)level;
    for (; j < m; ++j) out[j] = fastldp_pair_block(codebook, seed, ids[j], b);
}

#endif
