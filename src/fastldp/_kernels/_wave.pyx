"""Square Wave's EM and EMS loop (Li et al., SIGMOD 2020) in one C loop.

The NumPy loop (``fastldp.ranges.square_wave.expectation_maximization_numpy``
over a ``WaveChannel``) spends each step in about forty NumPy calls on
arrays of ``d ~ 1024`` doubles, 0.1 to 0.2 ms of call overhead for a few
microseconds of arithmetic. Here the whole loop to convergence runs
without the GIL: the forward product ``M theta`` (a piecewise-quadratic
``Phi`` read at the shifted output edges from prefix sums of ``theta``),
the backward product ``M^T r`` (suffix sums of the telescoped ``r`` times
``1, y, y^2``, read at the input edges), the normalization, EMS's binomial
smoothing, the log-likelihood and the stopping rule. The channel's
precomputed tables (edge positions, bin indices, partial-bin terms,
polynomial coefficients) come from ``WaveChannel``; this module imports
nothing of fastldp.

Every operation on ``theta`` is the NumPy twin's, in the same order of
evaluation: no reassociation (the build uses no ``-ffast-math``), no fused
multiply-add (the pragma below), prefix and suffix sums sequential as
``np.cumsum`` is, and the totals (``theta``'s, ``w' . r``, the l1 move) in
NumPy's pairwise order (:func:`_pairwise_sum`). So ``theta`` is the twin's
bit for bit after any number of steps (tests/test_square_wave_kernel.py).
Only the log-likelihood differs in its last places (glibc's ``log`` summed
in order, against NumPy's ``log`` and a BLAS dot); it is computed only when
cheap bounds leave the stopping test open (``expectation_maximization``).
"""

from libc.math cimport log, fabs

# No fused multiply-adds: the NumPy twin rounds every product and sum apart, and the
# kernel's bit-for-bit agreement with it (tests/test_square_wave_kernel.py) needs the
# same. GCC contracts a * b + c by default wherever the target has FMA (-march=native
# with FASTLDP_NATIVE=1, or any aarch64); clang does within an expression, MSVC under
# /arch:AVX2 in some versions.
cdef extern from *:
    """
    #if defined(__clang__)
    #pragma clang fp contract(off)
    #elif defined(__GNUC__)
    #pragma GCC optimize ("fp-contract=off")
    #elif defined(_MSC_VER)
    #pragma fp_contract (off)
    #endif
    """

from ._typedefs cimport intp_t, int64_t

import numpy as np


cdef double _pairwise_sum(const double* a, intp_t n) noexcept nogil:
    """NumPy's sum of a contiguous float64 array, in its order (``pairwise_sum`` of
    numpy/_core/src/umath/loops_utils.h.src: 8 running sums per block of at most 128,
    blocks halved recursively at multiples of 8), so the kernel's totals are NumPy's bits."""
    cdef intp_t i, n2
    cdef double res, r0, r1, r2, r3, r4, r5, r6, r7
    if n < 8:
        res = 0.0
        for i in range(n):
            res += a[i]
        return res
    elif n <= 128:
        r0 = a[0]
        r1 = a[1]
        r2 = a[2]
        r3 = a[3]
        r4 = a[4]
        r5 = a[5]
        r6 = a[6]
        r7 = a[7]
        i = 8
        while i < n - (n % 8):
            r0 += a[i]
            r1 += a[i + 1]
            r2 += a[i + 2]
            r3 += a[i + 3]
            r4 += a[i + 4]
            r5 += a[i + 5]
            r6 += a[i + 6]
            r7 += a[i + 7]
            i += 8
        res = ((r0 + r1) + (r2 + r3)) + ((r4 + r5) + (r6 + r7))
        while i < n:
            res += a[i]
            i += 1
        return res
    n2 = n // 2
    n2 -= n2 % 8
    return _pairwise_sum(a, n2) + _pairwise_sum(a + n2, n - n2)


