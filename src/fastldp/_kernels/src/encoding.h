/*
 * Summation histogram encoding (SHE): the client's Laplace-noised one-hot
 * rows and the server's exact column sums.
 *
 * Client. Row r of a call is e_v + b_r * Lap(1) on each of its D entries.
 * Entry j takes word j & 3 of the Philox4x64-10 block keyed by (k0, k1), a
 * key the caller draws from its Generator, at counter (j >> 2, r,
 * FASTLDP_SHE_STREAM, 0): a row depends on the key and the row index only,
 * never on the thread. A word w becomes a standard Laplace variate by the
 * inverse CDF, as fastldp.oracles.histogram_encoding._laplace_from_words
 * does in NumPy (the same operations but for the logarithm, below):
 *
 *     u = min(((w >> 11) + 0.5) 2^-53, 1 - 2^-53),  t = u - 0.5,
 *     L = -sign(t) log1p(-2 |t|)
 *
 * (the cap only moves the top word's u, whose sum rounds to 1, below 1).
 * The logarithm is fdlibm's, written without branches (fastldp_she_log), so
 * that the conversion of a row's words vectorizes; it is within one unit in
 * the last place of libm's log1p, which the NumPy mapping calls. Compilers
 * that contract a * b + c into a fused multiply-add (GCC on targets with
 * FMA: aarch64, -march=native) may round the polynomial differently in the
 * last place; the x86-64 builds (SSE2 and the AVX2 clone) do not contract.
 *
 * Server. The exact sum, per column, of doubles that the sanitization has
 * bounded (|y| < 2^beta for every summed entry; beta comes from the public
 * bounds). Each entry is split without error into FASTLDP_SHE_LEVELS = 2
 * parts on fixed grids (Rump, Ogita and Oishi's ExtractScalar): with
 * sigma_k = 1.5 * 2^p_k,
 *
 *     h_k = (sigma_k + r_{k-1}) - sigma_k,   r_k = r_{k-1} - h_k,   r_0 = y,
 *
 * h_k is r_{k-1} rounded to a multiple of u_k = 2^(p_k - 52), both
 * operations are exact, and |r_k| <= u_k / 2. With blocks of m = 2^9 rows,
 * p_1 = beta + 9 + 1 and p_{k+1} = p_k - (52 - 9), every level of a block
 * sums in a double without rounding: its m terms are multiples of u_k of at
 * most 2^(p_k - 10) + u_k / 2, so every partial sum is a multiple of u_k
 * below 2^52 u_k. At the end of a block each level's sum is added, as an
 * integer times u_k, to 32-bit digits at the global places 2^(32 k) (the
 * layout of fastldp._kernels._exact, so fastldp.streaming.ExactSum takes
 * them as they are). The last grid's unit is 2^(beta - 85): an entry with
 * bits below it (an entry below about 2^(beta - 33), a subnormal; for
 * Laplace noise of scale b, a fraction of about 2^(beta - 33) / b of the
 * entries, 2^-22 at b = 2) leaves a nonzero remainder r_2; the pass over
 * eight rows ORs each row's |r_2| bits, and a row with a nonzero word has
 * its remainders added to the digits one by one from their bits (one more
 * pass over that row only). Integer addition is associative, so the digits
 * do not depend on how rows are split among threads; the caller adds the
 * threads' digits and normalizes.
 *
 * The legality check of the sanitization (every entry of a row finite and in
 * [lo_r, hi_r]) runs on a row just before the row is summed, so the reports
 * are read from memory once; an illegal row is left out and flagged.
 *
 * Floating point: the splitting needs round-to-nearest and no reassociation
 * (no -ffast-math). A weighted entry y = x w is formed in a row buffer by a
 * loop of its own, so that no compiler contracts it into sigma + x w.
 */
#ifndef FASTLDP_ENCODING_H
#define FASTLDP_ENCODING_H

#include <math.h>
#include <stdint.h>
#include <string.h>
#include "philox.h"

#define FASTLDP_SHE_STREAM 0x534845ULL /* "SHE" */
#define FASTLDP_SHE_LEVELS 2
#define FASTLDP_SHE_BLOCK_LOG2 9
#define FASTLDP_SHE_BLOCK_ROWS (1 << FASTLDP_SHE_BLOCK_LOG2)
#define FASTLDP_SHE_LEVEL_BITS (52 - FASTLDP_SHE_BLOCK_LOG2)
/* Digit rows 2^(32 k), k in [K_LO, K_LO + ROWS): every finite double and the
 * carries of any realistic number of terms (as _exact's FULL_K_LO / FULL_ROWS). */
