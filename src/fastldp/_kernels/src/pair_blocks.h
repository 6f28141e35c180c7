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
 * AVX-512F does better with one block per 64-bit lane (the low halves hold
 * the words, so one vpmuludq gives the whole product and no blends are
 * needed) and four vectors in flight: sixteen identities' blocks at a time
 * (fastldp_philox4x32_blocks16_avx512), or four identities' runs of four
 * blocks (fastldp_philox4x32_quad4_avx512), which the floor
 * (fastldp_pair_fold) and the counting tree of jprs_count.h consume from the
 * registers.
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
 * has it (the Philox4x32-10 blocks in 64-bit lanes, and the counting tree
 * in 512-bit vectors for that codebook), 2 = AVX2
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

/* AVX-512: Philox4x32-10 in 64-bit lanes. Each lane runs one Philox4x32
 * block with its four 32-bit words in the low halves of the 64-bit lanes of
 * four vectors c0..c3, so that one vpmuludq gives a lane's whole 64-bit
 * product: hi = product >> 32 (one shift), lo = the product itself. The
 * high halves may hold garbage: vpmuludq reads only the low halves and XOR
 * never moves bits down, so they never reach a word that is kept. Per round
 * and eight lanes this is 2 multiplies, 2 shifts and 2 three-way XORs
 * (vpternlogq), against 4 multiplies, 6 shifts and 4 blends per sixteen
 * lanes when the words fill all sixteen 32-bit lanes; and four independent
 * vectors (FASTLDP_PHILOX32Q_STATES) run side by side so that the
 * multiplier's latency is hidden. */
#define FASTLDP_PHILOX32Q_STATES 4

#define FASTLDP_PHILOX32Q_ROUND(c0, c1, c2, c3, k0, k1)                                    \
    do {                                                                                    \
        __m512i p0_ = _mm512_mul_epu32((c0), m0);                                           \
        __m512i p1_ = _mm512_mul_epu32((c2), m1);                                           \
        (c0) = _mm512_ternarylogic_epi64(_mm512_srli_epi64(p1_, 32), (c1), (k0), 0x96);     \
        (c2) = _mm512_ternarylogic_epi64(_mm512_srli_epi64(p0_, 32), (c3), (k1), 0x96);     \
        (c1) = p1_;                                                                         \
        (c3) = p0_;                                                                         \
    } while (0)

/* Runs FASTLDP_PHILOX32Q_STATES vectors of eight Philox4x32-10 blocks: lane
 * t of vector s has counter (lo32 sub[s][t], hi32 sub[s][t], lo32 id[s][t],
 * hi32 id[s][t]) and key (lo32 seed, hi32 seed). On return lo[s] holds the
 * 64-bit words u0 | u1 << 32 of its lanes' blocks and hi[s] the words
 * u2 | u3 << 32: for sub-block h of a pair-sign block, its words 2h and
 * 2h + 1 (philox.h). always_inline: callers are AVX-512 functions that keep
 * the results in registers. */
