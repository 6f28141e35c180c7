/*
 * Equal-magnitude path of the JPRS global sketch: when every weight is +-c,
 *
 *   sum_i w_i R_i(e) = c * (n - 2 * #{i : bit_i(e) XOR [w_i < 0]}),
 *
 * an integer count per position. The count is kept in bit-sliced form: plane
 * l holds bit l of the 64 counts of one 64-position word. Sixteen
 * identities' words are added at once by a Harley-Seal carry-save tree
 * (about five integer operations per identity and 64 positions), so the
 * kernel runs close to the cost of generating the Philox blocks. With the
 * opt-in codebook and AVX-512 the tree works on 512-bit vectors fed straight
 * from the generator's registers (fastldp_count_ids_q4x32_avx512).
 *
 * This chunk function writes the exact integer (n_chunk - 2 * count) as a
 * double; the caller multiplies by c once at the end. Integers below 2^53
 * add exactly, so the result does not depend on chunking or threads.
 */
#ifndef FASTLDP_JPRS_COUNT_H
#define FASTLDP_JPRS_COUNT_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "philox.h"
#include "jprs_sketch.h"
#include "pair_blocks.h"

#define FASTLDP_COUNT_PLANES 40
#define FASTLDP_COUNT_GROUP 16

/* Carry-save adder: (high, low) = a + b + c bitwise. */
#define FASTLDP_CSA(high, low, a, b, c)       \
    do {                                      \
        uint64_t u_ = (a) ^ (b);              \
        (high) = ((a) & (b)) | (u_ & (c));    \
        (low) = u_ ^ (c);                     \
    } while (0)

/* Adds sixteen 64-bit inputs x[0..15] into the vertical counters of one word
 * position (Harley-Seal): planes c1, c2, c4, c8 absorb the low bits and the
 * 16s carry ripples into the high planes, touched once per 16 inputs. */
static inline void fastldp_add16(const uint64_t x[16], uint64_t *c1, uint64_t *c2,
                                 uint64_t *c4, uint64_t *c8, uint64_t *high,
                                 int64_t stride)
{
    uint64_t twos_a, twos_b, fours_a, fours_b, eights_a, eights_b, sixteens, carry;
    uint64_t ones = *c1, twos = *c2, fours = *c4, eights = *c8;
    int l;
    FASTLDP_CSA(twos_a, ones, ones, x[0], x[1]);
    FASTLDP_CSA(twos_b, ones, ones, x[2], x[3]);
    FASTLDP_CSA(fours_a, twos, twos, twos_a, twos_b);
    FASTLDP_CSA(twos_a, ones, ones, x[4], x[5]);
    FASTLDP_CSA(twos_b, ones, ones, x[6], x[7]);
    FASTLDP_CSA(fours_b, twos, twos, twos_a, twos_b);
    FASTLDP_CSA(eights_a, fours, fours, fours_a, fours_b);
    FASTLDP_CSA(twos_a, ones, ones, x[8], x[9]);
    FASTLDP_CSA(twos_b, ones, ones, x[10], x[11]);
    FASTLDP_CSA(fours_a, twos, twos, twos_a, twos_b);
    FASTLDP_CSA(twos_a, ones, ones, x[12], x[13]);
    FASTLDP_CSA(twos_b, ones, ones, x[14], x[15]);
    FASTLDP_CSA(fours_b, twos, twos, twos_a, twos_b);
    FASTLDP_CSA(eights_b, fours, fours, fours_a, fours_b);
    FASTLDP_CSA(sixteens, eights, eights, eights_a, eights_b);
    *c1 = ones;
    *c2 = twos;
    *c4 = fours;
    *c8 = eights;
    carry = sixteens;
    for (l = 0; carry != 0; ++l) {
        uint64_t *plane = high + (int64_t)l * stride;
        uint64_t next = *plane & carry;
        *plane ^= carry;
        carry = next;
    }
}

/* The count at bit t of word wi, read back from its nplanes bit-sliced planes
 * of stride words each. */
static inline int64_t fastldp_plane_count(
    const uint64_t *planes, int nplanes, int64_t stride, int64_t wi, int t)
{
    int64_t count = 0;
    int l;
    for (l = 0; l < nplanes; ++l) {
        count |= (int64_t)((planes[(int64_t)l * stride + wi] >> t) & 1ULL) << l;
    }
    return count;
}

/* Words per bit plane for p positions: whole Philox blocks (four words), so
 * that the four words of a block are always one aligned-in-layout run and the
 * vector path below may load and store them together (the words past p
 * count bits that are never read back). */
static inline int64_t fastldp_count_stride(int64_t p)
{
    return ((p + 255) >> 8) << 2;
}

/* Scalar group step: adds one group of up to FASTLDP_COUNT_GROUP identities
 * (ids[0 .. members), their signs flipped where flip[j] is all ones) to the
 * bit-sliced counts of #{i : bit_i(e) XOR flip_i} over the p positions.
 * planes holds 4 + nhigh planes of fastldp_count_stride(p) words, laid out as
 * fastldp_add16 expects. */