#define FASTLDP_SHE_K_LO (-34)
#define FASTLDP_SHE_ROWS 70
/* Carry the digits back into [0, 2^32) after this many blocks: a block adds
 * at most FASTLDP_SHE_BLOCK_ROWS + FASTLDP_SHE_LEVELS numbers below 2^32 to a
 * digit, far from the 2^63 of an int64. */
#define FASTLDP_SHE_NORMALIZE_BLOCKS (1 << 20)

#define FASTLDP_SHE_GROUP_ROWS 8 /* rows summed together: the level sums stay in registers */

#if defined(_MSC_VER)
#define FASTLDP_SHE_RESTRICT __restrict
#elif defined(__GNUC__) || defined(__clang__)
#define FASTLDP_SHE_RESTRICT __restrict__
#else
#define FASTLDP_SHE_RESTRICT
#endif

#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && defined(__GLIBC__) \
    && !defined(FASTLDP_PORTABLE)
/* "avx2" does not enable FMA, so nothing here can be contracted. */
#define FASTLDP_SHE_CLONES __attribute__((target_clones("avx2", "default")))
#else
#define FASTLDP_SHE_CLONES
#endif

/* ------------------------------------------------------------------ client */

static inline double fastldp_she_bits_double(uint64_t b)
{
    double d;
    memcpy(&d, &b, 8);
    return d;
}

static inline uint64_t fastldp_she_double_bits(double d)
{
    uint64_t b;
    memcpy(&b, &d, 8);
    return b;
}

/* ln(x) for a normal x > 0: the algorithm of fdlibm's e_log.c (Sun
 * Microsystems, 1993; error below 1 ulp), its branches replaced by selects
 * so that compilers vectorize a loop of it. x = 2^k (1 + f) with 1 + f in
 * [sqrt(2)/2, sqrt(2)), s = f / (2 + f), and ln(1 + f) = f - s (f - R(s^2))
 * with fdlibm's polynomial R; fdlibm's two final forms are both computed and
 * the same one is kept. */
static inline double fastldp_she_log(double x)
{
    const double ln2_hi = 6.93147180369123816490e-01, ln2_lo = 1.90821492927058770002e-10;
    const double Lg1 = 6.666666666666735130e-01, Lg2 = 3.999999999940941908e-01;
    const double Lg3 = 2.857142874366239149e-01, Lg4 = 2.222219843214978396e-01;
    const double Lg5 = 1.818357216161805012e-01, Lg6 = 1.531383769920937332e-01;
    const double Lg7 = 1.479819860511658591e-01;
    const double two52 = 4503599627370496.0;
    uint64_t ix = fastldp_she_double_bits(x);
    uint64_t hx = (ix >> 32) & 0x000fffffULL;
    uint64_t i = (hx + 0x95f64ULL) & 0x100000ULL;
    /* k + 1023 from the exponent bits, as a double by the 2^52 trick */
    uint64_t kb = (ix >> 52) + (i >> 20);
    double dk = fastldp_she_bits_double(0x4330000000000000ULL | kb) - (two52 + 1023.0);
    double f = fastldp_she_bits_double(((hx | (i ^ 0x3ff00000ULL)) << 32) | (ix & 0xffffffffULL))
               - 1.0;
    double s = f / (2.0 + f);
    double z = s * s, w = z * z;
    double t1 = w * (Lg2 + w * (Lg4 + w * Lg6));
    double t2 = z * (Lg1 + w * (Lg3 + w * (Lg5 + w * Lg7)));
    double R = t2 + t1;
    double hfsq = 0.5 * f * f;
    double a = dk * ln2_hi - ((hfsq - (s * (hfsq + R) + dk * ln2_lo)) - f);
    double b = dk * ln2_hi - ((s * (f - R) - dk * ln2_lo) - f);
    /* fdlibm's choice of form, as a mask: hx in (0x6147a, 0x6b851) takes a */
    int64_t form = ((int64_t)hx - 0x6147a) | (0x6b851 - (int64_t)hx);
    uint64_t take_a = (uint64_t)0 - (uint64_t)(form > 0);
    return fastldp_she_bits_double((fastldp_she_double_bits(a) & take_a)
                                   | (fastldp_she_double_bits(b) & ~take_a));
}

