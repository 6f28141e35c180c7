/*
 * Per-user FISTA and power iteration for the local Lassos of the regression
 * family (fastldp._kernels._lasso). A user's block X is (m, p), row-major,
 * float32.
 *
 * The products X z and X^T r are the whole cost. Each is written with a
 * fixed order of additions: X z takes four rows at a time, each with
 * FL_LANES partial sums over the columns (independent chains, so the adds
 * do not wait on each other), summed by a fixed tree, then the columns
 * left over; X^T r adds four rows' contributions per column at a time.
 * Vectorizing such loops changes no result (every lane does the scalar
 * code's operations), so the baseline build and the AVX2 clone (GCC,
 * x86-64 glibc: picked at load time) give the same bits. The AVX2 target
 * does not include FMA, so no multiply-add is fused.
 */
#ifndef FASTLDP_LASSO_H
#define FASTLDP_LASSO_H

#include <math.h>
#include <stdint.h>

#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && defined(__GLIBC__) \
    && !defined(FASTLDP_PORTABLE)
#define FASTLDP_LASSO_CLONES __attribute__((target_clones("avx2", "default")))
#else
#define FASTLDP_LASSO_CLONES
#endif

#define FL_LANES 16

static inline float fl_tree(const float *s)
{
    return ((((s[0] + s[1]) + (s[2] + s[3])) + ((s[4] + s[5]) + (s[6] + s[7])))
            + (((s[8] + s[9]) + (s[10] + s[11])) + ((s[12] + s[13]) + (s[14] + s[15]))));
}

static inline double fl_tree64(const double *s)
{
    return ((((s[0] + s[1]) + (s[2] + s[3])) + ((s[4] + s[5]) + (s[6] + s[7])))
            + (((s[8] + s[9]) + (s[10] + s[11])) + ((s[12] + s[13]) + (s[14] + s[15]))));
}

/* g = X^T (X z) * inv_m - xty; r: m floats of scratch. */
FASTLDP_LASSO_CLONES static void fastldp_lasso_gradient(
    const float *X, int64_t m, int64_t p, const float *z, float inv_m, const float *xty,
    float *r, float *g)
{
    int64_t i, j, l, end = p - p % FL_LANES;
    for (i = 0; i + 4 <= m; i += 4) {
        const float *x0 = X + i * p, *x1 = x0 + p, *x2 = x1 + p, *x3 = x2 + p;
        float s0[FL_LANES], s1[FL_LANES], s2[FL_LANES], s3[FL_LANES];
        float t0 = 0.0f, t1 = 0.0f, t2 = 0.0f, t3 = 0.0f;
        for (l = 0; l < FL_LANES; ++l) s0[l] = s1[l] = s2[l] = s3[l] = 0.0f;
        for (j = 0; j < end; j += FL_LANES) {
            for (l = 0; l < FL_LANES; ++l) {
                float zj = z[j + l];
                s0[l] += x0[j + l] * zj;
                s1[l] += x1[j + l] * zj;
                s2[l] += x2[j + l] * zj;
                s3[l] += x3[j + l] * zj;
            }
        }
        for (j = end; j < p; ++j) {
            t0 += x0[j] * z[j];
            t1 += x1[j] * z[j];
            t2 += x2[j] * z[j];
            t3 += x3[j] * z[j];
        }
        r[i] = fl_tree(s0) + t0;
        r[i + 1] = fl_tree(s1) + t1;
        r[i + 2] = fl_tree(s2) + t2;
        r[i + 3] = fl_tree(s3) + t3;
    }
    for (; i < m; ++i) {
        const float *x0 = X + i * p;
        float s0[FL_LANES], t0 = 0.0f;
        for (l = 0; l < FL_LANES; ++l) s0[l] = 0.0f;
        for (j = 0; j < end; j += FL_LANES)
            for (l = 0; l < FL_LANES; ++l) s0[l] += x0[j + l] * z[j + l];
        for (j = end; j < p; ++j) t0 += x0[j] * z[j];
        r[i] = fl_tree(s0) + t0;
    }
    for (j = 0; j < p; ++j) g[j] = 0.0f;
    for (i = 0; i + 4 <= m; i += 4) {
        const float *x0 = X + i * p, *x1 = x0 + p, *x2 = x1 + p, *x3 = x2 + p;
        float r0 = r[i], r1 = r[i + 1], r2 = r[i + 2], r3 = r[i + 3];
        for (j = 0; j < p; ++j)
            g[j] += (x0[j] * r0 + x1[j] * r1) + (x2[j] * r2 + x3[j] * r3);
    }
    for (; i < m; ++i) {
        const float *x0 = X + i * p;
        float r0 = r[i];
        for (j = 0; j < p; ++j) g[j] += x0[j] * r0;
    }
    for (j = 0; j < p; ++j) g[j] = g[j] * inv_m - xty[j];
}

