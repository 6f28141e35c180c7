"""RAPPOR's sparse decode: products with the Bloom design straight from the filters' bits.

The design ``X`` of one-time RAPPOR (``src/fastldp/oracles/rappor.py``) has
row ``c k + j`` and column ``v``: 1 iff candidate ``v``'s Bloom filter in
cohort ``c`` sets bit ``j``. Every column has at most ``h`` ones per cohort,
so the products a conjugate-gradient decode needs are read from a table of
positions, ``pos[c, v, t] = H_{c h + t}(v)``, without a sparse matrix:

* :func:`bloom_positions`: the table (uint16, ``(C, D, h)``), from the same
  OLH hashes as :func:`~fastldp._kernels._cms.bloom_design`; a bit that an
  earlier hash function of the same candidate already set is replaced by the
  sentinel ``k`` (an extra accumulator slot held at zero), so it counts once.
* :func:`bloom_rows`: the same design in compressed rows (uint32 candidates).
* :func:`bloom_gram_apply`: ``G v = sum_c w_c X_c^T (X_c v)``. Per cohort,
  ``X_c v`` by rows (each bit's candidates summed in four independent
  chains: a gather, no read-modify-write), scaled by ``w_c`` into ``k + 1``
  accumulators, then gathered back by the positions in one pass over the
  output per chunk of cohorts, a candidate's two positions read in one load
  (``2 C h D`` adds; 0.35 ms inside :func:`bloom_cg` at the
  benchmark's ``C = 64, h = 2, k = 128, D = 4096`` against 0.62 ms for a
  scatter into the accumulators, and scipy's two products 0.70 ms, on one
  core of a loaded machine).
* :func:`bloom_cg`: conjugate gradients on ``G x = b`` in one call.
* :func:`bloom_transpose_apply`: ``X^T t = sum_c X_c^T t_c``, the gather alone.

Cohorts are cut into fixed chunks (a function of ``C`` only); each chunk
adds into its own length-``D`` partial, and the partials are summed in chunk
order (``src/ordered_sum.h``), so the results are bit-identical for any
thread count.
"""

import numpy as np

from libc.stdlib cimport malloc, free
from libc.string cimport memset, memcpy
from libc.stdint cimport uint16_t, uint32_t

from ._typedefs cimport int64_t, uint64_t
from ._cdefs cimport (
    fastldp_philox_block, fastldp_hash_block, fastldp_block_lane32, fastldp_bucket_of_lane,
    FASTLDP_STREAM_OLH_HASH, fastldp_ordered_chunk_sum, fastldp_chunk_fn,
)

#: bits of a filter at most (positions and the sentinel fit in uint16)
MAX_BITS = 65535
#: partials at most (cohorts per chunk grow with C so that summing them stays cheap)
MAX_CHUNKS = 8
SLOTS_PER_THREAD = 2


cdef struct bloom_source:
    const uint16_t *pos
    const int64_t *row_ptr   # the design's rows (c k + j): candidates row_cols[ptr[r]:ptr[r + 1]]
    const uint32_t *row_cols
    int64_t D
    int64_t h
    int64_t k
    const double *w      # the cohorts' weights (gram) or NULL
    const double *vec    # v (gram, length D) or t (transpose, C x k)