/* The standard Laplace variate of a 64-bit word: the module's NumPy mapping,
 * -sign(t) log1p(-2 |t|), computed as -sign(t) ln(1 - 2 |t|). The argument
 * 1 - 2 |t| = 2 min(u, 1 - u) is exact, so the two agree to within the
 * logarithms' rounding (one unit in the last place). Every step is a select
 * or an integer operation, so loops of it vectorize: (w >> 11) becomes a
 * double through two 2^52 tricks (no 64-bit conversion instruction needed). */
static inline double fastldp_she_laplace(uint64_t w)
{
    const double two52 = 4503599627370496.0;
    uint64_t v = w >> 11;
    double hi = fastldp_she_bits_double(0x4330000000000000ULL | (v >> 32)) - two52;
    double lo = fastldp_she_bits_double(0x4330000000000000ULL | (v & 0xffffffffULL)) - two52;
    double u = ((hi * 4294967296.0 + lo) + 0.5) * (1.0 / 9007199254740992.0); /* 2^-53 */
    uint64_t ub = fastldp_she_double_bits(u);
    uint64_t flip;
    double t;
    /* u <= 1; u = 1 (the top word's sum rounds to 2^53) becomes 1 - 2^-53: no infinite variate */
    ub -= (uint64_t)(ub == 0x3FF0000000000000ULL);
    t = fastldp_she_bits_double(ub) - 0.5;
    /* the sign: -sign(t), with t = 0 giving +0 (ln 1 = +0), as NumPy's sign(0) = 0 does */
    flip = (uint64_t)(t > 0.0) << 63;
    return fastldp_she_bits_double(fastldp_she_double_bits(fastldp_she_log(1.0 - 2.0 * fabs(t)))
                                   ^ flip);
}

/* The D words of row `row`, stored as their bits in out[0 .. D). */
static void fastldp_she_row_words(uint64_t k0, uint64_t k1, uint64_t row, int64_t D, double *out)
{
    int64_t j = 0;
    uint64_t c = 0;
    fastldp_philox_block blk;
    for (; j + 4 <= D; j += 4, ++c) {
        blk = fastldp_philox4x64_10(c, row, FASTLDP_SHE_STREAM, 0, k0, k1);
        memcpy(out + j, blk.v, 4 * sizeof(uint64_t));
    }
    if (j < D) {
        blk = fastldp_philox4x64_10(c, row, FASTLDP_SHE_STREAM, 0, k0, k1);
        memcpy(out + j, blk.v, (size_t)(D - j) * sizeof(uint64_t));
    }
}

/* out[j] (a word's bits) becomes scale * Lap(word), in place. */
FASTLDP_SHE_CLONES static void fastldp_she_words_to_laplace(double *out, int64_t D, double scale)
{
    int64_t j;
    for (j = 0; j < D; ++j) out[j] = fastldp_she_laplace(fastldp_she_double_bits(out[j])) * scale;
}

/* Row `row` of the reports: scale * Lap(1) on every entry, plus 1 at v (v < 0: none). */
static void fastldp_she_perturb_row(uint64_t k0, uint64_t k1, uint64_t row, int64_t D, int64_t v,
                                    double scale, double *out)
{
    fastldp_she_row_words(k0, k1, row, D, out);
    fastldp_she_words_to_laplace(out, D, scale);
    if (v >= 0) out[v] += 1.0; /* a separate rounding, after the product was stored */
}

/* The client's floor for one row: its D Philox words and one logarithm each
 * (the variates, unscaled, in scratch), summed. */
static double fastldp_she_floor_row(uint64_t k0, uint64_t k1, uint64_t row, int64_t D,
                                    double *scratch)
{
    int64_t j;
    double acc = 0.0;
    fastldp_she_row_words(k0, k1, row, D, scratch);
    fastldp_she_words_to_laplace(scratch, D, 1.0);
    for (j = 0; j < D; ++j) acc += scratch[j];
    return acc;
}

/* ------------------------------------------------------------------ server */

/* floor(a / 32) for negative a too. */
static inline int64_t fastldp_she_floor_div32(int64_t a)
{
    return a >= 0 ? a / 32 : -((-a + 31) / 32);
}

