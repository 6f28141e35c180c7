"""Exact, order-free accumulation of float64 terms (the streaming decoders' sums).

A sum of doubles rounded after every addition depends on the order of the
additions, so a decode split across files, processes or machines would not
reproduce the one-shot result. These kernels keep the sum *exactly*: every
finite double is an integer multiple of ``2**-1074``, and the running sum is
held per position as signed 32-bit *digits* at fixed global places
``2**(32 * k)``::

    value[j] = sum_r digits[r, j] * 2**(32 * (k_lo + r))

Adding a double ``v = +-M * 2**L`` (``M < 2**53``) adds three numbers below
``2**32`` to three consecutive digits, so an ``int64`` digit absorbs at
least ``2**31 - 1`` additions before it could overflow; :func:`normalize`
then carries every digit back into ``[0, 2**32)`` (the top digit keeps the
sign). Integer addition is associative and commutative, so the state after
any split and any merge order is the same number, and :func:`to_double`
rounds it once, correctly (round half to even), to the nearest double.

These functions assume validated inputs: finite doubles and a digit window
wide enough for them (``digit_range`` says which). The Python wrapper
:class:`fastldp.streaming.ExactSum` grows the window and schedules the
normalizations.
"""

import numpy as np

from cython.parallel cimport prange

from libc.math cimport frexp, ldexp, isfinite
from libc.stdlib cimport calloc, free
from libc.stdint cimport int32_t

from ._typedefs cimport intp_t, uint64_t, int64_t, uint32_t

DIGIT_BITS = 32
# Smallest and largest digit index any finite double or int64 * 2**shift
# (|shift| <= 1100) can touch, and the additions a normalized digit absorbs.
SAFE_ADDS = (1 << 31) - 1
cdef intp_t _SAFE_ADDS = (1 << 31) - 1

cdef extern from "string.h":
    void *memcpy(void *dest, const void *src, size_t n) noexcept nogil

cdef uint64_t MASK32 = 0xFFFFFFFF
cdef uint64_t MANTISSA = (<uint64_t>1 << 52) - 1