static inline void fastldp_count_group_scalar(
    int codebook, uint64_t seed, const uint64_t *ids, const uint64_t *flip, int members,
    int64_t p, uint64_t *planes)
{
    int64_t stride = fastldp_count_stride(p);
    int64_t nblocks = (p + 255) >> 8;
    int64_t b, wi;
    int j, q;
    uint64_t x[FASTLDP_COUNT_GROUP];
    fastldp_philox_block blk[FASTLDP_COUNT_GROUP];

    for (b = 0; b < nblocks; ++b) {
        fastldp_pair_blocks(codebook, seed, ids, members, (uint64_t)b, blk, 0);
        for (q = 0; q < 4; ++q) {
            wi = (b << 2) + q;
            for (j = 0; j < FASTLDP_COUNT_GROUP; ++j) {
                /* padding members contribute 0 */
                x[j] = (j < members) ? (blk[j].v[q] ^ flip[j]) : 0ULL;
            }
            fastldp_add16(x, planes + wi, planes + stride + wi, planes + 2 * stride + wi,
                          planes + 3 * stride + wi, planes + 4 * stride + wi, stride);
        }
    }
}

#if FASTLDP_HAVE_BUILTINS
/* Vector group step (GCC/Clang vector extensions): the four words of one
 * Philox block go through the carry-save tree side by side, one 4 x 64-bit
 * vector per identity, so the tree costs a quarter of the scalar step's
 * instructions with AVX2 and half with SSE2 (baseline x86-64, where the
 * compiler splits each vector in two). The same integer counts as the scalar
 * step: only the order in which the four words are processed differs. */
typedef uint64_t fastldp_u64x4 __attribute__((vector_size(32)));

/* Unaligned load and store of four words through a vector type of
 * alignment 8 that may alias anything (as GCC's own __m256i_u): one vector
 * load or store, never a copy through memory that a following vector load
 * would have to wait for. Macros, not functions: a vector argument or return
 * value would tie the ABI to the instruction set. */
typedef uint64_t fastldp_u64x4_unaligned __attribute__((vector_size(32), aligned(8), may_alias));
#define FASTLDP_LOAD4(v, p) ((v) = *(const fastldp_u64x4_unaligned *)(const void *)(p))
#define FASTLDP_STORE4(p, v) (*(fastldp_u64x4_unaligned *)(void *)(p) = (v))

#define FASTLDP_CSA4(high, low, a, b, c)             \
    do {                                             \
        fastldp_u64x4 u_ = (a) ^ (b);                \
        (high) = ((a) & (b)) | (u_ & (c));           \
        (low) = u_ ^ (c);                            \
    } while (0)

/* Whether any bit of a 4-word vector is set: an OR of its words, or with
 * AVX2 one vptest (the ripple below tests this once per plane it reaches). */
#define FASTLDP_ANY4(v) (((v)[0] | (v)[1] | (v)[2] | (v)[3]) != 0)
#if FASTLDP_HAVE_AVX2_PATH
#define FASTLDP_ANY4_AVX2(v) (!_mm256_testz_si256((__m256i)(v), (__m256i)(v)))
#endif

/* Adds sixteen 4-word vectors x[0..15] to the bit-sliced counts whose four
 * low planes start at w (one plane every stride words) and whose 16s carry
 * ripples into the planes above them (counts stay below 16 << nhigh);
 * any_ is FASTLDP_ANY4 or, in AVX2 code, FASTLDP_ANY4_AVX2. */