__attribute__((target("avx512f"), always_inline)) static inline void
fastldp_philox4x32_q_avx512(uint64_t seed, const __m512i *sub, const __m512i *id, __m512i *lo,
                            __m512i *hi)
{
    const __m512i m0 = _mm512_set1_epi64((long long)FASTLDP_PHILOX32_M0);
    const __m512i m1 = _mm512_set1_epi64((long long)FASTLDP_PHILOX32_M1);
    uint32_t key0 = (uint32_t)seed, key1 = (uint32_t)(seed >> 32);
    __m512i a0 = sub[0], a1 = _mm512_srli_epi64(sub[0], 32);
    __m512i a2 = id[0], a3 = _mm512_srli_epi64(id[0], 32);
    __m512i b0 = sub[1], b1 = _mm512_srli_epi64(sub[1], 32);
    __m512i b2 = id[1], b3 = _mm512_srli_epi64(id[1], 32);
    __m512i c0 = sub[2], c1 = _mm512_srli_epi64(sub[2], 32);
    __m512i c2 = id[2], c3 = _mm512_srli_epi64(id[2], 32);
    __m512i d0 = sub[3], d1 = _mm512_srli_epi64(sub[3], 32);
    __m512i d2 = id[3], d3 = _mm512_srli_epi64(id[3], 32);
    int r;
    for (r = 0; r < 10; ++r) {
        __m512i k0 = _mm512_set1_epi32((int)key0), k1 = _mm512_set1_epi32((int)key1);
        FASTLDP_PHILOX32Q_ROUND(a0, a1, a2, a3, k0, k1);
        FASTLDP_PHILOX32Q_ROUND(b0, b1, b2, b3, k0, k1);
        FASTLDP_PHILOX32Q_ROUND(c0, c1, c2, c3, k0, k1);
        FASTLDP_PHILOX32Q_ROUND(d0, d1, d2, d3, k0, k1);
        key0 += FASTLDP_PHILOX32_W0;
        key1 += FASTLDP_PHILOX32_W1;
    }
    /* u0 | u1 << 32: the even dwords of c0 and, in the odd dwords, the even
     * dwords of c1 (a masked in-lane shuffle) */
    lo[0] = _mm512_mask_shuffle_epi32(a0, (__mmask16)0xAAAA, a1, _MM_PERM_CCAA);
    hi[0] = _mm512_mask_shuffle_epi32(a2, (__mmask16)0xAAAA, a3, _MM_PERM_CCAA);
    lo[1] = _mm512_mask_shuffle_epi32(b0, (__mmask16)0xAAAA, b1, _MM_PERM_CCAA);
    hi[1] = _mm512_mask_shuffle_epi32(b2, (__mmask16)0xAAAA, b3, _MM_PERM_CCAA);
    lo[2] = _mm512_mask_shuffle_epi32(c0, (__mmask16)0xAAAA, c1, _MM_PERM_CCAA);
    hi[2] = _mm512_mask_shuffle_epi32(c2, (__mmask16)0xAAAA, c3, _MM_PERM_CCAA);
    lo[3] = _mm512_mask_shuffle_epi32(d0, (__mmask16)0xAAAA, d1, _MM_PERM_CCAA);
    hi[3] = _mm512_mask_shuffle_epi32(d2, (__mmask16)0xAAAA, d3, _MM_PERM_CCAA);
}

/* Pair-sign block b (philox4x32-10) of the sixteen identities ids[0..15]:
 * lane 2i + h of vector s runs sub-block h of identity 4s + i. */
__attribute__((target("avx512f"))) static void fastldp_philox4x32_blocks16_avx512(
    uint64_t seed, const uint64_t *ids, uint64_t b, fastldp_philox_block *out)
{
    __m512i sub[FASTLDP_PHILOX32Q_STATES], id[FASTLDP_PHILOX32Q_STATES];
    __m512i lo[FASTLDP_PHILOX32Q_STATES], hi[FASTLDP_PHILOX32Q_STATES];
    const __m512i pairs = _mm512_set_epi64(3, 3, 2, 2, 1, 1, 0, 0);
    /* identity i's block is (lo[2i], hi[2i], lo[2i + 1], hi[2i + 1]) */
    const __m512i first = _mm512_set_epi64(11, 3, 10, 2, 9, 1, 8, 0);
    const __m512i second = _mm512_set_epi64(15, 7, 14, 6, 13, 5, 12, 4);
    int s;
    for (s = 0; s < FASTLDP_PHILOX32Q_STATES; ++s) {
        long long even = (long long)(2 * b), odd = (long long)(2 * b + 1);
        sub[s] = _mm512_set_epi64(odd, even, odd, even, odd, even, odd, even);
        id[s] = _mm512_permutexvar_epi64(
            pairs, _mm512_castsi256_si512(_mm256_loadu_si256((const __m256i *)(ids + 4 * s))));
    }
    fastldp_philox4x32_q_avx512(seed, sub, id, lo, hi);
    for (s = 0; s < FASTLDP_PHILOX32Q_STATES; ++s) {
        _mm512_storeu_si512((void *)out[4 * s].v, _mm512_permutex2var_epi64(lo[s], first, hi[s]));
        _mm512_storeu_si512((void *)out[4 * s + 2].v,
                            _mm512_permutex2var_epi64(lo[s], second, hi[s]));
    }
}

/* Blocks 4q .. 4q + 3 of four identities ids[0..3] (the lanes of vector s:
 * lane 2k + h runs sub-block h of block 4q + k of identity s): on return
 * lo[s] lane 2k + h holds word 2h, hi[s] lane 2k + h word 2h + 1 of that
 * block. The counting and folding kernels consume them in this order. */