cdef inline int64_t _floor_div32(int64_t a) noexcept nogil:
    # floor(a / 32) for negative a too (C division truncates toward zero)
    if a >= 0:
        return a // 32
    return -((-a + 31) // 32)


cdef inline void _add_magnitude(int64_t *col, intp_t stride, int64_t row0, uint64_t m,
                                int s, int64_t sign) noexcept nogil:
    """Add sign * m * 2**s (m < 2**64, 0 <= s < 32) at digit row0 (and the two above)."""
    cdef uint64_t d0 = (m << s) & MASK32
    cdef uint64_t d1
    cdef uint64_t d2
    if s == 0:
        d1 = (m >> 32) & MASK32
        d2 = 0
    else:
        d1 = (m >> (32 - s)) & MASK32
        d2 = m >> (64 - s)
    col[row0 * stride] += sign * <int64_t>d0
    col[(row0 + 1) * stride] += sign * <int64_t>d1
    if d2:
        col[(row0 + 2) * stride] += sign * <int64_t>d2


cdef inline bint _decompose(double v, uint64_t *M, int64_t *L, int64_t *sign) noexcept nogil:
    """v = sign * M * 2**L from the bits of v; False for a non-finite v (M = 0 for zeros)."""
    cdef uint64_t bits
    memcpy(&bits, &v, 8)
    cdef int64_t biased = <int64_t>((bits >> 52) & 0x7FF)
    M[0] = bits & MANTISSA
    if biased == 0x7FF:
        return False
    if biased == 0:
        L[0] = -1074
    else:
        M[0] |= (<uint64_t>1) << 52
        L[0] = biased - 1075
    sign[0] = -1 if (bits >> 63) else 1
    return True


def digit_range(const double[::1] values):
    """Return ``(k_min, k_max)``: the digit rows the nonzero ``values`` touch.

    ``k_max`` includes the row a carry may reach. Returns ``None`` when every
    value is zero. Raises ``ValueError`` on a non-finite value.
    """
    cdef intp_t n = values.shape[0]
    cdef intp_t i
    cdef uint64_t M
    cdef int64_t L, k0, sign
    cdef int64_t kmin = 1 << 40
    cdef int64_t kmax = -(1 << 40)
    cdef intp_t bad = -1
    with nogil:
        for i in range(n):
            if not _decompose(values[i], &M, &L, &sign):
                bad = i
                break
            if M == 0:
                continue
            k0 = _floor_div32(L)
            if k0 < kmin:
                kmin = k0
            if k0 + 3 > kmax:
                kmax = k0 + 3
    if bad >= 0:
        raise ValueError(f"exact sums take finite values; got {values[bad]!r} at index {bad}")
    if kmin > kmax:
        return None
    return int(kmin), int(kmax)


def int_digit_range(int shift):
    """Digit rows an ``int64 * 2**shift`` term touches (with the carry row)."""
    cdef int64_t k0 = _floor_div32(shift)
    return int(k0), int(k0 + 3)


def add_values(int64_t[:, ::1] digits, int64_t k_lo, index, const double[::1] values):
    """Add ``values[t]`` exactly to position ``index[t]`` (``index=None``: position ``t``).

    ``digits`` has shape ``(W, p)`` and represents digit rows
    ``k_lo .. k_lo + W - 1``; the caller guarantees the rows exist
    (:func:`digit_range`) and the indices are in ``[0, p)``.
    """
    cdef intp_t n = values.shape[0]
    cdef intp_t p = digits.shape[1]
    cdef const int64_t[::1] idx
    cdef bint have_index = index is not None
    if have_index:
        idx = index
        if idx.shape[0] != n:
            raise ValueError("index and values must have the same length")
    elif n > p:
        raise ValueError("without an index, values must have at most p entries")
    cdef intp_t t, j
    cdef int64_t L, k0, sign
    cdef uint64_t M
    cdef int s
    with nogil:
        for t in range(n):
            if not _decompose(values[t], &M, &L, &sign) or M == 0:
                continue  # digit_range has refused non-finite values
            k0 = _floor_div32(L)
            s = <int>(L - 32 * k0)
            j = idx[t] if have_index else t
            _add_magnitude(&digits[0, j], p, k0 - k_lo, M, s, sign)


def add_integers(int64_t[:, ::1] digits, int64_t k_lo, const int64_t[::1] values, int shift):
    """Add ``values[j] * 2**shift`` exactly to position ``j`` (one term each)."""
    cdef intp_t n = values.shape[0]
    cdef intp_t p = digits.shape[1]
    if n != p:
        raise ValueError("values must have one entry per position")
    cdef int64_t k0 = _floor_div32(shift)
    cdef int s = <int>(shift - 32 * k0)
    cdef intp_t j
    cdef int64_t v, sign
    cdef uint64_t M
    with nogil:
        for j in range(n):
            v = values[j]
            if v == 0:
                continue
            if v < 0:
                sign = -1
                M = <uint64_t>(-(v + 1)) + 1  # |INT64_MIN| without overflow
            else:
                sign = 1
                M = <uint64_t>v
            _add_magnitude(&digits[0, j], p, k0 - k_lo, M, s, sign)


def normalize(int64_t[:, ::1] digits):
    """Carry every digit but the top one into ``[0, 2**32)``, in place.

    The value is unchanged; afterwards each digit absorbs ``SAFE_ADDS``
    more additions. The caller keeps the top row free enough for the carry
    (:class:`fastldp.streaming.ExactSum` keeps one spare row).
    """
    cdef intp_t W = digits.shape[0]
    cdef intp_t p = digits.shape[1]
    cdef intp_t r, j
    cdef int64_t c
    with nogil:
        for r in range(W - 1):
            for j in range(p):
                c = digits[r, j] >> 32  # arithmetic shift: floor division
                digits[r, j] -= c << 32
                digits[r + 1, j] += c


def to_double(const int64_t[:, ::1] digits, int64_t k_lo):
    """Round each position's exact value to the nearest double (ties to even).

    ``digits`` need not be normalized. Values beyond the double range give
    +-inf; a result in the subnormal range may be off by one unit (it is
    rounded to 53 bits, then scaled).
    """
    cdef intp_t W = digits.shape[0]
    cdef intp_t p = digits.shape[1]
    out = np.zeros(p, dtype=np.float64)
    if W == 0:
        return out
    cdef double[::1] o = out
    work = np.empty(W, dtype=np.int64)
    cdef int64_t[::1] d = work
    cdef intp_t r, j, t
    cdef int64_t c
    cdef bint negative, sticky
    cdef uint64_t hi, lo32, w64, top
    cdef int lz
    cdef double value
    with nogil:
        for j in range(p):
            for r in range(W):
                d[r] = digits[r, j]
            for r in range(W - 1):
                c = d[r] >> 32
                d[r] -= c << 32
                d[r + 1] += c
            negative = d[W - 1] < 0
            if negative:
                # negate the number: -(sum d_r 2^32r), then carry again
                for r in range(W):
                    d[r] = -d[r]
                for r in range(W - 1):
                    c = d[r] >> 32
                    d[r] -= c << 32
                    d[r + 1] += c
            # the top digit may exceed 32 bits only when W rows were too few
            # for the carries; split it further is not needed: it is < 2**63.
            t = W - 1
            while t >= 0 and d[t] == 0:
                t -= 1
            if t < 0:
                o[j] = 0.0
                continue
            top = <uint64_t>d[t]
            if top >> 32:
                # a top digit of more than 32 bits (a narrow window): take
                # the top 64 bits from it and the next digit
                lz = 0
                while not ((top << lz) >> 63):
                    lz += 1
                lo32 = <uint64_t>d[t - 1] if t >= 1 else 0
                w64 = (top << lz) | ((lo32 << 32) >> (64 - lz) if lz > 0 else 0)
                sticky = False
                if lz < 32 and (lo32 << (32 + lz)) != 0:
                    sticky = True
                for r in range(t - 1):
                    if d[r] != 0:
                        sticky = True
                if sticky:
                    w64 |= 1
                value = ldexp(<double>w64, <int>(32 * (k_lo + t) - lz))
            else:
                hi = (top << 32) | (<uint64_t>d[t - 1] if t >= 1 else 0)
                lo32 = <uint64_t>d[t - 2] if t >= 2 else 0
                lz = 0
                while not ((hi << lz) >> 63):
                    lz += 1
                # the 96-bit number (hi, lo32) shifted left by lz: keep its top 64 bits
                w64 = (hi << lz) | ((lo32 >> (32 - lz)) if lz > 0 else 0)
                sticky = ((lo32 << lz) & MASK32) != 0 if lz < 32 else False
                for r in range(t - 2):
                    if d[r] != 0:
                        sticky = True
                if sticky:
                    w64 |= 1
                # bit 0 of w64 has weight 2**(32 * (k_lo + t - 2) + 32 - lz)
                value = ldexp(<double>w64, <int>(32 * (k_lo + t - 1) - lz))
            o[j] = -value if negative else value
    return out


# rows of a one-position accumulator spanning every finite double:
# digit places 2**(32 k) for k in [-34, 33], plus two rows of carry headroom
cdef int64_t _FULL_K_LO = -34
cdef intp_t _FULL_ROWS = 70
FULL_K_LO = _FULL_K_LO
FULL_ROWS = _FULL_ROWS


cdef intp_t _PARALLEL_FROM = 1 << 15  # fewer values are summed by one thread


# _sum_range adds the mantissas of equal exponents first: one bucket per
# exponent L (the place of a double's lowest bit, -1074 .. 971), each the low and
# high 32 bits of the mantissas summed apart in int64, and the buckets go into
# the digit row once per flush. An exact sum, the same integer as adding each
# value into the digits (about three times faster: one indexed add per value
# instead of three digit updates: 210 -> 141 us for 65,536 values on one thread).
cdef intp_t _BUCKETS = 2046
# a bucket's low half grows by < 2**32 per value: 2**30 values keep it < 2**62
cdef intp_t _BUCKET_FLUSH = 1 << 30


cdef inline void _add_signed(int64_t *acc, int64_t v, int64_t L) noexcept nogil:
    """Add v * 2**L (|v| < 2**63) into the one-position row acc."""
    cdef int64_t k0 = _floor_div32(L)
    if v == 0:
        return
    _add_magnitude(acc, 1, k0 - _FULL_K_LO, <uint64_t>(-v if v < 0 else v),
                   <int>(L - 32 * k0), -1 if v < 0 else 1)


cdef inline void _normalize_row(int64_t *acc) noexcept nogil:
    """Carry every digit of the one-position row acc into [0, 2**32)."""
    cdef intp_t r
    cdef int64_t c
    for r in range(_FULL_ROWS - 1):
        c = acc[r] >> 32
        acc[r] -= c << 32
        acc[r + 1] += c


cdef void _flush_buckets(int64_t *acc, int64_t *low, int64_t *high) noexcept nogil:
    """Add every bucket into acc (then normalize it) and clear the buckets."""
    cdef intp_t b
    for b in range(_BUCKETS):
        if low[b] != 0 or high[b] != 0:
            _add_signed(acc, low[b], b - 1074)
            _add_signed(acc, high[b], b - 1074 + 32)
            low[b] = 0
            high[b] = 0
    _normalize_row(acc)


cdef void _sum_range(const double *values, intp_t start, intp_t stop, int64_t *acc,
                     intp_t *bad) noexcept nogil:
    """Add ``values[start:stop]`` into the normalized row ``acc``; ``bad``: the first
    non-finite index (the sum stops there), left as is when there is none."""
    cdef intp_t i, b
    cdef uint64_t M
    cdef int64_t L, sign
    cdef intp_t since = 0
    cdef int64_t *low = <int64_t *>calloc(2 * _BUCKETS, sizeof(int64_t))
    cdef int64_t *high
    if low == NULL:  # no scratch: each value into the digits
        for i in range(start, stop):
            if not _decompose(values[i], &M, &L, &sign):
                bad[0] = i
                return
            if M != 0:
                _add_signed(acc, sign * <int64_t>M, L)
                since += 1
                if since == _SAFE_ADDS:
                    _normalize_row(acc)
                    since = 0
        _normalize_row(acc)
        return
    high = low + _BUCKETS
    for i in range(start, stop):
        if not _decompose(values[i], &M, &L, &sign):
            bad[0] = i
            break
        b = L + 1074  # subnormals and the smallest normals share L = -1074
        low[b] += sign * <int64_t>(M & MASK32)
        high[b] += sign * <int64_t>(M >> 32)
        since += 1
        if since == _BUCKET_FLUSH:
            _flush_buckets(acc, low, high)
            since = 0
    _flush_buckets(acc, low, high)
    free(low)


def sum_terms(const double[::1] values, int n_threads=1):
    """The exact sum of ``values`` as ``(k_lo, digits)`` of one position.

    One pass that reads each double's sign, exponent and mantissa from its
    bits (no ``frexp``) into a fixed accumulator spanning every finite
    double; returns the rows from ``FULL_K_LO``, normalized. With
    ``n_threads > 1`` (and at least 32,768 values) each thread sums a
    contiguous part into its own accumulator and the parts are added at the
    end: integer sums, so the digits are the same for any thread count.
    Raises ``ValueError`` on a non-finite value (naming the first).
    """
    cdef intp_t n = values.shape[0]
    cdef int nt = 1 if n < _PARALLEL_FROM or n_threads < 1 else min(n_threads, 64)
    lanes_arr = np.zeros((nt, _FULL_ROWS), dtype=np.int64)
    cdef int64_t[:, ::1] lanes = lanes_arr
    bads_arr = np.full(nt, -1, dtype=np.intp)
    cdef intp_t[::1] bads = bads_arr
    cdef int t
    cdef intp_t r
    cdef int64_t c
    if n:
        with nogil:
            for t in prange(nt, num_threads=nt, schedule="static"):
                _sum_range(&values[0], (n * t) // nt, (n * (t + 1)) // nt, &lanes[t, 0],
                           &bads[t])
    bad = [int(b) for b in bads_arr if b >= 0]
    if bad:
        raise ValueError(f"exact sums take finite values; got {values[bad[0]]!r} at index "
                         f"{bad[0]}")
    acc_arr = lanes_arr[0].copy()
    cdef int64_t[::1] acc = acc_arr
    if nt > 1:  # normalized parts: every digit below 2^32, so their sum fits an int64
        with nogil:
            for t in range(1, nt):
                for r in range(_FULL_ROWS):
                    acc[r] += lanes[t, r]
            for r in range(_FULL_ROWS - 1):
                c = acc[r] >> 32
                acc[r] -= c << 32
                acc[r + 1] += c
    return int(_FULL_K_LO), acc_arr


# ------------------------------------------------------------------ exact median
# The median of a float64 array, equal to numpy.median's (the middle value, or
# the mean (a + b) / 2 of the two middle values) without sorting: a radix
# select on order-preserving 64-bit keys. A double's bits, with the sign bit
# flipped for positives and every bit flipped for negatives, order as
# unsigned integers exactly as the doubles do (-0.0 just below +0.0). The
# first pass histograms the top 16 bits (sign, exponent, four bits of the
# significand) of every value, the bucket holding the lower middle rank is
# copied out as keys (in the same pass, the least key of the next non-empty
# bucket, which is the upper middle value of an even n when the bucket ends
# at the lower one), and four passes of 12 bits over ever smaller buckets
# finish it. Two passes over the values, then passes over a bucket: at
# n = 128,000 budgets about half of what numpy.median's introselect over a
# copy costs, which was the largest step of a personalized JPRS decode
# outside its kernel.

cdef inline uint64_t _order_key(double v) noexcept nogil:
    # negatives: every bit flipped; positives: the sign bit set (branch-free)
    cdef uint64_t u
    memcpy(&u, &v, 8)
    return u ^ ((<uint64_t>0 - (u >> 63)) | (<uint64_t>1 << 63))


cdef inline double _from_order_key(uint64_t u) noexcept nogil:
    cdef double v
    if u >> 63:
        u = u & ~(<uint64_t>1 << 63)
    else:
        u = ~u
    memcpy(&v, &u, 8)
    return v


cdef intp_t _bucket_of(uint32_t *hist, intp_t bins, intp_t *rank) noexcept nogil:
    """The bucket holding ``rank`` (0-based); ``rank`` becomes its rank inside the bucket."""
    cdef intp_t d = 0
    cdef intp_t below = 0
    while d < bins - 1 and below + <intp_t>hist[d] <= rank[0]:
        below += hist[d]
        d += 1
    rank[0] -= below
    return d


cdef uint64_t _select_rest(uint64_t *scratch, intp_t m, intp_t rank, uint64_t prefix,
                           uint32_t *hist) noexcept nogil:
    """The key of rank ``rank`` among ``scratch[0:m]``, keys sharing their top 16 bits
    ``prefix``: four passes of 12 bits, each compacting the bucket it keeps in place."""
    cdef int shift
    cdef intp_t i, d, kept
    for shift in range(36, -12, -12):
        for i in range(4096):
            hist[i] = 0
        for i in range(m):
            hist[(scratch[i] >> shift) & 0xFFF] += 1
        d = _bucket_of(hist, 4096, &rank)
        prefix |= (<uint64_t>d) << shift
        if shift == 0:
            break
        kept = 0
        for i in range(m):  # kept <= i: compaction in place
            if ((scratch[i] >> shift) & 0xFFF) == <uint64_t>d:
                scratch[kept] = scratch[i]
                kept += 1
        m = kept
    return prefix


def median(const double[::1] values):
    """The median of ``values``, exactly as :func:`numpy.median` computes it.

    Parameters
    ----------
    values : float64 array, shape (n,), n >= 1

    Returns
    -------
    float
        The middle value (odd n) or the mean of the two middle values (even
        n, ``(a + b) / 2``); NaN when a value is NaN, as numpy's.

    Raises
    ------
    ValueError
        If ``values`` is empty.
    """
    cdef intp_t n = values.shape[0]
    if n == 0:
        raise ValueError("median: values is empty; the median of no values is undefined")
    hist_arr = np.zeros(65536, dtype=np.uint32)
    cdef uint32_t[::1] hist = hist_arr
    cdef intp_t i, d, d2 = -1, m, kept, rank
    cdef bint has_nan = False, upper_here = False
    cdef uint64_t key, lo_key, hi_key, above = 0xFFFFFFFFFFFFFFFF
    cdef double v
    with nogil:
        for i in range(n):
            v = values[i]
            if v != v:
                has_nan = True
                break
            hist[_order_key(v) >> 48] += 1
    if has_nan:
        return float("nan")
    rank = (n - 1) // 2
    d = _bucket_of(&hist[0], 65536, &rank)
    m = hist[d]
    if n % 2 == 0:
        # the upper middle value is the next one: in the same bucket, or the least key of
        # the next non-empty bucket (found in the same pass that copies the bucket out)
        upper_here = rank + 1 < m
        if not upper_here:
            d2 = d + 1
            while hist[d2] == 0:
                d2 += 1
    scratch_arr = np.empty(m, dtype=np.uint64)
    cdef uint64_t[::1] scratch = scratch_arr
    with nogil:
        kept = 0
        for i in range(n):
            key = _order_key(values[i])
            if (key >> 48) == <uint64_t>d:
                scratch[kept] = key
                kept += 1
            elif (key >> 48) == <uint64_t>d2 and key < above:
                above = key
    if upper_here:
        upper_arr = scratch_arr.copy()  # the selection below compacts scratch in place
    cdef uint64_t[::1] upper
    with nogil:
        lo_key = _select_rest(&scratch[0], m, rank, (<uint64_t>d) << 48, &hist[0])
    lo = _from_order_key(lo_key)
    if n % 2:
        return lo
    if upper_here:
        upper = upper_arr
        with nogil:
            hi_key = _select_rest(&upper[0], m, rank + 1, (<uint64_t>d) << 48, &hist[0])
    else:
        hi_key = above
    return (lo + _from_order_key(hi_key)) / 2.0


# ------------------------------------------------------------------ fixed point
from libc.math cimport rint as _rint


def fixed_point(const double[::1] values, int n_threads=1):
    """Every value as ``q * 2**(x - 32)``: ``(q, x)``, int64 arrays, in one pass.

    ``values[i] = m * 2**x`` with ``m`` in ``[0.5, 1)`` (C's ``frexp``) and
    ``q = rint(m * 2**32)`` (round half to even), exactly what
    ``numpy.frexp`` / ``numpy.ldexp`` / ``numpy.rint`` give in five array
    passes (:func:`fastldp.streaming.fixed_point_of`), from the bits of a
    normal double (libm's ``frexp`` only for zeros and subnormals).
    ``values`` are finite (validated by the caller); zero gives ``(0, 0)``.
    ``n_threads`` split the values (from 32,768 of them); the result does
    not depend on it.
    """
    cdef intp_t n = values.shape[0]
    q_arr = np.empty(n, dtype=np.int64)
    x_arr = np.empty(n, dtype=np.int64)
    cdef int64_t[::1] q = q_arr
    cdef int64_t[::1] x = x_arr
    cdef intp_t i
    cdef int e
    cdef uint64_t u, big, low, mag, up
    cdef int64_t exp_field, neg
    cdef uint64_t half = <uint64_t>1 << 20
    cdef int nt = 1 if n < _PARALLEL_FROM or n_threads < 1 else min(n_threads, 64)
    with nogil:
        for i in prange(n, num_threads=nt, schedule="static"):
            memcpy(&u, &values[i], 8)
            exp_field = <int64_t>((u >> 52) & 0x7FF)
            if exp_field == 0 or exp_field == 0x7FF:  # zero, subnormal (or not finite): libm
                q[i] = <int64_t>_rint(ldexp(frexp(values[i], &e), 32))
                x[i] = e
                continue
            # normal: m = (2^52 + M) / 2^53, so m 2^32 = (2^52 + M) / 2^21, rounded half to
            # even; without branches on the low bits (random bits: a branch mispredicts
            # half the time, which made this loop several times slower)
            big = (u & MANTISSA) | (<uint64_t>1 << 52)
            low = big & ((<uint64_t>1 << 21) - 1)
            mag = big >> 21
            up = (<uint64_t>(low > half)) | ((<uint64_t>(low == half)) & mag)
            mag = mag + (up & 1)  # (not +=: prange would take it for a reduction)
            neg = -<int64_t>(u >> 63)  # 0, or -1 for a negative value
            q[i] = (<int64_t>mag ^ neg) - neg
            x[i] = exp_field - 1022
    return q_arr, x_arr