#define FASTLDP_ADD16_V4(x, w, stride, any_)                                                   \
    do {                                                                                   \
        fastldp_u64x4 ones, twos, fours, eights, twos_a, twos_b, fours_a, fours_b;         \
        fastldp_u64x4 eights_a, eights_b, carry;                                           \
        int l_;                                                                            \
        FASTLDP_LOAD4(ones, w);                                                       \
        FASTLDP_LOAD4(twos, w + stride);                                              \
        FASTLDP_LOAD4(fours, w + 2 * stride);                                         \
        FASTLDP_LOAD4(eights, w + 3 * stride);                                        \
        FASTLDP_CSA4(twos_a, ones, ones, x[0], x[1]);                                  \
        FASTLDP_CSA4(twos_b, ones, ones, x[2], x[3]);                                  \
        FASTLDP_CSA4(fours_a, twos, twos, twos_a, twos_b);                             \
        FASTLDP_CSA4(twos_a, ones, ones, x[4], x[5]);                                  \
        FASTLDP_CSA4(twos_b, ones, ones, x[6], x[7]);                                  \
        FASTLDP_CSA4(fours_b, twos, twos, twos_a, twos_b);                             \
        FASTLDP_CSA4(eights_a, fours, fours, fours_a, fours_b);                        \
        FASTLDP_CSA4(twos_a, ones, ones, x[8], x[9]);                                  \
        FASTLDP_CSA4(twos_b, ones, ones, x[10], x[11]);                                \
        FASTLDP_CSA4(fours_a, twos, twos, twos_a, twos_b);                             \
        FASTLDP_CSA4(twos_a, ones, ones, x[12], x[13]);                                \
        FASTLDP_CSA4(twos_b, ones, ones, x[14], x[15]);                                \
        FASTLDP_CSA4(fours_b, twos, twos, twos_a, twos_b);                             \
        FASTLDP_CSA4(eights_b, fours, fours, fours_a, fours_b);                        \
        FASTLDP_CSA4(carry, eights, eights, eights_a, eights_b);                       \
        FASTLDP_STORE4(w, ones);                                                       \
        FASTLDP_STORE4(w + stride, twos);                                              \
        FASTLDP_STORE4(w + 2 * stride, fours);                                         \
        FASTLDP_STORE4(w + 3 * stride, eights);                                        \
        /* the 16s ripple into the high planes; counts stay below 16 << nhigh */       \
        for (l_ = 4; ; ++l_) {                                                           \
            fastldp_u64x4 plane, next;                                                 \
            if (!any_(carry)) break;                                                   \
            FASTLDP_LOAD4(plane, (w) + l_ * (stride));                                     \
            next = plane & carry;                                                      \
            plane ^= carry;                                                            \
            FASTLDP_STORE4((w) + l_ * (stride), plane);                                     \
            carry = next;                                                              \
        }                                                                              \
    } while (0)

#define FASTLDP_COUNT_GROUP_V4_BODY(level_, any_)                                                    \
    {                                                                                      \
        int64_t stride = fastldp_count_stride(p);                                          \
        int64_t nblocks = (p + 255) >> 8;                                                  \
        int64_t b;                                                                         \
        int j;                                                                             \
        fastldp_u64x4 x[FASTLDP_COUNT_GROUP];                                              \
        fastldp_philox_block blk[FASTLDP_COUNT_GROUP];                                     \
        for (j = members; j < FASTLDP_COUNT_GROUP; ++j) x[j] = (fastldp_u64x4){0, 0, 0, 0};\
        for (b = 0; b < nblocks; ++b) {                                                    \
            uint64_t *w = planes + (b << 2);                                               \
            fastldp_pair_blocks(codebook, seed, ids, members, (uint64_t)b, blk, (level_));  \
            for (j = 0; j < members; ++j) {                                                \
                fastldp_u64x4 f = {flip[j], flip[j], flip[j], flip[j]};                    \
                x[j] = (fastldp_u64x4){blk[j].v[0], blk[j].v[1], blk[j].v[2], blk[j].v[3]} \
                       ^ f;                                                                \
            }                                                                              \
            FASTLDP_ADD16_V4(x, w, stride, any_);                                          \
        }                                                                                  \
    }

static inline void fastldp_count_group_v4(
    int codebook, uint64_t seed, const uint64_t *ids, const uint64_t *flip, int members,
    int64_t p, uint64_t *planes)
FASTLDP_COUNT_GROUP_V4_BODY(1, FASTLDP_ANY4)

#if defined(__x86_64__) || defined(__i386__)
#define FASTLDP_COUNT_AVX2 1
/* The same body compiled for AVX2, chosen at run time (never -march=native:
 * a wheel built with this runs on any x86-64 and takes this path only on a
 * CPU that has AVX2). */
__attribute__((target("avx2"))) static void fastldp_count_group_avx2(
    int codebook, uint64_t seed, const uint64_t *ids, const uint64_t *flip, int members,
    int64_t p, uint64_t *planes, int level)
FASTLDP_COUNT_GROUP_V4_BODY(level, FASTLDP_ANY4_AVX2)
#endif
#endif

#ifndef FASTLDP_COUNT_AVX2
#define FASTLDP_COUNT_AVX2 0
#endif

#if FASTLDP_HAVE_AVX2_PATH
/* The opt-in codebook (philox4x32-10) with AVX-512: the words go from the
 * generator's registers (fastldp_philox4x32_quad4_avx512: four identities,
 * blocks 4q .. 4q + 3) straight into a carry-save tree of 512-bit vectors
 * (three-input majority and XOR, one vpternlogq each), never through memory
 * (fastldp_count_ids_q4x32_avx512 below). The same integer counts as the
 * other steps. */
#define FASTLDP_CSA512(high, low, a, b, c)                           \
    do {                                                             \
        __m512i a_ = (a), b_ = (b), c_ = (c);                        \
        (high) = _mm512_ternarylogic_epi64(a_, b_, c_, 0xE8);        \
        (low) = _mm512_ternarylogic_epi64(a_, b_, c_, 0x96);         \
    } while (0)

/* Adds x[0..15] (eight words each) to the bit-sliced counts whose low plane
 * starts at w, one plane every stride words, in the words that `keep`
 * selects; the 16s carry ripples into the planes above the fourth (counts
 * stay below 16 << nhigh). */