__attribute__((target("avx512f"), always_inline)) static inline void
fastldp_philox4x32_quad4_avx512(uint64_t seed, const uint64_t *ids, uint64_t q, __m512i *lo,
                                __m512i *hi)
{
    __m512i sub[FASTLDP_PHILOX32Q_STATES], id[FASTLDP_PHILOX32Q_STATES];
    const __m512i sub0 = _mm512_add_epi64(_mm512_set1_epi64((long long)(8 * q)),
                                          _mm512_set_epi64(7, 6, 5, 4, 3, 2, 1, 0));
    int s;
    for (s = 0; s < FASTLDP_PHILOX32Q_STATES; ++s) {
        sub[s] = sub0;
        id[s] = _mm512_set1_epi64((long long)ids[s]);
    }
    fastldp_philox4x32_q_avx512(seed, sub, id, lo, hi);
}

/* The XOR of every word of blocks 0 .. nblocks - 1 of ids[0 .. m), four
 * identities and four blocks per call of the generator (the floor). Full
 * calls (four identities, four blocks) take unmasked XORs into two
 * accumulators; a ragged group or the last, partial quad masks its lanes. */
__attribute__((target("avx512f"))) static uint64_t fastldp_philox4x32_fold_avx512(
    uint64_t seed, const uint64_t *ids, int m, int64_t nblocks)
{
    __m512i acc0 = _mm512_setzero_si512(), acc1 = _mm512_setzero_si512();
    __m512i lo[FASTLDP_PHILOX32Q_STATES], hi[FASTLDP_PHILOX32Q_STATES];
    uint64_t quad_ids[FASTLDP_PHILOX32Q_STATES];
    int64_t nquads = (nblocks + 3) >> 2, q;
    int j, s;
    for (j = 0; j < m; j += FASTLDP_PHILOX32Q_STATES) {
        int members = m - j < FASTLDP_PHILOX32Q_STATES ? m - j : FASTLDP_PHILOX32Q_STATES;
        for (s = 0; s < FASTLDP_PHILOX32Q_STATES; ++s) quad_ids[s] = s < members ? ids[j + s] : 0;
        for (q = 0; q < nquads; ++q) {
            /* lanes 2k + h of blocks 4q + k < nblocks count */
            int64_t left = nblocks - 4 * q;
            __mmask8 keep = left >= 4 ? (__mmask8)0xFF : (__mmask8)((1u << (2 * left)) - 1u);
            fastldp_philox4x32_quad4_avx512(seed, quad_ids, (uint64_t)q, lo, hi);
            if (members == FASTLDP_PHILOX32Q_STATES && keep == (__mmask8)0xFF) {
                acc0 = _mm512_ternarylogic_epi64(acc0, lo[0], hi[0], 0x96);
                acc1 = _mm512_ternarylogic_epi64(acc1, lo[1], hi[1], 0x96);
                acc0 = _mm512_ternarylogic_epi64(acc0, lo[2], hi[2], 0x96);
                acc1 = _mm512_ternarylogic_epi64(acc1, lo[3], hi[3], 0x96);
            } else {
                for (s = 0; s < members; ++s) {
                    acc0 = _mm512_mask_ternarylogic_epi64(acc0, keep, lo[s], hi[s], 0x96);
                }
            }
        }
    }
    {
        uint64_t words[8];
        uint64_t x = 0;
        _mm512_storeu_si512((void *)words, _mm512_xor_si512(acc0, acc1));
        for (j = 0; j < 8; ++j) x ^= words[j];
        return x;
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

/* The XOR of every word of pair-sign blocks 0 .. nblocks - 1 of ids[0 .. m)
 * in `codebook` at SIMD `level`: the work of generating them and nothing
 * else (philox_floor). The XOR does not depend on the order, so every level
 * gives the same value. */
static inline uint64_t fastldp_pair_fold(
    int codebook, uint64_t seed, const uint64_t *ids, int m, int64_t nblocks, int level)
{
    fastldp_philox_block blk[16];
    uint64_t acc = 0;
    int64_t b;
    int j, j0;
#if FASTLDP_HAVE_AVX2_PATH
    if (codebook == FASTLDP_CODEBOOK_PHILOX4X32 && level >= 3) {
        return fastldp_philox4x32_fold_avx512(seed, ids, m, nblocks);
    }
#endif
    for (j0 = 0; j0 < m; j0 += 16) {
        int members = m - j0 < 16 ? m - j0 : 16;
        for (b = 0; b < nblocks; ++b) {
            fastldp_pair_blocks(codebook, seed, ids + j0, members, (uint64_t)b, blk, level);
            for (j = 0; j < members; ++j) {
                acc ^= blk[j].v[0] ^ blk[j].v[1] ^ blk[j].v[2] ^ blk[j].v[3];
            }
        }
    }
    return acc;
}

#endif