/* Add sign * m * 2^L (m < 2^64) to a column of digits (digit row k at col[(k - K_LO) * stride]). */
static inline void fastldp_she_add_magnitude(int64_t *col, int64_t stride, uint64_t m, int64_t L,
                                             int negative)
{
    int64_t k0 = fastldp_she_floor_div32(L);
    int s = (int)(L - 32 * k0);
    int64_t *d = col + (k0 - FASTLDP_SHE_K_LO) * stride;
    uint64_t d0 = (m << s) & 0xFFFFFFFFULL;
    uint64_t d1 = s == 0 ? (m >> 32) & 0xFFFFFFFFULL : (m >> (32 - s)) & 0xFFFFFFFFULL;
    uint64_t d2 = s == 0 ? 0 : m >> (64 - s);
    if (negative) {
        d[0] -= (int64_t)d0;
        d[stride] -= (int64_t)d1;
        d[2 * stride] -= (int64_t)d2;
    } else {
        d[0] += (int64_t)d0;
        d[stride] += (int64_t)d1;
        d[2 * stride] += (int64_t)d2;
    }
}

/* Add the finite double v exactly, from its bits. */
static inline void fastldp_she_add_double(int64_t *col, int64_t stride, double v)
{
    uint64_t bits, m;
    int64_t biased;
    memcpy(&bits, &v, 8);
    biased = (int64_t)((bits >> 52) & 0x7FF);
    m = bits & ((1ULL << 52) - 1);
    if (biased == 0) {
        if (m == 0) return;
        fastldp_she_add_magnitude(col, stride, m, -1074, (int)(bits >> 63));
    } else {
        fastldp_she_add_magnitude(col, stride, m | (1ULL << 52), biased - 1075, (int)(bits >> 63));
    }
}

/* Carry every digit row but the top one into [0, 2^32). */
static void fastldp_she_normalize(int64_t *digits, int64_t D)
{
    int64_t r, j, c;
    for (r = 0; r + 1 < FASTLDP_SHE_ROWS; ++r) {
        int64_t *lo = digits + r * D, *hi = lo + D;
        for (j = 0; j < D; ++j) {
            c = lo[j] >> 32; /* arithmetic shift: floor division */
            lo[j] -= c * ((int64_t)1 << 32);
            hi[j] += c;
        }
    }
}

typedef struct {
    const double *x;       /* (n, D) row-major reports */
    int64_t D;
    const double *lo;      /* per row: the legal range [lo, hi] */
    const double *hi;
    const double *weights; /* per row, or NULL: unit weights (no product) */
    const uint8_t *group;  /* per row, or NULL: every row in group 0 */
    int n_groups;
    double sigma[FASTLDP_SHE_LEVELS];  /* 1.5 * 2^p_k */
    double inv_unit[FASTLDP_SHE_LEVELS]; /* 2^-(p_k - 52) */
    int64_t unit_exp[FASTLDP_SHE_LEVELS]; /* p_k - 52 */
} fastldp_she_sum_source;

/* Split y into its levels (exact; see the header comment) and return the last remainder. */
static inline double fastldp_she_split(const double *sigma, double y, double *h)
{
    double r = y;
    int k;
    for (k = 0; k < FASTLDP_SHE_LEVELS; ++k) {
        h[k] = (sigma[k] + r) - sigma[k];
        r = r - h[k];
    }
    return r;
}

/* Whether every entry of the row is in [lo, hi] (false for NaN). */
FASTLDP_SHE_CLONES static int fastldp_she_row_legal(const double *row, int64_t D, double lo,
                                                    double hi)
{
    int64_t j;
    int ok = 1;
    for (j = 0; j < D; ++j) ok &= (row[j] >= lo) & (row[j] <= hi);
    return ok;
}


/* The levels of eight rows (y[0..7]; a missing row points to zeros) added
 * into acc (FASTLDP_SHE_LEVELS rows of D), and for each row a word that is
 * zero when the levels hold the row exactly (every last remainder zero).
 * Each level sum stays exact (header comment), so the eight terms are added
 * as a tree (short dependency chains). */