#define FASTLDP_ADD16_512(x, w, stride, keep)                                              \
    do {                                                                                   \
        __m512i ones = _mm512_maskz_loadu_epi64((keep), (const void *)(w));                \
        __m512i twos = _mm512_maskz_loadu_epi64((keep), (const void *)((w) + (stride)));   \
        __m512i fours = _mm512_maskz_loadu_epi64((keep), (const void *)((w) + 2 * (stride))); \
        __m512i eights = _mm512_maskz_loadu_epi64((keep), (const void *)((w) + 3 * (stride))); \
        __m512i twos_a, twos_b, fours_a, fours_b, eights_a, eights_b, carry;               \
        int l_;                                                                            \
        FASTLDP_CSA512(twos_a, ones, ones, x[0], x[1]);                                    \
        FASTLDP_CSA512(twos_b, ones, ones, x[2], x[3]);                                    \
        FASTLDP_CSA512(fours_a, twos, twos, twos_a, twos_b);                               \
        FASTLDP_CSA512(twos_a, ones, ones, x[4], x[5]);                                    \
        FASTLDP_CSA512(twos_b, ones, ones, x[6], x[7]);                                    \
        FASTLDP_CSA512(fours_b, twos, twos, twos_a, twos_b);                               \
        FASTLDP_CSA512(eights_a, fours, fours, fours_a, fours_b);                          \
        FASTLDP_CSA512(twos_a, ones, ones, x[8], x[9]);                                    \
        FASTLDP_CSA512(twos_b, ones, ones, x[10], x[11]);                                  \
        FASTLDP_CSA512(fours_a, twos, twos, twos_a, twos_b);                               \
        FASTLDP_CSA512(twos_a, ones, ones, x[12], x[13]);                                  \
        FASTLDP_CSA512(twos_b, ones, ones, x[14], x[15]);                                  \
        FASTLDP_CSA512(fours_b, twos, twos, twos_a, twos_b);                               \
        FASTLDP_CSA512(eights_b, fours, fours, fours_a, fours_b);                          \
        FASTLDP_CSA512(carry, eights, eights, eights_a, eights_b);                         \
        _mm512_mask_storeu_epi64((void *)(w), (keep), ones);                               \
        _mm512_mask_storeu_epi64((void *)((w) + (stride)), (keep), twos);                  \
        _mm512_mask_storeu_epi64((void *)((w) + 2 * (stride)), (keep), fours);             \
        _mm512_mask_storeu_epi64((void *)((w) + 3 * (stride)), (keep), eights);            \
        for (l_ = 4; _mm512_mask_test_epi64_mask((keep), carry, carry) != 0; ++l_) {       \
            __m512i plane_ =                                                               \
                _mm512_maskz_loadu_epi64((keep), (const void *)((w) + l_ * (stride)));     \
            __m512i next_ = _mm512_and_si512(plane_, carry);                               \
            _mm512_mask_storeu_epi64((void *)((w) + l_ * (stride)), (keep),                \
                                     _mm512_xor_si512(plane_, carry));                     \
            carry = next_;                                                                 \
        }                                                                                  \
    } while (0)

/* The mask of the first `count` of eight 64-bit lanes (none for count <= 0). */
static inline __mmask8 fastldp_low_mask8(int64_t count)
{
    return count >= 8 ? (__mmask8)0xFF : count <= 0 ? (__mmask8)0 : (__mmask8)((1u << count) - 1u);
}

/* Words per bit plane in the layout of fastldp_count_ids_q4x32_avx512:
 * whole quads of blocks (16 words, 1024 positions), so that every quad's
 * words are stored unmasked (the words past p count bits never read back). */
static inline int64_t fastldp_count_stride_q4x32(int64_t p)
{
    return ((p + 1023) >> 10) << 4;
}

/* Where fastldp_count_ids_q4x32_avx512 keeps logical word wi (positions
 * 64 wi .. 64 wi + 63): in the generator's lane order, so that its words go
 * into the carry-save tree without a permute. Within a quad, the vector lo
 * (words 0-7) has in lane 2k + h word 2h of block k, and hi (words 8-15)
 * word 2h + 1: logical word 4k + 2h + r is at 8r + 2k + h. */
static inline int64_t fastldp_count_word_q4x32(int64_t wi)
{
    int l = (int)(wi & 15);
    return (wi & ~(int64_t)15) + 8 * (l & 1) + 2 * (l >> 2) + ((l >> 1) & 1);
}

/* Carry-save adder into an accumulator: (high, acc) = acc + b + c bitwise,
 * the sum bit first and the carry as a function of (b, c, sum): carry =
 * maj(acc, b, c) = maj(sum ^ b ^ c, b, c), which is b where b = c and
 * ~sum elsewhere (vpternlogq table 0xD4). Both results then overwrite
 * inputs that die here (acc, and b or c), where computing both from (acc,
 * b, c) needs a copy of one input (vpternlogq overwrites its first). */