cdef void _forward(intp_t d, intp_t n1, const double* padded, const double* mid,
                   const double* a, const int64_t* J, const double* part,
                   const double* widths_out, double p, double q,
                   double* S0, double* S1, double* phi, double* out) noexcept nogil:
    """``out = M theta``; ``padded`` is ``theta`` with one 0 on either side (length d + 2)."""
    cdef intp_t i, k, j, jj
    cdef double s0 = 0.0, s1 = 0.0, total, pq = p - q
    S0[0] = 0.0
    S0[1] = 0.0
    S1[0] = 0.0
    S1[1] = 0.0
    for i in range(d):
        s0 = s0 + padded[i + 1]
        S0[i + 2] = s0
        s1 = s1 + padded[i + 1] * mid[i]
        S1[i + 2] = s1
    for k in range(2 * n1):
        jj = J[k]
        phi[k] = a[k] * S0[jj] - S1[jj] + padded[jj] * part[k]
    total = q * S0[d + 1]
    for j in range(n1 - 1):
        out[j] = total * widths_out[j] + pq * ((phi[j + 1] - phi[j])
                                               - (phi[n1 + j + 1] - phi[n1 + j]))


cdef void _backward(intp_t d, intp_t n1, const double* r, const double* y, const double* y2,
                    const int64_t* above, const double* cpoly, const double* widths_out,
                    double p, double q,
                    double* e, double* suf, double* T, double* out) noexcept nogil:
    """``out = M^T r`` (``r`` of length n1 - 1; ``suf`` holds 3 (n1 + 1), ``T`` 2 (d + 1))."""
    cdef intp_t i, k, ab, m = d + 1, n2 = n1 + 1
    cdef double s0 = 0.0, s1 = 0.0, s2 = 0.0, dot, pq = p - q, qdot, t0, t1, bins = <double>d
    cdef double* suf1 = suf + n2
    cdef double* suf2 = suf + 2 * n2
    cdef const double* c0 = cpoly
    cdef const double* c1 = cpoly + 2 * m
    cdef const double* c2 = cpoly + 4 * m
    # e_k = r_{k-1} - r_k with r_{-1} = r_{n1-1} = 0 (NumPy: e[:-1] = -r; e[1:] += r)
    e[0] = -r[0]
    for k in range(1, n1 - 1):
        e[k] = -r[k] + r[k - 1]
    e[n1 - 1] = r[n1 - 2]
    suf[n1] = 0.0
    suf1[n1] = 0.0
    suf2[n1] = 0.0
    for k in range(n1 - 1, -1, -1):
        s0 = s0 + e[k]
        suf[k] = s0
        s1 = s1 + y[k] * e[k]
        suf1[k] = s1
        s2 = s2 + y2[k] * e[k]
        suf2[k] = s2
    # w' . r as NumPy's (w' * r).sum(): the products into e (read no more), then its sum
    for k in range(n1 - 1):
        e[k] = widths_out[k] * r[k]
    dot = _pairwise_sum(e, n1 - 1)
    for i in range(2 * m):
        ab = above[i]
        T[i] = suf[ab] * c0[i] + suf1[ab] * c1[i] + suf2[ab] * c2[i]
    qdot = q * dot
    t0 = T[0] - T[m]
    for i in range(d):
        t1 = T[i + 1] - T[m + i + 1]
        out[i] = qdot + pq * ((t0 - t1) * bins)  # the twin's / width as * d (d is exact)
        t0 = t1


cdef double _dot(const double* x, const double* y, intp_t n) noexcept nogil:
    """``sum x_j y_j`` in four running sums (for the likelihood bounds: any order will do)."""
    cdef intp_t j = 0
    cdef double s0 = 0.0, s1 = 0.0, s2 = 0.0, s3 = 0.0
    while j + 4 <= n:
        s0 += x[j] * y[j]
        s1 += x[j + 1] * y[j + 1]
        s2 += x[j + 2] * y[j + 2]
        s3 += x[j + 3] * y[j + 3]
        j += 4
    while j < n:
        s0 += x[j] * y[j]
        j += 1
    return (s0 + s1) + (s2 + s3)


cdef double _log_likelihood(intp_t n, const double* hist, const double* predicted) noexcept nogil:
    cdef intp_t j
    cdef double total = 0.0
    for j in range(n):
        if hist[j] > 0.0:  # empty output bins add nothing (and M theta may be 0 there)
            total += hist[j] * log(predicted[j])
    return total


