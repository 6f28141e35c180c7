"""Fast Walsh-Hadamard transform (Sylvester order), for Hadamard response.

``fwht(x)`` returns ``H_K x`` with ``H_K[i, j] = (-1)^popcount(i & j)`` for
``K = len(x)`` a power of two, in ``O(K log K)`` additions. The butterflies
run in a fixed order, so the result is deterministic.
"""

import numpy as np

from libc.stdint cimport uint64_t

from ._typedefs cimport intp_t


def fwht(const double[::1] x):
    """Return the Walsh-Hadamard transform ``H_K x`` (a new float64 array).

    Parameters
    ----------
    x : float64 array, length K a power of two (K >= 1)
    """
    cdef intp_t n = x.shape[0]
    if n < 1 or (n & (n - 1)) != 0:
        raise ValueError(f"len(x) must be a power of two >= 1, got {n}")
    out = np.array(x, dtype=np.float64, copy=True)
    cdef double[::1] a = out
    cdef intp_t h = 1, i, j
    cdef double u, v
    with nogil:
        while h < n:
            i = 0
            while i < n:
                for j in range(i, i + h):
                    u = a[j]
                    v = a[j + h]
                    a[j] = u + v
                    a[j + h] = u - v
                i += 2 * h
            h *= 2
    return out


def hadamard_entries(const long long[::1] rows, const long long[::1] cols):
    """Return ``H[rows[j], cols[j]] = (-1)^popcount(rows[j] & cols[j])`` as int8."""
    cdef intp_t n = rows.shape[0]
    if cols.shape[0] != n:
        raise ValueError("rows and cols must have the same length")
    out = np.empty(n, dtype=np.int8)
    cdef signed char[::1] o = out
    cdef intp_t j
    with nogil:
        for j in range(n):
            o[j] = 1 - 2 * (fastldp_popcount64(<uint64_t>(rows[j] & cols[j])) & 1)
    return out


# Compiler builtin or plain C (MSVC, FASTLDP_PORTABLE): see src/portable.h.
cdef extern from "src/portable.h" nogil:
    int fastldp_popcount64(uint64_t x)