#define FASTLDP_CSA512_ACC(high, acc, b, c)                                 \
    do {                                                                   \
        __m512i b_ = (b), c_ = (c);                                        \
        (acc) = _mm512_ternarylogic_epi64((acc), b_, c_, 0x96);            \
        (high) = _mm512_ternarylogic_epi64(b_, c_, (acc), 0xD4);           \
    } while (0)

/* One carry-save step of the in-register counters: a batch of the
 * generator's four identities (x[0..3], one quad of words each) into
 * (ones, twos), handing up one fours vector. */
#define FASTLDP_Q4X32_BATCH(fours_out, ones, twos, x)                      \
    do {                                                                   \
        __m512i twos_a_, twos_b_;                                          \
        FASTLDP_CSA512_ACC(twos_a_, ones, (x)[0], (x)[1]);                 \
        FASTLDP_CSA512_ACC(twos_b_, ones, (x)[2], (x)[3]);                 \
        FASTLDP_CSA512_ACC(fours_out, twos, twos_a_, twos_b_);             \
    } while (0)

/* Sixteen identities (four generator calls) of one quad into the
 * in-register counters (ones .. eights of the lo and hi words), handing
 * up their 16s vectors; ids[0 .. valid) count, the other lanes are zeroed
 * (a ragged last group). Inlined into its caller with valid = 16 as a
 * constant on the main path. */
__attribute__((target("avx512f"), always_inline)) static inline void fastldp_q4x32_group16(
    uint64_t seed, const uint64_t *ids, int valid, uint64_t q, __m512i *ones_l, __m512i *twos_l,
    __m512i *fours_l, __m512i *eights_l, __m512i *ones_h, __m512i *twos_h, __m512i *fours_h,
    __m512i *eights_h, __m512i *sixteens_l, __m512i *sixteens_h)
{
    __m512i lo[FASTLDP_PHILOX32Q_STATES], hi[FASTLDP_PHILOX32Q_STATES];
    __m512i fa_l, fa_h, fb_l, fb_h, ea_l, ea_h, eb_l, eb_h;
    /* generator call c: identities 4c .. 4c + 3, the padding ones zeroed
     * (a call with none to count is skipped) */
#define FASTLDP_Q4X32_GENERATE(c)                                                  \
    do {                                                                           \
        int s_;                                                                    \
        if (valid == 16 || 4 * (c) < valid) {                                      \
            fastldp_philox4x32_quad4_avx512(seed, ids + 4 * (c), q, lo, hi);       \
        }                                                                          \
        for (s_ = 0; valid < 16 && s_ < FASTLDP_PHILOX32Q_STATES; ++s_) {          \
            if (4 * (c) + s_ >= valid) {                                           \
                lo[s_] = _mm512_setzero_si512();                                   \
                hi[s_] = _mm512_setzero_si512();                                   \
            }                                                                      \
        }                                                                          \
    } while (0)
    FASTLDP_Q4X32_GENERATE(0);
    FASTLDP_Q4X32_BATCH(fa_l, *ones_l, *twos_l, lo);
    FASTLDP_Q4X32_BATCH(fa_h, *ones_h, *twos_h, hi);
    FASTLDP_Q4X32_GENERATE(1);
    FASTLDP_Q4X32_BATCH(fb_l, *ones_l, *twos_l, lo);
    FASTLDP_Q4X32_BATCH(fb_h, *ones_h, *twos_h, hi);
    FASTLDP_CSA512_ACC(ea_l, *fours_l, fa_l, fb_l);
    FASTLDP_CSA512_ACC(ea_h, *fours_h, fa_h, fb_h);
    FASTLDP_Q4X32_GENERATE(2);
    FASTLDP_Q4X32_BATCH(fa_l, *ones_l, *twos_l, lo);
    FASTLDP_Q4X32_BATCH(fa_h, *ones_h, *twos_h, hi);
    FASTLDP_Q4X32_GENERATE(3);
    FASTLDP_Q4X32_BATCH(fb_l, *ones_l, *twos_l, lo);
    FASTLDP_Q4X32_BATCH(fb_h, *ones_h, *twos_h, hi);
    FASTLDP_CSA512_ACC(eb_l, *fours_l, fa_l, fb_l);
    FASTLDP_CSA512_ACC(eb_h, *fours_h, fa_h, fb_h);
    FASTLDP_CSA512_ACC(*sixteens_l, *eights_l, ea_l, eb_l);
    FASTLDP_CSA512_ACC(*sixteens_h, *eights_h, ea_h, eb_h);
#undef FASTLDP_Q4X32_GENERATE
}

/* Adds the m identities ids[0 .. m) (philox4x32-10, SIMD level 3) to the
 * bit-sliced counts of their bits at the p positions: planes of `stride`
 * (fastldp_count_stride_q4x32(p)) words each, words in the order of
 * fastldp_count_word_q4x32, enough planes for every count they will reach.
 *
 * Quad by quad, the identities run through a two-level carry-save tree:
 * the four low planes stay in registers for the whole run of identities
 * (loaded once and stored once per call and quad), their 16s carries of
 * sixteen groups of sixteen identities are added to planes 4 .. 7 by
 * FASTLDP_ADD16_512, and only that tree's 256s carry ripples on in a loop
 * whose length depends on the data (once per 256 identities, not per 16:
 * the ripple's mispredicted exit and its loads and stores were a third of
 * the counting's cost). The words go from the generator's registers into
 * the tree in the generator's lane order (no permutes). The same integer
 * counts as the other steps. */
