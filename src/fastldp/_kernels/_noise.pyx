"""Exact integer noise on counter-based Philox: discrete Laplace, discrete Gaussian, Bernoulli(exp(-gamma)).

The algorithms (Canonne, Kamath and Steinke, NeurIPS 2020, Algorithms 1-3)
and the use of the random words are described in ``src/noise.h``: no
floating point takes part in any decision. The output is cut into blocks of
``BLOCK`` samples; block ``b`` reads the Philox4x64-10 stream keyed by
``(key, b)``, so the samples do not depend on the thread count, and a prefix
of ``n`` samples is the same for every longer request with the same key.

These functions assume validated inputs (the checks are in
:mod:`fastldp.noise`): every rational's numerator and denominator in
``[1, 2**63)`` (``a`` in ``[0, 2**63)``), and ``2 p q t^2 < 2**63`` for the
Gaussian.
"""

import numpy as np

from libc.stdint cimport uint8_t

from ._typedefs cimport intp_t, uint64_t, int64_t

from cython.parallel cimport prange

#: Samples per Philox stream (the unit of parallel work).
BLOCK = 1024
cdef intp_t _BLOCK = 1024
cdef uint64_t _LIMIT = (<uint64_t>1) << 63


cdef extern from "src/noise.h" nogil:
    int FASTLDP_NOISE_OK
    int fastldp_noise_laplace_block(uint64_t key, uint64_t block, uint64_t t, uint64_t s,
                                    int64_t *out, int64_t m, uint64_t *philox_blocks)
    int fastldp_noise_gaussian_block(uint64_t key, uint64_t block, uint64_t p, uint64_t q,
                                     uint64_t t, uint64_t D, int64_t *out, int64_t m)
    int fastldp_noise_bexp_block(uint64_t key, uint64_t block, uint64_t a, uint64_t b,
                                 uint8_t *out, int64_t m)


cdef int _check(name, value, uint64_t low) except -1:
    if not (low <= value < _LIMIT):
        raise ValueError(f"{name} must be in [{low}, 2**63), got {value}")
    return 0


cdef inline int _threads(int n_threads, intp_t nblocks) noexcept nogil:
    if nblocks < 1:
        return 1
    if n_threads < 1:
        n_threads = 1
    return <int>min(<intp_t>n_threads, nblocks)


def _raise_overflow(status, what):
    if np.any(status != 0):
        raise OverflowError(f"{what} drew a sample outside int64 (the scale is too large)")


def discrete_laplace(uint64_t key, t, s, intp_t n, int n_threads=1):
    """Return ``n`` int64 samples of the discrete Laplace of scale ``t / s``."""
    _check("t", t, 1)
    _check("s", s, 1)
    if n < 0:
        raise ValueError(f"n must be >= 0, got {n}")
    cdef uint64_t tt = t, ss = s
    cdef intp_t nblocks = (n + _BLOCK - 1) // _BLOCK
    out = np.empty(n, dtype=np.int64)
    status = np.zeros(nblocks, dtype=np.int32)
    if n == 0:
        return out
    cdef int64_t[::1] o = out
    cdef int[::1] st = status
    cdef intp_t b, start
    cdef int nt = _threads(n_threads, nblocks)
    with nogil:
        for b in prange(nblocks, num_threads=nt, schedule="dynamic"):
            start = b * _BLOCK
            st[b] = fastldp_noise_laplace_block(key, <uint64_t>b, tt, ss, &o[start],
                                                min(_BLOCK, n - start), NULL)
    _raise_overflow(status, "discrete_laplace")
    return out


def laplace_philox_blocks(uint64_t key, t, s, intp_t n):
    """Return how many Philox4x64-10 blocks ``discrete_laplace(key, t, s, n)`` reads.

    The benchmark's floor: blocks per sample times the time per block.
    """
    _check("t", t, 1)
    _check("s", s, 1)
    cdef uint64_t tt = t, ss = s, used, total = 0
    cdef intp_t b, start
    cdef int64_t[::1] o = np.empty(_BLOCK, dtype=np.int64)
    for b in range((n + _BLOCK - 1) // _BLOCK):
        start = b * _BLOCK
        used = 0
        if fastldp_noise_laplace_block(key, <uint64_t>b, tt, ss, &o[0], min(_BLOCK, n - start),
                                       &used) != FASTLDP_NOISE_OK:
            raise OverflowError("discrete_laplace drew a sample outside int64")
        total += used
    return int(total)


def discrete_gaussian(uint64_t key, p, q, intp_t n, int n_threads=1):
    """Return ``n`` int64 samples of the discrete Gaussian of variance parameter ``p / q``."""
    _check("p", p, 1)
    _check("q", q, 1)
    if n < 0:
        raise ValueError(f"n must be >= 0, got {n}")
    import math
    t = math.isqrt(p * q) // q + 1  # floor(sqrt(p / q)) + 1, exactly
    D = 2 * p * q * t * t
    if D >= _LIMIT:
        raise ValueError(f"2 p q t^2 must be below 2**63, got {D}")
    cdef uint64_t pp = p, qq = q, tt = t, DD = D
    cdef intp_t nblocks = (n + _BLOCK - 1) // _BLOCK
    out = np.empty(n, dtype=np.int64)
    status = np.zeros(nblocks, dtype=np.int32)
    if n == 0:
        return out
    cdef int64_t[::1] o = out
    cdef int[::1] st = status
    cdef intp_t b, start
    cdef int nt = _threads(n_threads, nblocks)
    with nogil:
        for b in prange(nblocks, num_threads=nt, schedule="dynamic"):
            start = b * _BLOCK
            st[b] = fastldp_noise_gaussian_block(key, <uint64_t>b, pp, qq, tt, DD, &o[start],
                                                 min(_BLOCK, n - start))
    _raise_overflow(status, "discrete_gaussian")
    return out


def bernoulli_exp(uint64_t key, a, b, intp_t n, int n_threads=1):
    """Return ``n`` bools, each True with probability ``exp(-a / b)``."""
    _check("a", a, 0)
    _check("b", b, 1)
    if n < 0:
        raise ValueError(f"n must be >= 0, got {n}")
    cdef uint64_t aa = a, bb = b
    cdef intp_t nblocks = (n + _BLOCK - 1) // _BLOCK
    out = np.empty(n, dtype=np.uint8)
    if n == 0:
        return out.view(np.bool_)
    cdef uint8_t[::1] o = out
    cdef intp_t blk, start
    cdef int nt = _threads(n_threads, nblocks)
    with nogil:
        for blk in prange(nblocks, num_threads=nt, schedule="dynamic"):
            start = blk * _BLOCK
            fastldp_noise_bexp_block(key, <uint64_t>blk, aa, bb, &o[start],
                                     min(_BLOCK, n - start))
    return out.view(np.bool_)