FASTLDP_SHE_CLONES static void fastldp_she_add_rows8(const double *const *y, int64_t D,
                                                     const double *sigma,
                                                     double *FASTLDP_SHE_RESTRICT acc,
                                                     uint64_t *FASTLDP_SHE_RESTRICT row_rem)
{
    int64_t j;
    int r;
    const double s0 = sigma[0], s1 = sigma[1];
    const double *FASTLDP_SHE_RESTRICT y0 = y[0], *FASTLDP_SHE_RESTRICT y1 = y[1];
    const double *FASTLDP_SHE_RESTRICT y2 = y[2], *FASTLDP_SHE_RESTRICT y3 = y[3];
    const double *FASTLDP_SHE_RESTRICT y4 = y[4], *FASTLDP_SHE_RESTRICT y5 = y[5];
    const double *FASTLDP_SHE_RESTRICT y6 = y[6], *FASTLDP_SHE_RESTRICT y7 = y[7];
    double *FASTLDP_SHE_RESTRICT a0 = acc;
    double *FASTLDP_SHE_RESTRICT a1 = acc + D;
    /* an OR of the remainders' bits, sign cleared (-0.0 is no remainder): an integer
     * reduction, which compilers vectorize (a floating-point sum they would not reorder) */
    const uint64_t magnitude = 0x7FFFFFFFFFFFFFFFULL;
    uint64_t e0 = 0, e1 = 0, e2 = 0, e3 = 0, e4 = 0, e5 = 0, e6 = 0, e7 = 0;
    for (j = 0; j < D; ++j) {
        double v[FASTLDP_SHE_GROUP_ROWS], h0[FASTLDP_SHE_GROUP_ROWS], h1[FASTLDP_SHE_GROUP_ROWS];
        uint64_t e[FASTLDP_SHE_GROUP_ROWS];
        v[0] = y0[j]; v[1] = y1[j]; v[2] = y2[j]; v[3] = y3[j];
        v[4] = y4[j]; v[5] = y5[j]; v[6] = y6[j]; v[7] = y7[j];
        for (r = 0; r < FASTLDP_SHE_GROUP_ROWS; ++r) {
            double x = v[r], r0;
            h0[r] = (s0 + x) - s0;
            r0 = x - h0[r];
            h1[r] = (s1 + r0) - s1;
            e[r] = fastldp_she_double_bits(r0 - h1[r]) & magnitude;
        }
        a0[j] += ((h0[0] + h0[1]) + (h0[2] + h0[3])) + ((h0[4] + h0[5]) + (h0[6] + h0[7]));
        a1[j] += ((h1[0] + h1[1]) + (h1[2] + h1[3])) + ((h1[4] + h1[5]) + (h1[6] + h1[7]));
        e0 |= e[0]; e1 |= e[1]; e2 |= e[2]; e3 |= e[3];
        e4 |= e[4]; e5 |= e[5]; e6 |= e[6]; e7 |= e[7];
    }
    row_rem[0] = e0; row_rem[1] = e1; row_rem[2] = e2; row_rem[3] = e3;
    row_rem[4] = e4; row_rem[5] = e5; row_rem[6] = e6; row_rem[7] = e7;
}

static void fastldp_she_scale_row(const double *x, int64_t D, double w, double *out)
{
    int64_t j;
    for (j = 0; j < D; ++j) out[j] = x[j] * w;
}

/* Move a block's level sums into the digits (as integers times u_k: exact). */
static void fastldp_she_flush(const fastldp_she_sum_source *src, double *acc, int64_t *digits)
{
    int64_t D = src->D, j;
    int k;
    for (k = 0; k < FASTLDP_SHE_LEVELS; ++k) {
        double *a = acc + k * D;
        for (j = 0; j < D; ++j) {
            if (a[j] != 0.0) {
                /* an integer multiple of 2^unit_exp below 2^54 of them: exact */
                double q = a[j] * src->inv_unit[k];
                int negative = q < 0.0;
                uint64_t m = (uint64_t)(negative ? -q : q);
                fastldp_she_add_magnitude(digits + j, D, m, src->unit_exp[k], negative);
                a[j] = 0.0;
            }
        }
    }
}

/* Add the last remainders of one row (those the levels do not hold) from their bits. */
static void fastldp_she_add_remainders(const fastldp_she_sum_source *src, const double *y,
                                       int64_t *digits)
{
    int64_t D = src->D, j;
    double h[FASTLDP_SHE_LEVELS];
    for (j = 0; j < D; ++j) {
        double r = fastldp_she_split(src->sigma, y[j], h);
        if (r != 0.0) fastldp_she_add_double(digits + j, D, r);
    }
}