__attribute__((target("avx512f"))) static void fastldp_count_ids_q4x32_avx512(
    uint64_t seed, const uint64_t *ids, int64_t m, int64_t p, int64_t stride, uint64_t *planes)
{
    int64_t nquads = (p + 1023) >> 10;
    int64_t q, j;
    __m512i sixteens_l[FASTLDP_COUNT_GROUP], sixteens_h[FASTLDP_COUNT_GROUP];
    for (q = 0; q < nquads; ++q) {
        uint64_t *w = planes + 16 * q;
        __m512i ones_l = _mm512_loadu_si512((const void *)w);
        __m512i ones_h = _mm512_loadu_si512((const void *)(w + 8));
        __m512i twos_l = _mm512_loadu_si512((const void *)(w + stride));
        __m512i twos_h = _mm512_loadu_si512((const void *)(w + stride + 8));
        __m512i fours_l = _mm512_loadu_si512((const void *)(w + 2 * stride));
        __m512i fours_h = _mm512_loadu_si512((const void *)(w + 2 * stride + 8));
        __m512i eights_l = _mm512_loadu_si512((const void *)(w + 3 * stride));
        __m512i eights_h = _mm512_loadu_si512((const void *)(w + 3 * stride + 8));
        for (j = 0; j < m;) {
            int g = 0;
            for (; g < FASTLDP_COUNT_GROUP && j + 16 <= m; ++g, j += 16) {
                fastldp_q4x32_group16(seed, ids + j, 16, (uint64_t)q, &ones_l, &twos_l,
                                      &fours_l, &eights_l, &ones_h, &twos_h, &fours_h,
                                      &eights_h, &sixteens_l[g], &sixteens_h[g]);
            }
            if (g < FASTLDP_COUNT_GROUP && j < m) {
                /* the ragged last group: its padding lanes add zeros */
                uint64_t padded[16];
                int valid = (int)(m - j), t;
                for (t = 0; t < 16; ++t) padded[t] = t < valid ? ids[j + t] : 0;
                fastldp_q4x32_group16(seed, padded, valid, (uint64_t)q, &ones_l, &twos_l,
                                      &fours_l, &eights_l, &ones_h, &twos_h, &fours_h,
                                      &eights_h, &sixteens_l[g], &sixteens_h[g]);
                ++g;
                j = m;
            }
            for (; g < FASTLDP_COUNT_GROUP; ++g) {
                sixteens_l[g] = _mm512_setzero_si512();
                sixteens_h[g] = _mm512_setzero_si512();
            }
            FASTLDP_ADD16_512(sixteens_l, w + 4 * stride, stride, (__mmask8)0xFF);
            FASTLDP_ADD16_512(sixteens_h, w + 4 * stride + 8, stride, (__mmask8)0xFF);
        }
        _mm512_storeu_si512((void *)w, ones_l);
        _mm512_storeu_si512((void *)(w + 8), ones_h);
        _mm512_storeu_si512((void *)(w + stride), twos_l);
        _mm512_storeu_si512((void *)(w + stride + 8), twos_h);
        _mm512_storeu_si512((void *)(w + 2 * stride), fours_l);
        _mm512_storeu_si512((void *)(w + 2 * stride + 8), fours_h);
        _mm512_storeu_si512((void *)(w + 3 * stride), eights_l);
        _mm512_storeu_si512((void *)(w + 3 * stride + 8), eights_h);
    }
}

/* Identities per batch handed to fastldp_count_ids_q4x32_avx512 by the
 * sign splits: a whole 256-identity run of its two-level tree. */
#define FASTLDP_COUNT_Q4X32_BATCH 256

/* Moves ids[limit .. *count) to the front after the first `limit` were
 * counted. */
static inline void fastldp_count_q4x32_shift(uint64_t *ids, int *count, int limit)
{
    int j;
    for (j = limit; j < *count; ++j) ids[j - limit] = ids[j];
    *count -= limit;
}

/* out[e] += base - 2 * count_pos(e) + 2 * count_neg(e) for e in [0, p), the
 * counts read from nplanes <= 30 planes of each set (words in the order of
 * fastldp_count_word_q4x32; counts below 2^30 and |value| <= n_chunk, so the
 * arithmetic fits 32 bits). Sixteen positions at a time: each plane's 16
 * bits are a mask that ORs the plane's bit value into the lanes; the
 * integers convert exactly to doubles. */
