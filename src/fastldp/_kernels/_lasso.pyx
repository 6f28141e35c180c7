"""Per-user FISTA for the regression family's local Lassos, in float32.

Each user ``u`` of a batch solves ``argmin (1/(2 m_u)) ||y_u - X_u b||^2 +
alpha ||b||_1`` on its own ``(m, p)`` block (FISTA, Beck and Teboulle 2009).
NumPy runs these as stacked matrix-vector products, one BLAS call per user
and product (about 1 microsecond of dispatch each, as much as the
product at ``m = 50, p = 100``); here a user's iterations run in one C loop
over its block, which stays in L1/L2 cache. The products are in
``src/lasso.h`` (their order of additions is described there).

Every operation is the one of the NumPy twin
(``fastldp.regression.local._fista`` and the power iteration of
``local_lasso``), in the same precision: float32 products with float32
sums, the soft-threshold in float64, ``t`` in float64, the l1 size in
float64. Only the order of the additions inside a product differs (fixed
partial sums here, BLAS's blocking there), so the iterates agree to float32
rounding, not bit for bit. A user's result depends on its own rows only.
"""

from libc.math cimport sqrt, fabs, fabsf

from ._typedefs cimport intp_t, int64_t

import numpy as np

cdef extern from "src/lasso.h" nogil:
    void fastldp_lasso_gradient(const float *X, int64_t m, int64_t p, const float *z,
                                float inv_m, const float *xty, float *r, float *g)
    void fastldp_lasso_gram_apply64(const float *X, int64_t m, int64_t p, const double *v,
                                    double inv_m, double *r, double *w)


def gradient(const float[:, ::1] X, const float[::1] z, float inv_m, const float[::1] xty):
    """``X^T (X z) * inv_m - xty`` for one user's block (the kernel's product, for tests)."""
    cdef intp_t m = X.shape[0], p = X.shape[1]
    if z.shape[0] != p or xty.shape[0] != p or m == 0 or p == 0:
        raise ValueError("X must be (m, p) with m, p >= 1, z and xty of length p")
    out = np.empty(p, dtype=np.float32)
    cdef float[::1] g = out
    cdef float[::1] r = np.empty(m, dtype=np.float32)
    fastldp_lasso_gradient(&X[0, 0], m, p, &z[0], inv_m, &xty[0], &r[0], &g[0])
    return out


def power_steps(const float[:, :, ::1] X, const float[::1] inv_m, int rounds=6):
    """Each user's FISTA step ``1 / (1.15 L_u + 1e-6)`` (float32, shape ``(n,)``).

    ``L_u`` is ``rounds`` power iterations (float64, from the unit vector
    ``1 / sqrt(p)``) on ``X_u^T X_u inv_m_u``.
    """
    cdef intp_t n = X.shape[0], m = X.shape[1], p = X.shape[2]
    out = np.empty(n, dtype=np.float32)
    cdef float[::1] step = out
    cdef double[::1] v = np.empty(p), w = np.empty(p), r = np.empty(m)
    cdef intp_t u, j, k
    cdef double norm, start = 1.0 / sqrt(<double>p)
    cdef const float* Xu
    with nogil:
        for u in range(n):
            Xu = &X[u, 0, 0]
            for j in range(p):
                v[j] = start
            norm = 1.0
            for k in range(rounds):
                fastldp_lasso_gram_apply64(Xu, m, p, &v[0], <double>inv_m[u], &r[0], &w[0])
                norm = 0.0
                for j in range(p):
                    norm += w[j] * w[j]
                norm = sqrt(norm)
                for j in range(p):
                    v[j] = w[j] / (norm if norm > 1e-12 else 1e-12)
            step[u] = <float>(1.0 / <float>(norm * 1.15 + 1e-6))
    return out


def fista(const float[:, :, ::1] X, const float[:, ::1] Xty, const float[::1] inv_m,
          float[::1] step, double alpha, float[:, ::1] b, float[:, ::1] z, double[::1] t,
          int iterations, double tol, const double[::1] bound):
    """FISTA iterations for every user, in place on ``step, b, z, t``.

    As ``fastldp.regression.local._fista``: ``tol < 0`` runs ``iterations``
    for every user; otherwise a user stops after the iteration where its
    largest move is ``<= tol * max(max |b_u|, 1e-12)``. A user whose
    ``||b_u||_1`` exceeds ``bound[u]`` (or is NaN) restarts from 0 with half
    its step.
    """
    cdef intp_t n = X.shape[0], m = X.shape[1], p = X.shape[2]
    cdef float[::1] r = np.empty(max(m, 1), dtype=np.float32)
    cdef float[::1] g = np.empty(max(p, 1), dtype=np.float32)
    cdef float[::1] bn = np.empty(max(p, 1), dtype=np.float32)
    cdef intp_t u, j, it
    cdef const float* Xu
    cdef float* bu
    cdef float* zu
    cdef float st, level, coef, moved, top, diff
    cdef double v, a, tu, t_new, size
    cdef bint bad
    with nogil:
        for u in range(n):
            Xu = &X[u, 0, 0]
            bu = &b[u, 0]
            zu = &z[u, 0]
            st = step[u]
            tu = t[u]
            for it in range(iterations):
                fastldp_lasso_gradient(Xu, m, p, zu, inv_m[u], &Xty[u, 0], &r[0], &g[0])
                level = <float>(alpha * st)
                size = 0.0
                moved = 0.0
                top = 0.0
                for j in range(p):
                    v = <double>(zu[j] - st * g[j])
                    a = fabs(v) - <double>level
                    if a < 0.0:
                        a = 0.0
                    bn[j] = <float>(a if v > 0.0 else (-a if v < 0.0 else 0.0 * a))
                    size += fabs(<double>bn[j])
                t_new = 0.5 * (1.0 + sqrt(1.0 + 4.0 * tu * tu))
                coef = <float>((tu - 1.0) / t_new)
                for j in range(p):
                    diff = bn[j] - bu[j]
                    zu[j] = bn[j] + coef * diff
                    if fabsf(diff) > moved:
                        moved = fabsf(diff)
                    if fabsf(bn[j]) > top:
                        top = fabsf(bn[j])
                    bu[j] = bn[j]
                tu = t_new
                bad = not (size <= bound[u])
                if bad:
                    for j in range(p):
                        bu[j] = 0.0
                        zu[j] = 0.0
                    tu = 1.0
                    st = st * 0.5
                if tol >= 0.0 and not bad and moved <= <float>(tol * (top if top > 1e-12 else 1e-12)):
                    break
            step[u] = st
            t[u] = tu