/* Rows [r0, r1): legal[i] for each, and the exact sums of the legal rows of
 * each group into digits (n_groups blocks of FASTLDP_SHE_ROWS x D, zeroed by
 * the caller, normalized on return). scratch: (n_groups * LEVELS
 * + GROUP_ROWS + 1) * D doubles. A row whose levels leave a remainder (an
 * entry with bits below the last grid) has its remainders added from their
 * bits right away: one pass over that row, whatever the others hold. */
static void fastldp_she_sum_range(const fastldp_she_sum_source *src, int64_t r0, int64_t r1,
                                  uint8_t *legal, int64_t *digits, double *scratch)
{
    int64_t D = src->D, start, sub, i;
    int g, G = src->n_groups, r;
    int64_t stride = (int64_t)FASTLDP_SHE_LEVELS * D;
    int64_t digit_stride = (int64_t)FASTLDP_SHE_ROWS * D;
    double *rowbufs = scratch + (int64_t)G * stride;      /* GROUP_ROWS rows of x * w */
    double *zeros = rowbufs + FASTLDP_SHE_GROUP_ROWS * D; /* a missing row */
    const double *ptr[256][FASTLDP_SHE_GROUP_ROWS];
    uint64_t row_rem[FASTLDP_SHE_GROUP_ROWS];
    int count[256];
    int64_t blocks = 0;
    uint8_t used[256];
    memset(scratch, 0, (size_t)(G * stride + (FASTLDP_SHE_GROUP_ROWS + 1) * D) * sizeof(double));
    for (start = r0; start < r1; start += FASTLDP_SHE_BLOCK_ROWS) {
        int64_t stop = start + FASTLDP_SHE_BLOCK_ROWS < r1 ? start + FASTLDP_SHE_BLOCK_ROWS : r1;
        memset(used, 0, (size_t)G);
        for (sub = start; sub < stop; sub += FASTLDP_SHE_GROUP_ROWS) {
            int64_t sub_stop = stop - sub > FASTLDP_SHE_GROUP_ROWS ? sub + FASTLDP_SHE_GROUP_ROWS
                                                                   : stop;
            memset(count, 0, (size_t)G * sizeof(int));
            for (i = sub; i < sub_stop; ++i) {
                const double *row = src->x + i * D;
                g = src->group != NULL ? src->group[i] : 0;
                legal[i] = (uint8_t)fastldp_she_row_legal(row, D, src->lo[i], src->hi[i]);
                if (!legal[i]) continue;
                if (src->weights != NULL) {
                    double *buf = rowbufs + (i - sub) * D;
                    fastldp_she_scale_row(row, D, src->weights[i], buf);
                    row = buf;
                }
                ptr[g][count[g]++] = row;
            }
            for (g = 0; g < G; ++g) {
                if (count[g] == 0) continue;
                for (r = count[g]; r < FASTLDP_SHE_GROUP_ROWS; ++r) ptr[g][r] = zeros;
                fastldp_she_add_rows8(ptr[g], D, src->sigma, scratch + g * stride, row_rem);
                for (r = 0; r < count[g]; ++r)
                    if (row_rem[r] != 0)
                        fastldp_she_add_remainders(src, ptr[g][r], digits + g * digit_stride);
                used[g] = 1;
            }
        }
        for (g = 0; g < G; ++g)
            if (used[g]) fastldp_she_flush(src, scratch + g * stride, digits + g * digit_stride);
        if (++blocks == FASTLDP_SHE_NORMALIZE_BLOCKS) {
            for (g = 0; g < G; ++g) fastldp_she_normalize(digits + g * digit_stride, D);
            blocks = 0;
        }
    }
    for (g = 0; g < G; ++g) fastldp_she_normalize(digits + g * digit_stride, D);
}

/* legal[i] for rows [r0, r1) only (sanitize without a sum). */
static void fastldp_she_legal_range(const double *x, int64_t D, const double *lo, const double *hi,
                                    int64_t r0, int64_t r1, uint8_t *legal)
{
    int64_t i;
    for (i = r0; i < r1; ++i) legal[i] = (uint8_t)fastldp_she_row_legal(x + i * D, D, lo[i], hi[i]);
}

#endif