__attribute__((target("avx512f"))) static void fastldp_count_readback_q4x32_avx512(
    const uint64_t *pos_planes, const uint64_t *neg_planes, int nplanes, int64_t stride,
    int64_t p, int64_t base, double *out)
{
    const __m512i base_vec = _mm512_set1_epi32((int)base);
    int64_t pos;
    int l;
    for (pos = 0; pos < p; pos += 16) {
        int64_t left = p - pos;
        int64_t word = fastldp_count_word_q4x32(pos >> 6);
        int shift = (int)(pos & 63);
        __m512i count_pos = _mm512_setzero_si512(), count_neg = _mm512_setzero_si512(), value;
        __mmask8 keep_lo = fastldp_low_mask8(left), keep_hi = fastldp_low_mask8(left - 8);
        for (l = 0; l < nplanes; ++l) {
            __m512i bit = _mm512_set1_epi32(1 << l);
            __mmask16 in_pos = (__mmask16)(pos_planes[(int64_t)l * stride + word] >> shift);
            __mmask16 in_neg = (__mmask16)(neg_planes[(int64_t)l * stride + word] >> shift);
            count_pos = _mm512_mask_or_epi32(count_pos, in_pos, count_pos, bit);
            count_neg = _mm512_mask_or_epi32(count_neg, in_neg, count_neg, bit);
        }
        value = _mm512_add_epi32(base_vec,
                                 _mm512_slli_epi32(_mm512_sub_epi32(count_neg, count_pos), 1));
        _mm512_mask_storeu_pd(out + pos, keep_lo,
                              _mm512_add_pd(_mm512_maskz_loadu_pd(keep_lo, out + pos),
                                            _mm512_cvtepi32_pd(_mm512_castsi512_si256(value))));
        if (keep_hi) {
            _mm512_mask_storeu_pd(out + pos + 8, keep_hi,
                                  _mm512_add_pd(_mm512_maskz_loadu_pd(keep_hi, out + pos + 8),
                                                _mm512_cvtepi32_pd(
                                                    _mm512_extracti64x4_epi64(value, 1))));
        }
    }
}
#endif

/* Adds one group of up to FASTLDP_COUNT_GROUP identities to the bit-sliced
 * counts (see fastldp_count_group_scalar), with the fastest step the CPU
 * runs. Shared by the float (jprs_sketch) and the integer (jprs_fixed)
 * counting paths. */
static inline void fastldp_count_group(
    int codebook, uint64_t seed, const uint64_t *ids, const uint64_t *flip, int members,
    int64_t p, uint64_t *planes, int level)
{
#if FASTLDP_HAVE_BUILTINS
#if FASTLDP_COUNT_AVX2
    if (level >= 2) {
        fastldp_count_group_avx2(codebook, seed, ids, flip, members, p, planes, level);
        return;
    }
#endif
    if (level >= 1) {
        fastldp_count_group_v4(codebook, seed, ids, flip, members, p, planes);
        return;
    }
#endif
    (void)level;
    fastldp_count_group_scalar(codebook, seed, ids, flip, members, p, planes);
}

/* Whether w_i < 0 for the source's weight w_i, as fastldp_source_weight(src,
 * i) < 0.0 says, without its tanh where the sign is plain: w_i = (scale *
 * tanh(u)) * bits_i with u = eps_i / 2, and tanh(u) has the sign of u, is 0
 * only at u = 0 and is at least 0.92 * min(|u|, 0.5) in magnitude, so when
 * |scale| * min(|u|, 0.5) > 1e-300 the product is a nonzero number whose
 * sign is sign(scale) sign(u) sign(bits_i) (bits_i = 0 gives +-0 or NaN:
 * not negative). Zero, NaN and tiny cases take the tanh. (128,000 tanh
 * calls cost about as much as the opt-in codebook's whole count.) */
static inline int fastldp_source_negative(const fastldp_sketch_source *src, int64_t i)
{
    if (src->weights == NULL) {
        double u = 0.5 * src->eps[i];
        double a = fabs(u);
        if (a > 0.0 && fabs(src->scale) * (a < 0.5 ? a : 0.5) > 1e-300) {
            int bits = src->bits[i];
            return ((src->scale < 0.0) != (u < 0.0)) ? bits > 0 : bits < 0;
        }
    }
    return fastldp_source_weight(src, i) < 0.0;
}

#if FASTLDP_HAVE_AVX2_PATH
/* fastldp_sign_count_range for the opt-in codebook at SIMD level 3: the
 * identities split by sign (fastldp_source_negative: the sign without tanh)
 * into two plane sets counted by fastldp_count_ids_q4x32_avx512, as
 * fastldp_fixed_count_range_q4x32 does for integer weights, read back in
 * vectors. Returns 0, or -1 (nothing added) when the planes cannot be
 * allocated or the counts need more than 30 planes. */
