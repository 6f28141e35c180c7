/*
 * Standard normal variates by the ziggurat method (Marsaglia and Tsang,
 * "The ziggurat method for generating random variables", JSS 5(8), 2000),
 * 256 layers, fed by the 64-bit words of a NumPy bit generator.
 *
 * One word makes a variate on the fast path (about 99% of them):
 *   bits 0-7   the layer i,
 *   bit  8     the sign,
 *   bits 9-60  the 52-bit uniform u, x = u * w[i].
 * x is accepted at once when u < k[i] (x lies left of the layer above, so
 * under the curve). Otherwise the slow path draws further words from the
 * same bit generator, in order: the wedge test of layer i >= 1 (one word;
 * a rejection takes a new word for a new layer and starts over), or, for
 * layer 0, Marsaglia's exponential tail beyond r (two words a try; a
 * rejected try retries the tail, not the whole ziggurat: a restart would
 * under-sample |x| > r).
 *
 * The sign is set by OR-ing the word's bit 8 into the sign bit, not by a
 * branch: a branch on a random bit is mispredicted half the time, which
 * is most of what NumPy's own ziggurat costs per variate on some machines.
 *
 * The words are consumed strictly in order, so a fill of n values is the
 * prefix of any longer fill from the same generator state, and the
 * generator ends in a state that depends on the values drawn only.
 *
 * fastldp_bitgen has the layout of NumPy's bitgen_t (numpy/random/
 * bitgen.h, the documented C interface of numpy.random's bit generators,
 * reached through BitGenerator.capsule); it is declared here so that the
 * build needs no NumPy headers. Only next_uint64 is called.
 */
#ifndef FASTLDP_NORMAL_H
#define FASTLDP_NORMAL_H

#include <math.h>
#include <stdint.h>
#include <string.h>

typedef struct fastldp_bitgen {
    void *state;
    uint64_t (*next_uint64)(void *st);
    uint32_t (*next_uint32)(void *st);
    double (*next_double)(void *st);
    uint64_t (*next_raw)(void *st);
} fastldp_bitgen;

/* k[i]: the fast-acceptance bound of layer i (k[1] = 0); w[i]: the layer's width
 * over 2**52; f[i] = exp(-x_i**2 / 2), f[0] = 1; r: the base strip's edge. */
typedef struct {
    const uint64_t *k;
    const double *w;
    const double *f;
    double r;
} fastldp_ziggurat;

#define FASTLDP_ZIG_LAYER(word) ((int)((word) & 0xFFULL))
#define FASTLDP_ZIG_U(word) (((word) >> 9) & 0x000FFFFFFFFFFFFFULL)

/* A uniform in [0, 1) from the top 53 bits of a word. */
static inline double fastldp_zig_unit(uint64_t word)
{
    return (double)(word >> 11) * 0x1.0p-53;
}

/* |x| with the sign bit taken from bit 8 of word (x >= 0). */
static inline double fastldp_zig_signed(double x, uint64_t word)
{
    uint64_t bits;
    memcpy(&bits, &x, sizeof bits);
    bits |= (word & 0x100ULL) << 55;
    memcpy(&x, &bits, sizeof bits);
    return x;
}

/* The slow path of a variate whose first word failed the fast test. */
static double fastldp_zig_slow(const fastldp_ziggurat *z, fastldp_bitgen *g, uint64_t word)
{
    for (;;) {
        int layer = FASTLDP_ZIG_LAYER(word);
        uint64_t u = FASTLDP_ZIG_U(word);
        double x = (double)u * z->w[layer];
        if (u < z->k[layer])
            return fastldp_zig_signed(x, word);
        if (layer == 0) {
            for (;;) {  /* the tail beyond r: retried until accepted */
                double e1 = -log1p(-fastldp_zig_unit(g->next_uint64(g->state))) / z->r;
                double e2 = -log1p(-fastldp_zig_unit(g->next_uint64(g->state)));
                if (e2 + e2 > e1 * e1)
                    return fastldp_zig_signed(z->r + e1, word);
            }
        }
        /* the wedge: a uniform height in the layer's band, under the curve? */
        double y = z->f[layer]
                   + fastldp_zig_unit(g->next_uint64(g->state)) * (z->f[layer - 1] - z->f[layer]);
        if (y < exp(-0.5 * x * x))
            return fastldp_zig_signed(x, word);
        word = g->next_uint64(g->state);  /* rejected: a new layer */
    }
}

/* Fill out[0..n) with standard normals from g, in order. */
static void fastldp_standard_normal_fill(const fastldp_ziggurat *z, fastldp_bitgen *g,
                                         int64_t n, double *out)
{
    int64_t i;
    for (i = 0; i < n; ++i) {
        uint64_t word = g->next_uint64(g->state);
        int layer = FASTLDP_ZIG_LAYER(word);
        uint64_t u = FASTLDP_ZIG_U(word);
        double x = (double)u * z->w[layer];
        out[i] = (u < z->k[layer]) ? fastldp_zig_signed(x, word) : fastldp_zig_slow(z, g, word);
    }
}

#endif