def cohort_chunk(int64_t n_cohorts):
    """Cohorts per chunk for ``n_cohorts`` (a function of ``C`` only)."""
    return max(1, -(-n_cohorts // MAX_CHUNKS))


def bloom_positions(uint64_t seed, int64_t n_cohorts, int64_t n_hashes, int64_t k, int64_t D):
    """The Bloom positions of every candidate in every cohort, repeats replaced by ``k``.

    Parameters
    ----------
    seed : int
        The codebook seed.
    n_cohorts, n_hashes, k, D : int
        ``C``, ``h``, the filter's bits (``1 <= k <= 65535``) and the
        candidates ``0 .. D-1``.

    Returns
    -------
    uint16 array, shape (C, D, h)
        ``pos[c, v, t] = olh_hash(seed, c h + t, v, k)``, or ``k`` when an
        earlier ``t' < t`` gave the same bit (the bit is set once).
    """
    if n_cohorts < 1 or n_hashes < 1 or D < 1 or not (1 <= k <= MAX_BITS):
        raise ValueError(f"need n_cohorts, n_hashes, D >= 1 and 1 <= k <= {MAX_BITS}, got "
                         f"{n_cohorts}, {n_hashes}, {D}, {k}")
    cdef int64_t C = n_cohorts, h = n_hashes
    out = np.empty((C, D, h), dtype=np.uint16)
    cdef uint16_t[:, :, ::1] P = out
    cdef int64_t c, t, s, b, v, lane
    cdef uint16_t j
    cdef fastldp_philox_block blk
    with nogil:
        for c in range(C):
            for t in range(h):
                for b in range((D + 7) // 8):
                    blk = fastldp_hash_block(seed, <uint64_t>(c * h + t), <uint64_t>b,
                                             FASTLDP_STREAM_OLH_HASH)
                    for lane in range(8):
                        v = 8 * b + lane
                        if v >= D:
                            break
                        j = <uint16_t>fastldp_bucket_of_lane(
                            fastldp_block_lane32(&blk, <int>lane), k)
                        for s in range(t):
                            if P[c, v, s] == j:
                                j = <uint16_t>k
                                break
                        P[c, v, t] = j
    return out


def bloom_rows(const uint16_t[:, :, ::1] pos, int64_t k):
    """The design in compressed rows from the positions: row ``c k + j`` lists its candidates.

    Parameters
    ----------
    pos : uint16 array, shape (C, D, h)
        From :func:`bloom_positions` (repeats as ``k``, which set no row).
    k : int

    Returns
    -------
    row_ptr : int64 array, shape (C k + 1,)
    row_cols : uint32 array
        The candidates of row ``r``, increasing, are
        ``row_cols[row_ptr[r]:row_ptr[r + 1]]``.
    """
    _check(pos, k)
    cdef int64_t C = pos.shape[0], D = pos.shape[1], h = pos.shape[2], c, v, t, j
    if D > (<int64_t>1 << 32):
        raise ValueError(f"D must be below 2**32, got {D}")
    ptr = np.zeros(C * k + 1, dtype=np.int64)
    cdef int64_t[::1] P = ptr
    with nogil:
        for c in range(C):
            for v in range(D):
                for t in range(h):
                    j = pos[c, v, t]
                    if j < k:
                        P[c * k + j + 1] += 1
        for j in range(C * k):
            P[j + 1] += P[j]
    cols = np.empty(P[C * k], dtype=np.uint32)
    nxt = ptr[:C * k].copy()
    cdef int64_t[::1] N = nxt
    cdef uint32_t[::1] Q = cols
    with nogil:
        for c in range(C):
            for v in range(D):  # increasing v: every row's candidates come out sorted
                for t in range(h):
                    j = pos[c, v, t]
                    if j < k:
                        Q[N[c * k + j]] = <uint32_t>v
                        N[c * k + j] += 1
    return ptr, cols


cdef object _check_rows(const int64_t[::1] row_ptr, const uint32_t[::1] row_cols, int64_t C,
                        int64_t k, int64_t D):
    if row_ptr.shape[0] != C * k + 1 or row_ptr[0] != 0 or row_ptr[C * k] != row_cols.shape[0]:
        raise ValueError(f"row_ptr and row_cols do not describe {C * k} rows (bloom_rows)")
    cdef int64_t r, a
    for r in range(C * k):
        if row_ptr[r + 1] < row_ptr[r]:
            raise ValueError(f"row_ptr decreases at {r}")
    cols = np.asarray(row_cols)
    if cols.shape[0] and int(cols.max()) >= D:  # numpy's vectorized max: checked per call
        a = int(np.argmax(cols >= D))
        raise ValueError(f"row_cols[{a}] = {row_cols[a]} is outside [0, {D})")


cdef void _gram_range(const void *ctx, int64_t start, int64_t stop,
                      double *part) noexcept nogil:
    # X_c v by rows (a gather: each bit's candidates summed in four independent chains) for
    # every cohort of the chunk, then X_c^T of them by the positions in ONE pass over
    # ``part``: part[v] += (the chunk's sum for v), so that a caller may pass ``out`` itself
    # (``0 + P == P``: the same bits as a zeroed partial added to ``out``)
    cdef const bloom_source *src = <const bloom_source *>ctx
    cdef int64_t D = src.D, h = src.h, k = src.k, c, v, t, j, a, e, g, n = stop - start
    cdef double *acc = <double *>malloc(n * (k + 1) * sizeof(double))
    cdef double *A
    cdef const uint16_t *P0
    cdef const uint16_t *P
    cdef uint32_t u0, u1, u2, u3
    cdef const double *x = src.vec
    cdef const uint32_t *cols = src.row_cols
    cdef int64_t kk = k + 1, stride = D * h
    cdef double s, s0, s1, s2, s3
    if acc == NULL:  # pragma: no cover - n (k + 1) doubles
        return
    for g in range(n):
        c = start + g
        A = acc + g * kk
        for j in range(k):
            s0 = 0.0
            s1 = 0.0
            s2 = 0.0
            s3 = 0.0
            a = src.row_ptr[c * k + j]
            e = src.row_ptr[c * k + j + 1]
            while a + 4 <= e:
                s0 += x[cols[a]]
                s1 += x[cols[a + 1]]
                s2 += x[cols[a + 2]]
                s3 += x[cols[a + 3]]
                a += 4
            while a < e:
                s0 += x[cols[a]]
                a += 1
            A[j] = ((s0 + s1) + (s2 + s3)) * src.w[c]
        A[k] = 0.0  # the sentinel: a repeated bit adds nothing
    P0 = src.pos + start * stride
    if h == 2:
        # a candidate's two positions in one 32-bit load (a memcpy: no aliasing of uint16
        # data through a uint32 pointer; which half holds which does not matter:
        # a + b == b + a exactly); cohorts four at a time
        for v in range(D):
            s = 0.0
            g = 0
            while g + 4 <= n:
                P = P0 + g * stride + 2 * v
                memcpy(&u0, P, 4)
                memcpy(&u1, P + stride, 4)
                memcpy(&u2, P + 2 * stride, 4)
                memcpy(&u3, P + 3 * stride, 4)
                A = acc + g * kk
                s += (((A[u0 & 0xFFFF] + A[u0 >> 16])
                       + (A[kk + (u1 & 0xFFFF)] + A[kk + (u1 >> 16)]))
                      + ((A[2 * kk + (u2 & 0xFFFF)] + A[2 * kk + (u2 >> 16)])
                         + (A[3 * kk + (u3 & 0xFFFF)] + A[3 * kk + (u3 >> 16)])))
                g += 4
            while g < n:
                memcpy(&u0, P0 + g * stride + 2 * v, 4)
                A = acc + g * kk
                s += A[u0 & 0xFFFF] + A[u0 >> 16]
                g += 1
            part[v] += s
    else:
        for v in range(D):
            s = 0.0
            for g in range(n):
                A = acc + g * kk
                P = P0 + g * stride + v * h
                for t in range(h):
                    s += A[P[t]]
            part[v] += s
    free(acc)


cdef void _transpose_range(const void *ctx, int64_t start, int64_t stop,
                           double *part) noexcept nogil:
    cdef const bloom_source *src = <const bloom_source *>ctx
    cdef int64_t D = src.D, h = src.h, k = src.k, c, v, t
    cdef double *acc = <double *>malloc((k + 1) * sizeof(double))
    cdef const uint16_t *P
    cdef double s
    if acc == NULL:  # pragma: no cover - k + 1 doubles
        return
    for c in range(start, stop):
        memcpy(acc, src.vec + c * k, k * sizeof(double))
        acc[k] = 0.0
        P = src.pos + c * D * h
        for v in range(D):
            s = 0.0
            for t in range(h):
                s += acc[P[v * h + t]]
            part[v] += s
    free(acc)


cdef object _check(const uint16_t[:, :, ::1] pos, int64_t k):
    if not (1 <= k <= MAX_BITS):
        raise ValueError(f"k must be in [1, {MAX_BITS}], got {k}")
    if pos.shape[0] < 1 or pos.shape[1] < 1 or pos.shape[2] < 1:
        raise ValueError(f"pos must have shape (C, D, h) with C, D, h >= 1, got "
                         f"({pos.shape[0]}, {pos.shape[1]}, {pos.shape[2]})")
    cdef int64_t top = int(np.asarray(pos).max())  # numpy's vectorized max: checked per call
    if top > k:
        raise ValueError(f"pos holds {top}, outside [0, {k}]")


cdef object _run(bloom_source *src, int64_t C, int n_threads, bint gram):
    cdef int64_t chunk = cohort_chunk(C)
    cdef int64_t nchunks = (C + chunk - 1) // chunk
    cdef int nt = max(1, min(n_threads, <int>nchunks))
    cdef int64_t slots = min(nchunks, SLOTS_PER_THREAD * nt)
    out = np.zeros(src.D, dtype=np.float64)
    buf = np.empty(slots * src.D, dtype=np.float64)
    cdef double[::1] o = out
    cdef double[::1] bb = buf
    with nogil:
        if gram:
            _chunk_sum(_gram_range, src, C, src.D, chunk, nt, slots, &bb[0], &o[0], True)
        else:
            _chunk_sum(_transpose_range, src, C, src.D, chunk, nt, slots, &bb[0], &o[0])
    return out


def bloom_gram_apply(const uint16_t[:, :, ::1] pos, const int64_t[::1] row_ptr,
                     const uint32_t[::1] row_cols, int64_t k, const double[::1] weights,
                     const double[::1] v, int n_threads=1):
    """``G v = sum_c w_c X_c^T X_c v`` from the Bloom positions.

    Parameters
    ----------
    pos : uint16 array, shape (C, D, h)
        From :func:`bloom_positions` (repeats as ``k``).
    row_ptr, row_cols : arrays
        The same design in rows, from :func:`bloom_rows`.
    k : int
        The filter's bits.
    weights : float64 array, shape (C,)
        ``w_c`` (RAPPOR: the cohort sizes).
    v : float64 array, shape (D,)
    n_threads : int
        Threads; the result does not depend on it.

    Returns
    -------
    float64 array, shape (D,)
    """
    _check(pos, k)
    cdef int64_t C = pos.shape[0]
    if weights.shape[0] != C or v.shape[0] != pos.shape[1]:
        raise ValueError(f"weights must have length C = {C} and v length D = "
                         f"{pos.shape[1]}, got {weights.shape[0]} and {v.shape[0]}")
    _check_rows(row_ptr, row_cols, C, k, pos.shape[1])
    cdef bloom_source src
    src.row_ptr = &row_ptr[0]
    src.row_cols = &row_cols[0] if row_cols.shape[0] else NULL
    src.pos = &pos[0, 0, 0]
    src.D = pos.shape[1]
    src.h = pos.shape[2]
    src.k = k
    src.w = &weights[0]
    src.vec = &v[0]
    return _run(&src, C, n_threads, True)


def bloom_transpose_apply(const uint16_t[:, :, ::1] pos, int64_t k, const double[:, ::1] t,
                          int n_threads=1):
    """``X^T t = sum_c X_c^T t_c`` from the Bloom positions (``t`` of shape ``(C, k)``).

    Returns
    -------
    float64 array, shape (D,)
    """
    _check(pos, k)
    cdef int64_t C = pos.shape[0]
    if t.shape[0] != C or t.shape[1] != k:
        raise ValueError(f"t must have shape (C, k) = ({C}, {k}), got "
                         f"({t.shape[0]}, {t.shape[1]})")
    cdef bloom_source src
    src.pos = &pos[0, 0, 0]
    src.D = pos.shape[1]
    src.h = pos.shape[2]
    src.k = k
    src.w = NULL
    src.row_ptr = NULL
    src.row_cols = NULL
    src.vec = &t[0, 0]
    return _run(&src, C, n_threads, False)


cdef void _gram_into(bloom_source *src, int64_t C, int64_t chunk, int nt, int64_t slots,
                     double *buf, const double *v, double *out) noexcept nogil:
    src.vec = v
    memset(out, 0, src.D * sizeof(double))
    _chunk_sum(_gram_range, src, C, src.D, chunk, nt, slots, buf, out, True)


cdef void _chunk_sum(fastldp_chunk_fn fn, const void *ctx, int64_t n, int64_t p, int64_t chunk,
                     int nt, int64_t slots, double *buf, double *out,
                     bint one_pass=False) noexcept nogil:
    # one thread: the chunks in order without a parallel region per wave, each into a zeroed
    # partial added to ``out`` (fastldp_ordered_chunk_sum's sums), or straight into ``out``
    # for a ``fn`` that adds to each entry once (``one_pass``: ``out + (0 + P) == out + P``,
    # and ``out`` never holds -0, so the bits are the same)
    cdef int64_t start, stop, e
    if nt > 1:
        fastldp_ordered_chunk_sum(fn, ctx, n, p, chunk, nt, slots, buf, out)
        return
    start = 0
    while start < n:
        stop = min(start + chunk, n)
        if one_pass:
            fn(ctx, start, stop, out)
        else:
            memset(buf, 0, p * sizeof(double))
            fn(ctx, start, stop, buf)
            for e in range(p):
                out[e] += buf[e]
        start = stop


cdef inline void _precondition(const double *r, double *z, int64_t D, double a,
                               double b) noexcept nogil:
    # (a I + b 1 1^T)^{-1} r by Sherman-Morrison; the identity when a == 0
    cdef int64_t i
    cdef double s = 0.0
    if a == 0.0:
        memcpy(z, r, D * sizeof(double))
        return
    for i in range(D):
        s += r[i]
    s = b * s / (a + b * D)
    for i in range(D):
        z[i] = (r[i] - s) / a


def bloom_cg(const uint16_t[:, :, ::1] pos, const int64_t[::1] row_ptr,
             const uint32_t[::1] row_cols, int64_t k, const double[::1] weights,
             const double[::1] rhs, double precond_a, double precond_b, double tol,
             int64_t maxiter, int n_threads=1):
    """Conjugate gradients from zero on ``G x = rhs`` (``G`` as in :func:`bloom_gram_apply`).

    Preconditioned by ``M = a I + b 1 1^T`` (``precond_a > 0``, ``a + b D > 0``;
    ``M^{-1}`` by Sherman-Morrison in ``O(D)``), or not (``precond_a = 0``).
    Stops once the recursive residual ``||r||_2`` is at most
    ``tol ||rhs||_2``, or after ``maxiter`` products.

    Returns
    -------
    x : float64 array, shape (D,)
    iterations : int
    alphas, betas : float64 arrays, shape (iterations,)
        The step sizes and ``beta_j = (r_{j+1}, z_{j+1}) / (r_j, z_j)``: the
        Lanczos tridiagonal of ``M^{-1} G`` (its Ritz values) is built from
        them.
    """
    _check(pos, k)
    cdef int64_t C = pos.shape[0], D = pos.shape[1], i, it = 0
    if weights.shape[0] != C or rhs.shape[0] != D:
        raise ValueError(f"weights must have length C = {C} and rhs length D = {D}, got "
                         f"{weights.shape[0]} and {rhs.shape[0]}")
    if not (precond_a >= 0.0) or (precond_a > 0.0 and not (precond_a + precond_b * D > 0.0)):
        raise ValueError(f"the preconditioner a I + b 11^T must be positive definite, got "
                         f"a = {precond_a}, b = {precond_b}")
    if maxiter < 0:
        raise ValueError(f"maxiter must be >= 0, got {maxiter}")
    _check_rows(row_ptr, row_cols, C, k, D)
    cdef bloom_source src
    src.row_ptr = &row_ptr[0]
    src.row_cols = &row_cols[0] if row_cols.shape[0] else NULL
    src.pos = &pos[0, 0, 0]
    src.D = D
    src.h = pos.shape[2]
    src.k = k
    src.w = &weights[0]
    cdef int64_t chunk = cohort_chunk(C)
    cdef int64_t nchunks = (C + chunk - 1) // chunk
    cdef int nt = max(1, min(n_threads, <int>nchunks))
    cdef int64_t slots = min(nchunks, SLOTS_PER_THREAD * nt)
    x_out = np.zeros(D, dtype=np.float64)
    work = np.empty(4 * D + slots * D, dtype=np.float64)
    al_out = np.empty(max(1, maxiter), dtype=np.float64)
    be_out = np.empty(max(1, maxiter), dtype=np.float64)
    cdef double[::1] xv = x_out, wv = work, alv = al_out, bev = be_out
    cdef double *x = &xv[0]
    cdef double *r = &wv[0]
    cdef double *z = r + D
    cdef double *p = z + D
    cdef double *q = p + D
    cdef double *buf = q + D
    cdef double rz, rz_next, rr, pq, alpha, beta, stop
    with nogil:
        memcpy(r, &rhs[0], D * sizeof(double))
        rr = 0.0
        for i in range(D):
            rr += r[i] * r[i]
        stop = tol * tol * rr
        _precondition(r, z, D, precond_a, precond_b)
        memcpy(p, z, D * sizeof(double))
        rz = 0.0
        for i in range(D):
            rz += r[i] * z[i]
        while it < maxiter and rr > stop:
            _gram_into(&src, C, chunk, nt, slots, buf, p, q)
            pq = 0.0
            for i in range(D):
                pq += p[i] * q[i]
            if not (pq > 0.0):
                break  # G p = 0: the consistent part is solved
            alpha = rz / pq
            rr = 0.0
            for i in range(D):
                x[i] += alpha * p[i]
                r[i] -= alpha * q[i]
                rr += r[i] * r[i]
            _precondition(r, z, D, precond_a, precond_b)
            rz_next = 0.0
            for i in range(D):
                rz_next += r[i] * z[i]
            beta = rz_next / rz
            for i in range(D):
                p[i] = z[i] + beta * p[i]
            rz = rz_next
            alv[it] = alpha
            bev[it] = beta
            it += 1
    return x_out, int(it), al_out[:it].copy(), be_out[:it].copy()