__attribute__((target("avx512f"))) static int fastldp_sign_count_range_q4x32(
    const fastldp_sketch_source *src, int64_t start, int64_t stop, int nplanes, double *out)
{
    int64_t p = src->p;
    int64_t stride = fastldp_count_stride_q4x32(p);
    int64_t negatives = 0, i;
    int npos = 0, nneg = 0;
    uint64_t pos[FASTLDP_COUNT_Q4X32_BATCH], neg[FASTLDP_COUNT_Q4X32_BATCH];
    uint64_t *planes, *neg_planes;
    if (nplanes > 30) return -1;
    planes = (uint64_t *)calloc((size_t)2 * (size_t)nplanes * (size_t)stride, sizeof(uint64_t));
    if (planes == NULL) return -1;
    neg_planes = planes + (int64_t)nplanes * stride;
    for (i = start; i < stop; ++i) {
        /* branch-free: the signs are random, a branch on them would be
         * mispredicted for every other identity */
        uint64_t id = fastldp_source_identity(src, i);
        int negative = fastldp_source_negative(src, i);
        pos[npos] = id;
        neg[nneg] = id;
        npos += 1 - negative;
        nneg += negative;
        if (npos == FASTLDP_COUNT_Q4X32_BATCH) {
            fastldp_count_ids_q4x32_avx512(src->seed, pos, npos, p, stride, planes);
            npos = 0;
        }
        if (nneg == FASTLDP_COUNT_Q4X32_BATCH) {
            fastldp_count_ids_q4x32_avx512(src->seed, neg, nneg, p, stride, neg_planes);
            negatives += nneg;
            nneg = 0;
        }
    }
    if (npos) fastldp_count_ids_q4x32_avx512(src->seed, pos, npos, p, stride, planes);
    if (nneg) fastldp_count_ids_q4x32_avx512(src->seed, neg, nneg, p, stride, neg_planes);
    negatives += nneg;
    fastldp_count_readback_q4x32_avx512(planes, neg_planes, nplanes, stride, p,
                                        (stop - start) - 2 * negatives, out);
    free(planes);
    return 0;
}
#endif

/* out[e] += (#identities - 2 * #{i : bit_i(e) XOR [w_i < 0]}) over [start, stop),
 * the sign of w_i taken from the source. If the bit planes cannot be
 * allocated it adds the same integers one identity at a time (slowly). */
static inline void fastldp_sign_count_range(
    const fastldp_sketch_source *src, int64_t start, int64_t stop, double *out)
{
    int64_t p = src->p;
    int64_t n_chunk = stop - start;
    int64_t nwords = (p + 63) >> 6;
    int64_t stride = fastldp_count_stride(p);
    int level = fastldp_simd_level();
    int nhigh = 1, nplanes;
    int64_t g0, wi, t;
    int j, members;
    uint64_t *planes;
    uint64_t flip[FASTLDP_COUNT_GROUP];
    uint64_t ids[FASTLDP_COUNT_GROUP];

    /* counts reach n_chunk: 4 low planes plus enough 16s planes */
    while (((int64_t)16 << nhigh) <= n_chunk && nhigh < FASTLDP_COUNT_PLANES) ++nhigh;
    nplanes = 4 + nhigh;
#if FASTLDP_HAVE_AVX2_PATH
    /* the opt-in codebook with AVX-512: the same integers, added to out in
     * the same order (one exact integer per position and chunk) */
    if (src->codebook == FASTLDP_CODEBOOK_PHILOX4X32 && level >= 3 &&
        fastldp_sign_count_range_q4x32(src, start, stop, nplanes, out) == 0) {
        return;
    }
#endif
    planes = (uint64_t *)calloc((size_t)(nplanes * stride), sizeof(uint64_t));
    if (planes == NULL) {
        for (g0 = start; g0 < stop; ++g0) {
            double sign = fastldp_source_weight(src, g0) < 0.0 ? -1.0 : 1.0;
            uint64_t id = fastldp_source_identity(src, g0);
            for (t = 0; t < p; ++t) out[t] += sign * (double)fastldp_pair_sign_cb(src->codebook, src->seed, id, t);
        }
        return;
    }

    for (g0 = start; g0 < stop; g0 += FASTLDP_COUNT_GROUP) {
        members = (int)(stop - g0 < FASTLDP_COUNT_GROUP ? stop - g0 : FASTLDP_COUNT_GROUP);
        for (j = 0; j < FASTLDP_COUNT_GROUP; ++j) {
            int negative = j < members && fastldp_source_weight(src, g0 + j) < 0.0;
            flip[j] = negative ? ~0ULL : 0ULL;
            ids[j] = (j < members) ? fastldp_source_identity(src, g0 + j) : 0;
        }
        fastldp_count_group(src->codebook, src->seed, ids, flip, members, p, planes, level);
    }
    for (wi = 0; wi < nwords; ++wi) {
        int64_t limit = p - (wi << 6) < 64 ? p - (wi << 6) : 64;
        for (t = 0; t < limit; ++t) {
            out[(wi << 6) + t] += (double)(n_chunk - 2 * fastldp_plane_count(planes, nplanes,
                                                                            stride, wi, (int)t));
        }
    }
    free(planes);
}

#endif