cdef int _check_tables(intp_t d, intp_t n_out, const double[::1] mid, const double[::1] a,
                       const int64_t[::1] J, const double[::1] part,
                       const double[::1] widths_out, const double[:, ::1] powers,
                       const int64_t[:, ::1] above, const double[:, :, ::1] cpoly) except -1:
    """Check the channel's tables against ``d`` and ``d'`` (ValueError naming the first off)."""
    cdef intp_t n1 = n_out + 1
    checks = (("mid", mid.shape[0], d), ("a", a.shape[0], 2 * n1), ("J", J.shape[0], 2 * n1),
              ("part", part.shape[0], 2 * n1), ("widths_out", widths_out.shape[0], n_out),
              ("powers", powers.shape[0], 3), ("powers[0]", powers.shape[1], n1),
              ("above", above.shape[0], 2),
              ("above[0]", above.shape[1], d + 1), ("cpoly", cpoly.shape[0], 3),
              ("cpoly[0]", cpoly.shape[1], 2), ("cpoly[0, 0]", cpoly.shape[2], d + 1))
    for name, got, want in checks:
        if got != want:
            raise ValueError(f"the wave kernel's table {name!r} must have length {want} "
                             f"(d = {d}, d' = {n_out}); got {got}")
    if d < 1 or n_out < 1:
        raise ValueError(f"the wave kernel needs d >= 1 and d' >= 1; got d = {d}, d' = {n_out}")
    cdef intp_t i
    for i in range(2 * n1):
        if not (0 <= J[i] <= d + 1):
            raise ValueError(f"J[{i}] = {J[i]} is outside [0, {d + 1}]")
    for i in range(d + 1):
        if not (0 <= above[0, i] <= n1 and 0 <= above[1, i] <= n1):
            raise ValueError(f"above[:, {i}] is outside [0, {n1}]")
    return 0


def pairwise_sum(const double[::1] values):
    """The kernel's sums (``_pairwise_sum``), for the test that they are NumPy's ``sum``."""
    if values.shape[0] == 0:
        return 0.0
    return _pairwise_sum(&values[0], values.shape[0])


def forward(const double[::1] theta, const double[::1] mid, const double[::1] a,
            const int64_t[::1] J, const double[::1] part, const double[::1] widths_out,
            double p, double q):
    """``M theta`` (shape ``(d',)``) from ``WaveChannel``'s tables (for tests)."""
    cdef intp_t d = theta.shape[0], n_out = widths_out.shape[0], n1 = n_out + 1, i
    if (d < 1 or n_out < 1 or mid.shape[0] != d or a.shape[0] != 2 * n1
            or J.shape[0] != 2 * n1 or part.shape[0] != 2 * n1):
        raise ValueError("forward: tables of the wrong length for theta and widths_out")
    for i in range(2 * n1):
        if not (0 <= J[i] <= d + 1):
            raise ValueError(f"J[{i}] = {J[i]} is outside [0, {d + 1}]")
    padded_arr = np.zeros(d + 2)
    padded_arr[1:d + 1] = theta
    out = np.empty(n_out)
    cdef double[::1] padded = padded_arr, res = out
    cdef double[::1] S0 = np.empty(d + 2), S1 = np.empty(d + 2), phi = np.empty(2 * n1)
    with nogil:
        _forward(d, n1, &padded[0], &mid[0], &a[0], &J[0], &part[0], &widths_out[0], p, q,
                 &S0[0], &S1[0], &phi[0], &res[0])
    return out


def backward(const double[::1] r, const double[:, ::1] powers, const int64_t[:, ::1] above,
             const double[:, :, ::1] cpoly, const double[::1] widths_out,
             double p, double q):
    """``M^T r`` (shape ``(d,)``) from ``WaveChannel``'s tables (for tests)."""
    cdef intp_t n_out = r.shape[0], n1 = n_out + 1, d = above.shape[1] - 1, i
    if (n_out < 1 or d < 1 or powers.shape[0] != 3 or powers.shape[1] != n1
            or widths_out.shape[0] != n_out or above.shape[0] != 2 or cpoly.shape[0] != 3
            or cpoly.shape[1] != 2 or cpoly.shape[2] != d + 1):
        raise ValueError("backward: tables of the wrong shape for r")
    for i in range(d + 1):
        if not (0 <= above[0, i] <= n1 and 0 <= above[1, i] <= n1):
            raise ValueError(f"above[:, {i}] is outside [0, {n1}]")
    out = np.empty(d)
    cdef double[::1] res = out, e = np.empty(n1), suf = np.empty(3 * (n1 + 1))
    cdef double[::1] T = np.empty(2 * (d + 1))
    with nogil:
        _backward(d, n1, &r[0], &powers[1, 0], &powers[2, 0], &above[0, 0], &cpoly[0, 0, 0],
                  &widths_out[0], p, q, &e[0], &suf[0], &T[0], &res[0])
    return out