/* w = X^T (X v) * inv_m in float64 (X float32); r: m doubles of scratch. */
FASTLDP_LASSO_CLONES static void fastldp_lasso_gram_apply64(
    const float *X, int64_t m, int64_t p, const double *v, double inv_m, double *r, double *w)
{
    int64_t i, j, l, end = p - p % FL_LANES;
    for (i = 0; i + 4 <= m; i += 4) {
        const float *x0 = X + i * p, *x1 = x0 + p, *x2 = x1 + p, *x3 = x2 + p;
        double s0[FL_LANES], s1[FL_LANES], s2[FL_LANES], s3[FL_LANES];
        double t0 = 0.0, t1 = 0.0, t2 = 0.0, t3 = 0.0;
        for (l = 0; l < FL_LANES; ++l) s0[l] = s1[l] = s2[l] = s3[l] = 0.0;
        for (j = 0; j < end; j += FL_LANES) {
            for (l = 0; l < FL_LANES; ++l) {
                double vj = v[j + l];
                s0[l] += (double)x0[j + l] * vj;
                s1[l] += (double)x1[j + l] * vj;
                s2[l] += (double)x2[j + l] * vj;
                s3[l] += (double)x3[j + l] * vj;
            }
        }
        for (j = end; j < p; ++j) {
            t0 += (double)x0[j] * v[j];
            t1 += (double)x1[j] * v[j];
            t2 += (double)x2[j] * v[j];
            t3 += (double)x3[j] * v[j];
        }
        r[i] = fl_tree64(s0) + t0;
        r[i + 1] = fl_tree64(s1) + t1;
        r[i + 2] = fl_tree64(s2) + t2;
        r[i + 3] = fl_tree64(s3) + t3;
    }
    for (; i < m; ++i) {
        const float *x0 = X + i * p;
        double s0[FL_LANES], t0 = 0.0;
        for (l = 0; l < FL_LANES; ++l) s0[l] = 0.0;
        for (j = 0; j < end; j += FL_LANES)
            for (l = 0; l < FL_LANES; ++l) s0[l] += (double)x0[j + l] * v[j + l];
        for (j = end; j < p; ++j) t0 += (double)x0[j] * v[j];
        r[i] = fl_tree64(s0) + t0;
    }
    for (j = 0; j < p; ++j) w[j] = 0.0;
    for (i = 0; i + 4 <= m; i += 4) {
        const float *x0 = X + i * p, *x1 = x0 + p, *x2 = x1 + p, *x3 = x2 + p;
        double r0 = r[i], r1 = r[i + 1], r2 = r[i + 2], r3 = r[i + 3];
        for (j = 0; j < p; ++j)
            w[j] += ((double)x0[j] * r0 + (double)x1[j] * r1)
                    + ((double)x2[j] * r2 + (double)x3[j] * r3);
    }
    for (; i < m; ++i) {
        const float *x0 = X + i * p;
        double r0 = r[i];
        for (j = 0; j < p; ++j) w[j] += (double)x0[j] * r0;
    }
    for (j = 0; j < p; ++j) w[j] *= inv_m;
}

#endif
