"""The JPRS global sketch kernel (paper 000, Eq. (8)).

``global_sketch`` computes ``V(e) = sum_i w_i R_i(e)`` for every encoded pair
``e`` in ``[0, p)`` in ``O(n p)`` sign operations and ``O(threads * p)``
memory. ``jprs_sketch`` is the same sum with the JPRS weights
``w_i = scale * tanh(eps_i / 2) * bits_i`` formed on the fly, so a decoder
needs no length-n temporaries beyond its inputs.

Identities are cut into fixed-size chunks (the size depends on ``n`` only:
``max(SKETCH_CHUNK, ceil(n / MAX_CHUNKS))`` rounded up to a multiple of 16),
one partial per chunk, reduced in chunk order, so the result is
bit-identical for any thread count. Few, large chunks, handed out
dynamically in waves of ``SLOTS_PER_THREAD * threads``, keep the number of
thread barriers small, which matters when other processes share the cores;
memory is ``SLOTS_PER_THREAD * threads * p`` doubles.

Two inner loops (both exact functions of the inputs, never of the threads):

* equal magnitudes (every ``|w_i|`` the same, as with homogeneous budgets):
  integer counts in bit-sliced planes (``src/jprs_count.h``), scaled by the
  magnitude once at the end - close to the cost of the Philox blocks;
* general float weights: eight identities at a time through a 256-entry
  table of signed weight sums (``src/jprs_sketch.h``).
"""

import numpy as np

from libc.math cimport tanh, fabs, INFINITY

from ._typedefs cimport intp_t, uint64_t, int64_t, int8_t
from ._cdefs cimport (
    fastldp_sketch_source, fastldp_sketch_range, fastldp_sign_count_range,
    fastldp_ordered_chunk_sum,
)

SKETCH_CHUNK = 1024
MAX_CHUNKS = 64
SLOTS_PER_THREAD = 4


def chunk_size(intp_t n):
    """The chunk length used for ``n`` identities (a function of ``n`` only)."""
    cdef intp_t c = max(SKETCH_CHUNK, -(-n // MAX_CHUNKS))
    return ((c + 15) // 16) * 16


cdef void _table_range(const void *ctx, int64_t start, int64_t stop, double *part) noexcept nogil:
    fastldp_sketch_range(<const fastldp_sketch_source *>ctx, start, stop, part)


cdef void _count_range(const void *ctx, int64_t start, int64_t stop, double *part) noexcept nogil:
    fastldp_sign_count_range(<const fastldp_sketch_source *>ctx, start, stop, part)


cdef object _run(fastldp_sketch_source *src, intp_t n, int64_t p, int n_threads, bint counting):
    cdef int nt = max(1, n_threads)
    cdef int64_t chunk = chunk_size(n)
    cdef int64_t nchunks = (n + chunk - 1) // chunk
    if nchunks < nt:
        nt = max(1, <int>nchunks)
    cdef int64_t slots = min(nchunks, SLOTS_PER_THREAD * nt)
    out = np.zeros(p, dtype=np.float64)
    if n == 0:
        return out
    buf = np.empty(slots * p, dtype=np.float64)
    cdef double[::1] o = out
    cdef double[::1] bb = buf
    with nogil:
        if counting:
            fastldp_ordered_chunk_sum(_count_range, src, n, p, chunk, nt, slots, &bb[0], &o[0])
        else:
            fastldp_ordered_chunk_sum(_table_range, src, n, p, chunk, nt, slots, &bb[0], &o[0])
    return out


def global_sketch(uint64_t seed, const uint64_t[::1] identities, const double[::1] weights,
                  int64_t p, int n_threads=1):
    """Return ``V(e) = sum_i weights[i] * R_{identities[i]}(e)`` for e in [0, p).

    Parameters
    ----------
    seed : int
        Codebook seed (64 bits).
    identities : uint64 array, shape (n,)
    weights : float64 array, shape (n,)
    p : int
        Number of encoded pairs, ``p >= 1``.
    n_threads : int
        Threads to use (>= 1).

    Returns
    -------
    numpy.ndarray of float64, shape (p,)
    """
    cdef intp_t n = identities.shape[0]
    if weights.shape[0] != n:
        raise ValueError("identities and weights must have the same length")
    if p < 1:
        raise ValueError("p must be >= 1")
    cdef fastldp_sketch_source src
    src.seed = seed
    src.first_identity = 0
    src.bits = NULL
    src.eps = NULL
    src.scale = 1.0
    src.p = p
    if n == 0:
        return np.zeros(p, dtype=np.float64)
    src.identities = &identities[0]
    src.weights = &weights[0]
    cdef double magnitude = fabs(weights[0])
    cdef bint equal = True
    cdef intp_t i
    with nogil:
        for i in range(n):
            if fabs(weights[i]) != magnitude:
                equal = False
                break
    if equal:
        return _run(&src, n, p, n_threads, True) * magnitude
    return _run(&src, n, p, n_threads, False)


def jprs_sketch(uint64_t seed, const int8_t[::1] bits, const double[::1] eps, double scale,
                identities, int64_t p, int n_threads=1):
    """Return ``V(e) = sum_i scale * tanh(eps_i / 2) * bits_i * R_i(e)``.

    Parameters
    ----------
    seed : int
    bits : int8 array of {-1, +1}, shape (n,)
    eps : float64 array, shape (n,)
    scale : float
        ``sqrt(k) / (kappa_k D)`` for Eq. (8).
    identities : uint64 array of shape (n,), or None for ``0 .. n-1``
    p : int
    n_threads : int
    """
    cdef intp_t n = bits.shape[0]
    if eps.shape[0] != n:
        raise ValueError("bits and eps must have the same length")
    if p < 1:
        raise ValueError("p must be >= 1")
    if not (scale > 0.0 and scale < INFINITY):
        raise ValueError(f"scale must be finite and > 0, got {scale!r}")
    # The counting path reads only the sign bit of each packet, so anything but
    # +-1 would be silently read as +1 there: reject it, as JPRS.estimate does.
    cdef intp_t bad = -1
    cdef intp_t j
    with nogil:
        for j in range(n):
            if (bits[j] != 1 and bits[j] != -1) or not (eps[j] > 0.0 and eps[j] < INFINITY):
                bad = j
                break
    if bad >= 0:
        raise ValueError(f"bits must be -1 or +1 and eps finite and > 0; got bits[{bad}] = "
                         f"{bits[bad]}, eps[{bad}] = {eps[bad]!r}")
    cdef const uint64_t[::1] ids
    cdef fastldp_sketch_source src
    src.seed = seed
    src.first_identity = 0
    src.identities = NULL
    src.weights = NULL
    src.scale = scale
    src.p = p
    if n == 0:
        return np.zeros(p, dtype=np.float64)
    if identities is not None:
        ids = identities
        if ids.shape[0] != n:
            raise ValueError("identities must have the same length as bits")
        src.identities = &ids[0]
    src.bits = &bits[0]
    src.eps = &eps[0]
    cdef double first = eps[0]
    cdef bint equal = True
    cdef intp_t i
    with nogil:
        for i in range(n):
            if eps[i] != first:
                equal = False
                break
    if equal:
        return _run(&src, n, p, n_threads, True) * (scale * tanh(0.5 * first))
    return _run(&src, n, p, n_threads, False)
