/*
 * Deterministic parallel sum of per-chunk vectors.
 *
 * The identities [0, n) are cut into fixed-size chunks. fn(ctx, start, stop,
 * part) adds the contribution of identities [start, stop) into a zeroed
 * length-p vector. Chunks run in waves of `slots` chunks (one partial each,
 * handed to the threads dynamically, so a thread that loses its core does
 * not hold up the others for long), and the partials are added into out
 * strictly in chunk order, so
 *
 *   out = (((0 + P_0) + P_1) + P_2) + ...
 *
 * bit for bit whatever the thread count. Memory: slots * p doubles.
 */
#ifndef FASTLDP_ORDERED_SUM_H
#define FASTLDP_ORDERED_SUM_H

#include <stdint.h>
#include <string.h>

typedef void (*fastldp_chunk_fn)(const void *ctx, int64_t start, int64_t stop, double *part);

static inline void fastldp_ordered_chunk_sum(
    fastldp_chunk_fn fn, const void *ctx, int64_t n, int64_t p, int64_t chunk,
    int nthreads, int64_t slots, double *buf, double *out)
{
    int64_t nchunks = (n + chunk - 1) / chunk;
    int64_t w0;
    if (nthreads < 1) nthreads = 1;
    if (slots < 1) slots = 1;
    for (w0 = 0; w0 < nchunks; w0 += slots) {
        int64_t wave = nchunks - w0 < slots ? nchunks - w0 : slots;
        int64_t j, e;
#ifdef _OPENMP
#pragma omp parallel num_threads(nthreads) if (wave > 1) private(j, e)
#endif
        {
#ifdef _OPENMP
#pragma omp for schedule(dynamic, 1)
#endif
            for (j = 0; j < wave; ++j) {
                int64_t c = w0 + j;
                int64_t stop = (c + 1) * chunk < n ? (c + 1) * chunk : n;
                double *part = buf + j * p;
                memset(part, 0, (size_t)p * sizeof(double));
                fn(ctx, c * chunk, stop, part);
            }
#ifdef _OPENMP
#pragma omp for schedule(static)
#endif
            for (e = 0; e < p; ++e) {
                double acc = out[e];
                for (j = 0; j < wave; ++j) acc += buf[j * p + e];
                out[e] = acc;
            }
        }
    }
}

#endif