def expectation_maximization(const double[::1] hist, double[::1] theta,
                             const double[::1] mid, const double[::1] a, const int64_t[::1] J,
                             const double[::1] part, const double[::1] widths_out,
                             const double[:, ::1] powers, const int64_t[:, ::1] above,
                             const double[:, :, ::1] cpoly, double p, double q,
                             bint smoothing, double tolerance, Py_ssize_t max_iterations):
    """EM (or EMS) over a wave channel to convergence; ``theta`` (the start) becomes the result.

    The update, the smoothing and the stopping rule are those of
    ``fastldp.ranges.square_wave.expectation_maximization_numpy``: stop when a
    step moves ``theta`` by at most ``1 / n`` in l1, or (from the third step
    on) when ``sum_j h_j log (M theta)_j`` changes by less than
    ``tolerance``, or after ``max_iterations`` steps. ``hist`` must hold a
    positive total (the caller returns the start for an empty histogram).

    Returns
    -------
    iterations : int
    converged : bool
    log_likelihood : float
    """
    cdef intp_t d = theta.shape[0], n_out = hist.shape[0], n1 = n_out + 1
    _check_tables(d, n_out, mid, a, J, part, widths_out, powers, above, cpoly)
    cdef double n = _pairwise_sum(&hist[0], n_out)  # the twin's hist.sum()
    cdef intp_t i, j
    if not (n > 0.0):
        raise ValueError(f"the wave kernel needs a histogram with a positive total; got {n!r}")
    if max_iterations < 0:
        raise ValueError(f"max_iterations must be >= 0; got {max_iterations}")
    # theta and the step's result live in zero-padded buffers (the forward product reads
    # theta_K at index K + 1, and 0 at both ends); M theta and h / M theta for the last
    # two iterates (the likelihood test compares them)
    cdef double[::1] buf_a = np.zeros(d + 2), buf_b = np.zeros(d + 2)
    cdef double[::1] smoothed = np.empty(d), back = np.empty(d)
    cdef double[::1] pred_a = np.empty(n_out), pred_b = np.empty(n_out)
    cdef double[::1] r_a = np.empty(n_out), r_b = np.empty(n_out)
    cdef double[::1] S0 = np.empty(d + 2), S1 = np.empty(d + 2)
    cdef double[::1] phi = np.empty(2 * n1), e = np.empty(n1), suf = np.empty(3 * (n1 + 1))
    cdef double[::1] T = np.empty(2 * (d + 1))
    cdef double* cur = &buf_a[0]
    cdef double* nxt = &buf_b[0]
    cdef double* pred_cur = &pred_a[0]
    cdef double* pred_nxt = &pred_b[0]
    cdef double* r_cur = &r_a[0]
    cdef double* r_nxt = &r_b[0]
    cdef double* swap
    cdef double inv_total, moved, ll = 0.0, ll_cur = 0.0, lower
    cdef double inv_n = 1.0 / n, w_min = widths_out[0]
    cdef bint ll_cur_known = False, ll_known = False, converged = False
    cdef Py_ssize_t step, iterations = max_iterations
    # The likelihood test |ll_new - ll_old| < tolerance needs a log per output bin and step,
    # a third of a step's time. Both sides of log x are bounded without one: 1 - 1/x <=
    # log x <= x - 1, so with x = M theta_new / M theta_old and r = h / M theta,
    #     n - sum r_new M theta_old  <=  ll_new - ll_old  <=  sum r_old M theta_new - n,
    # two dot products of vectors the step computes anyway. The logs are taken only when
    # these bounds leave the test open. The margin covers the rounding of the bounds and of
    # the twin's own ll (a sum of d' terms h_j log p_j with p_j >= q w'_min / 2, so each
    # |log p_j| <= L): (d' + 8) ulps of n (L + 2), four times over; the decision is the
    # twin's whenever its computed difference is within that of the true one.
    for j in range(n_out):
        if widths_out[j] < w_min:
            w_min = widths_out[j]
    cdef double margin = 4.0 * (n_out + 8) * 1.1102230246251565e-16 * n * (
        -log(0.5 * q * w_min) + 2.0)
    for i in range(d):
        cur[i + 1] = theta[i]
    with nogil:
        _forward(d, n1, cur, &mid[0], &a[0], &J[0], &part[0], &widths_out[0], p, q,
                 &S0[0], &S1[0], &phi[0], pred_cur)
        for j in range(n_out):
            r_cur[j] = hist[j] / pred_cur[j]
        for step in range(max_iterations):
            _backward(d, n1, r_cur, &powers[1, 0], &powers[2, 0], &above[0, 0],
                      &cpoly[0, 0, 0], &widths_out[0], p, q, &e[0], &suf[0], &T[0],
                      &back[0])
            for i in range(d):
                nxt[i + 1] = cur[i + 1] * back[i]
            inv_total = 1.0 / _pairwise_sum(nxt + 1, d)
            for i in range(d):
                nxt[i + 1] = nxt[i + 1] * inv_total
            if smoothing:
                # [1, 2, 1] / 4 inside, [2, 1] / 3 and [1, 2] / 3 at the ends, in NumPy's order
                # (2 x_i + x_{i-1}) + x_{i+1}; * 0.25 is / 4 exactly
                if d == 1:
                    smoothed[0] = (2.0 * nxt[1]) / 3.0
                else:
                    smoothed[0] = (2.0 * nxt[1] + nxt[2]) / 3.0
                    for i in range(1, d - 1):
                        smoothed[i] = ((2.0 * nxt[i + 1] + nxt[i]) + nxt[i + 2]) * 0.25
                    smoothed[d - 1] = (2.0 * nxt[d] + nxt[d - 1]) / 3.0
                inv_total = 1.0 / _pairwise_sum(&smoothed[0], d)
                for i in range(d):
                    nxt[i + 1] = smoothed[i] * inv_total
            _forward(d, n1, nxt, &mid[0], &a[0], &J[0], &part[0], &widths_out[0], p, q,
                     &S0[0], &S1[0], &phi[0], pred_nxt)
            for j in range(n_out):
                r_nxt[j] = hist[j] / pred_nxt[j]
            for i in range(d):
                back[i] = fabs(nxt[i + 1] - cur[i + 1])  # back is free until the next step
            moved = _pairwise_sum(&back[0], d)
            swap = cur
            cur = nxt
            nxt = swap
            ll_known = False  # whether ll holds the new iterate's log-likelihood
            if moved <= inv_n:
                iterations = step + 1
                converged = True
                break
            # the twin's test: step > 1 and |ll_new - ll_old| < tolerance (never true for a
            # tolerance <= 0 or NaN)
            if step > 1 and tolerance > 0.0:
                # EM raises the likelihood, so the lower bound settles it nearly always
                lower = n - _dot(r_nxt, pred_cur, n_out)
                if not (lower >= tolerance + margin
                        or _dot(r_cur, pred_nxt, n_out) - n <= -(tolerance + margin)):
                    if not ll_cur_known:
                        ll_cur = _log_likelihood(n_out, &hist[0], pred_cur)
                    ll = _log_likelihood(n_out, &hist[0], pred_nxt)
                    ll_known = True
                    if fabs(ll - ll_cur) < tolerance:
                        iterations = step + 1
                        converged = True
                        break
            swap = pred_cur
            pred_cur = pred_nxt
            pred_nxt = swap
            swap = r_cur
            r_cur = r_nxt
            r_nxt = swap
            ll_cur = ll
            ll_cur_known = ll_known
        if not converged:
            # the last iterate's M theta is pred_cur (or the start's, with no step)
            ll = ll_cur if ll_cur_known else _log_likelihood(n_out, &hist[0], pred_cur)
        elif not ll_known:
            ll = _log_likelihood(n_out, &hist[0], pred_nxt)
    for i in range(d):
        theta[i] = cur[i + 1]
    return int(iterations), bool(converged), float(ll)
