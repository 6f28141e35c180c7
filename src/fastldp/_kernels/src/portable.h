/*
 * The three bit operations fastldp needs beyond ISO C, written once:
 *
 *   fastldp_mul64x64_128(a, b, &hi)  low 64 bits of a * b, high 64 in *hi
 *   fastldp_ctz32(x)                 trailing zero bits of x (x != 0)
 *   fastldp_popcount64(x)            number of one bits of x
 *
 * GCC and Clang get their builtins (__uint128_t, __builtin_ctz,
 * __builtin_popcountll). Every other compiler - MSVC in particular, which
 * has none of them - gets the plain C below, which gives the same results
 * (the 128-bit product exactly, the others trivially). Building with
 * FASTLDP_PORTABLE defined (setup.py does it for FASTLDP_PORTABLE=1) forces
 * the plain C on GCC and Clang too; CI builds and tests the kernels that
 * way, so the fallback is tested, not assumed.
 *
 * FASTLDP_PORTABLE_C is 1 when the plain C is in use, 0 otherwise.
 */
#ifndef FASTLDP_PORTABLE_H
#define FASTLDP_PORTABLE_H

#include <stdint.h>

#if !defined(FASTLDP_PORTABLE) && !defined(_MSC_VER) && (defined(__GNUC__) || defined(__clang__))
#define FASTLDP_HAVE_BUILTINS 1
#else
#define FASTLDP_HAVE_BUILTINS 0
#endif

#if FASTLDP_HAVE_BUILTINS && defined(__SIZEOF_INT128__)
#define FASTLDP_HAVE_UINT128 1
#else
#define FASTLDP_HAVE_UINT128 0
#endif

#if FASTLDP_HAVE_BUILTINS && FASTLDP_HAVE_UINT128
#define FASTLDP_PORTABLE_C 0
#else
#define FASTLDP_PORTABLE_C 1
#endif

/* Full 64 x 64 -> 128-bit product: returns the low word, stores the high. */
static inline uint64_t fastldp_mul64x64_128(uint64_t a, uint64_t b, uint64_t *hi)
{
#if FASTLDP_HAVE_UINT128
    __uint128_t product = (__uint128_t)a * (__uint128_t)b;
    *hi = (uint64_t)(product >> 64);
    return (uint64_t)product;
#else
    /* Schoolbook on 32-bit halves; every partial product fits in 64 bits
     * and the middle sum (<= 3 * (2^32 - 1)) cannot overflow. */
    uint64_t a_lo = a & 0xFFFFFFFFULL, a_hi = a >> 32;
    uint64_t b_lo = b & 0xFFFFFFFFULL, b_hi = b >> 32;
    uint64_t p00 = a_lo * b_lo;
    uint64_t p01 = a_lo * b_hi;
    uint64_t p10 = a_hi * b_lo;
    uint64_t p11 = a_hi * b_hi;
    uint64_t mid = (p00 >> 32) + (p01 & 0xFFFFFFFFULL) + (p10 & 0xFFFFFFFFULL);
    *hi = p11 + (p01 >> 32) + (p10 >> 32) + (mid >> 32);
    return (mid << 32) | (p00 & 0xFFFFFFFFULL);
#endif
}

/* Number of trailing zero bits of x; x must be nonzero (as for the builtin;
 * the plain C returns 32 for x == 0). */
static inline int fastldp_ctz32(uint32_t x)
{
#if FASTLDP_HAVE_BUILTINS
    return __builtin_ctz((unsigned)x);
#else
    int n = 0;
    if (x == 0) return 32;
    if ((x & 0xFFFFu) == 0) { n += 16; x >>= 16; }
    if ((x & 0xFFu) == 0) { n += 8; x >>= 8; }
    if ((x & 0xFu) == 0) { n += 4; x >>= 4; }
    if ((x & 0x3u) == 0) { n += 2; x >>= 2; }
    if ((x & 0x1u) == 0) { n += 1; }
    return n;
#endif
}

/* Number of one bits of x. */
static inline int fastldp_popcount64(uint64_t x)
{
#if FASTLDP_HAVE_BUILTINS
    return __builtin_popcountll((unsigned long long)x);
#else
    /* SWAR count (Hacker's Delight, 5-1). */
    x = x - ((x >> 1) & 0x5555555555555555ULL);
    x = (x & 0x3333333333333333ULL) + ((x >> 2) & 0x3333333333333333ULL);
    x = (x + (x >> 4)) & 0x0F0F0F0F0F0F0F0FULL;
    return (int)((x * 0x0101010101010101ULL) >> 56);
#endif
}

#endif
