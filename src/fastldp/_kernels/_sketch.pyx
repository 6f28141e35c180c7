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

``fixed_sketch`` is the same sum for integer (fixed-point) weights, exact in
int64 (``src/jprs_fixed.h``). Integer addition is associative, so it needs no
ordered reduction: each thread sums its chunks into its own partial and the
partials are added in any order, with the same result.
"""

import operator

import numpy as np

from libc.math cimport tanh, fabs, INFINITY

from ._typedefs cimport intp_t, uint64_t, int64_t, int8_t
from ._cdefs cimport (
    fastldp_sketch_source, fastldp_sketch_range, fastldp_sign_count_range,
    fastldp_ordered_chunk_sum, fastldp_fixed_source, fastldp_fixed_sketch, FASTLDP_FIXED_TILE,
    fastldp_simd_level,
)
from ._hash import codebook_id
cimport fastldp._kernels._cdefs as _cdefs

SKETCH_CHUNK = 1024
MAX_CHUNKS = 64
SLOTS_PER_THREAD = 4


def chunk_size(intp_t n):
    """The chunk length used for ``n`` identities (a function of ``n`` only)."""
    cdef intp_t c = max(SKETCH_CHUNK, -(-n // MAX_CHUNKS))
    return ((c + 15) // 16) * 16


def simd_level():
    """The SIMD level this module's sketch kernels use on this CPU.

    3: as 2, with the Philox4x32-10 blocks sixteen at a time in AVX-512F;
    2: AVX2 (chosen at run time by a CPU feature check: the counting tree
    of the equal-magnitude paths, and the Philox4x32-10 codebook's blocks),
    1: the counting tree in baseline vector instructions, 0: scalar C
    (always the case in a ``FASTLDP_PORTABLE`` build). Every level gives
    the same results.
    """
    return fastldp_simd_level()


cdef extern from "src/jprs_fixed.h" nogil:
    int fastldp_fixed_table_path()
    int fastldp_fixed_sign_sketch(const fastldp_fixed_source *src, const int8_t *signs, int64_t n,
                                  int64_t chunk, int nthreads, int64_t magnitude, int64_t *out)


def fixed_table_path():
    """The table path :func:`fixed_sketch` takes for general weights now.

    ``"avx512"``: sixteen-entry int64 tables of four identities looked up
    eight positions at a time (vpermt2q), chosen at run time on CPUs with
    AVX-512 F/BW/VBMI and GFNI at SIMD level 3, its Philox4x64-10 blocks
    computed while the previous block is summed; ``"sse2"``: 256-entry
    tables indexed through pmovmskb; ``"portable"``: plain C (a
    ``FASTLDP_PORTABLE`` build). Every path gives the same integers.
    """
    return ("portable", "sse2", "avx512")[fastldp_fixed_table_path()]


def set_simd_cap(int cap):
    """Cap this module's SIMD level at ``cap`` (0 to 3); return the old cap.

    For tests that compare the levels' results; not thread-safe with
    respect to sketches running at the same time.
    """
    if cap not in (0, 1, 2, 3):
        raise ValueError(f"cap must be 0, 1, 2 or 3, got {cap}")
    old = _cdefs.fastldp_simd_cap
    _cdefs.fastldp_simd_cap = cap
    return old


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
                  int64_t p, int n_threads=1, codebook="philox4x64-10"):
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
    codebook : {"philox4x64-10", "philox4x32-10"}
        Pair-sign codebook (see :mod:`fastldp._kernels._hash`).

    Returns
    -------
    numpy.ndarray of float64, shape (p,)
    """
    cdef int cb = codebook_id(codebook)
    cdef intp_t n = identities.shape[0]
    if weights.shape[0] != n:
        raise ValueError("identities and weights must have the same length")
    if p < 1:
        raise ValueError("p must be >= 1")
    cdef fastldp_sketch_source src
    src.seed = seed
    src.codebook = cb
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
                identities, int64_t p, int n_threads=1, codebook="philox4x64-10"):
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
    codebook : {"philox4x64-10", "philox4x32-10"}
    """
    cdef int cb = codebook_id(codebook)
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
    src.codebook = cb
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


# fixed_sketch's limits: |w_i| <= 2**32 and n <= 2**30 keep every partial sum
# below 2**62 in magnitude, so the int64 arithmetic can never overflow. Larger
# weights are accepted in smaller batches: max|w_i| * max(n, 16) <= 2**61
# bounds every partial sum (and twice any subset's sum) the same way.
FIXED_MAX_WEIGHT = 2**32
FIXED_MAX_N = 2**30
FIXED_MAX_MASS = 2**61


cdef int64_t _fixed_chunk(int64_t n):
    # A function of n only (not of the thread count), a whole number of
    # 128-identity tiles, and at most about MAX_CHUNKS chunks so that the
    # dynamic hand-out balances threads that lose their core for a while.
    cdef int64_t c = max(<int64_t>SKETCH_CHUNK, -(-n // MAX_CHUNKS))
    return ((c + FASTLDP_FIXED_TILE - 1) // FASTLDP_FIXED_TILE) * FASTLDP_FIXED_TILE


cdef object _fixed_source(fastldp_fixed_source *src, uint64_t seed, int cb, identities,
                          intp_t n, int64_t p, int n_threads, uint64_t first_identity,
                          str what):
    """Check what fixed_sketch and sign_sketch share and fill ``src`` (weights unset).

    ``what`` names the per-identity argument in the messages. Returns the
    identities' memoryview (or None): the caller keeps it while ``src``
    points into it.
    """
    cdef const uint64_t[::1] ids
    if p < 1:
        raise ValueError(f"p must be >= 1, got {p}")
    if n_threads < 1:
        raise ValueError(f"n_threads must be >= 1, got {n_threads}")
    if n > FIXED_MAX_N:
        raise ValueError(f"n = len({what}) must be <= 2**30 = {FIXED_MAX_N}, got {n}")
    src.seed = seed
    src.codebook = cb
    src.identities = NULL
    src.first_identity = first_identity
    src.weights = NULL
    src.p = p
    if identities is None:
        return None
    ids = identities
    if ids.shape[0] != n:
        raise ValueError(f"identities and {what} must have the same length, got "
                         f"len(identities) = {ids.shape[0]} and len({what}) = {n}")
    if n:
        src.identities = &ids[0]
    return ids


def fixed_sketch(uint64_t seed, identities, const int64_t[::1] weights, int64_t p,
                 int n_threads=1, uint64_t first_identity=0, codebook="philox4x64-10"):
    """Return ``V(e) = sum_i weights[i] * R_{id_i}(e)`` for e in [0, p), exactly.

    The integer (fixed-point) twin of :func:`global_sketch`: with weights
    that are integers (for instance float weights scaled by ``2**32 /
    max|w|`` and rounded), every product and sum is an exact int64, so the
    result is exact and independent of the thread count by construction.

    Parameters
    ----------
    seed : int
        Codebook seed (64 bits).
    identities : uint64 array of shape (n,), or None
        The identities ``id_i``; None means ``id_i = first_identity + i``.
    weights : int64 array, shape (n,)
        Signed weights with ``|weights[i]| <= 2**32``, or larger ones in a
        smaller batch: ``max |weights[i]| * max(n, 16) <= 2**61``;
        ``n <= 2**30``. Either way no partial sum can overflow int64 (a
        decode with several weight exponents passes them in one call as
        ``q_i 2^(x_i - min x)``).
    p : int
        Number of encoded pairs, ``p >= 1``.
    n_threads : int
        Threads to use (>= 1); the result does not depend on it.
    first_identity : int
        First identity when ``identities`` is None (identities wrap modulo
        2**64, as uint64 arithmetic does).
    codebook : {"philox4x64-10", "philox4x32-10"}
        Pair-sign codebook (see :mod:`fastldp._kernels._hash`).

    Returns
    -------
    numpy.ndarray of int64, shape (p,)

    Raises
    ------
    ValueError
        If a length, ``p``, ``n_threads``, ``n`` or a weight is out of range.
    MemoryError
        If the per-thread scratch memory cannot be allocated.

    Notes
    -----
    Equal magnitudes (every ``|weights[i]|`` the same) take the bit-sliced
    sign-counting path, ``c * (n - 2 * count)``; other weights take the
    table path (:func:`fixed_table_path`: four identities per 16-entry
    int64 table in AVX-512 registers where the CPU allows, else sixteen
    identities per pair of 256-entry tables).
    """
    cdef intp_t n = weights.shape[0]
    cdef fastldp_fixed_source src
    ids_view = _fixed_source(&src, seed, codebook_id(codebook), identities, n, p, n_threads,
                             first_identity, "weights")
    out = np.zeros(p, dtype=np.int64)
    if n == 0:
        return out
    src.weights = &weights[0]
    # the largest |w| this batch allows (module note above FIXED_MAX_WEIGHT)
    cdef int64_t limit = max(<int64_t>FIXED_MAX_WEIGHT,
                             <int64_t>(FIXED_MAX_MASS // max(n, 16)))
    cdef int64_t magnitude = weights[0] if weights[0] >= 0 else -weights[0]
    cdef bint equal = True
    cdef intp_t bad = -1
    cdef intp_t i
    cdef int64_t w
    # one pass without branches (the compiler vectorizes the OR reductions);
    # the index of a bad weight is looked for only when there is one.
    # |weights[0]| is only compared when every weight is within the limit.
    cdef int over = 0, unequal = 0
    with nogil:
        for i in range(n):
            w = weights[i]
            # compare without negating: -INT64_MIN overflows
            over |= (w > limit) | (w < -limit)
            unequal |= (w != magnitude) & (w != -magnitude)
        if over:
            for i in range(n):
                w = weights[i]
                if w > limit or w < -limit:
                    bad = i
                    break
    if bad >= 0:
        raise ValueError(f"weights must satisfy |weights[i]| <= {limit} (2**32, or 2**61 / "
                         f"max(n, 16) for n = {n}), got weights[{bad}] = {weights[bad]}")
    equal = not unequal
    if equal and magnitude == 0:
        return out
    cdef int64_t[::1] o = out
    cdef int rc
    cdef int64_t chunk = _fixed_chunk(n)
    with nogil:
        rc = fastldp_fixed_sketch(&src, n, chunk, n_threads, equal, magnitude, &o[0])
    if rc != 0:
        raise MemoryError("fixed_sketch: could not allocate per-thread scratch memory")
    return out


def sign_sketch(uint64_t seed, identities, signs, magnitude, int64_t p, int n_threads=1,
                uint64_t first_identity=0, codebook="philox4x64-10"):
    """Return ``V(e) = magnitude * sum_i signs[i] * R_{id_i}(e)`` for e in [0, p), exactly.

    The same integers as ``fixed_sketch(seed, identities, magnitude *
    signs.astype(np.int64), p, n_threads, first_identity, codebook)``, for
    reports that all carry one budget: the signs come as int8, so neither
    the n int64 weights nor :func:`fixed_sketch`'s scan of them for equal
    magnitudes is needed; the sketch always takes the bit-sliced
    sign-counting path, ``magnitude * (n - 2 * count)``.

    Parameters
    ----------
    seed : int
        Codebook seed (64 bits).
    identities : uint64 array of shape (n,), or None
        The identities ``id_i``; None means ``id_i = first_identity + i``.
    signs : int8 array, shape (n,)
        Each ``+1`` or ``-1``; ``n <= 2**30``.
    magnitude : int
        The common weight magnitude, ``0 <= magnitude <= 2**32``.
    p : int
        Number of encoded pairs, ``p >= 1``.
    n_threads : int
        Threads to use (>= 1); the result does not depend on it.
    first_identity : int
        First identity when ``identities`` is None (identities wrap modulo
        2**64, as uint64 arithmetic does).
    codebook : {"philox4x64-10", "philox4x32-10"}
        Pair-sign codebook (see :mod:`fastldp._kernels._hash`).

    Returns
    -------
    numpy.ndarray of int64, shape (p,)

    Raises
    ------
    TypeError
        If ``signs`` is not a one-dimensional int8 array or ``magnitude``
        is not an integer.
    ValueError
        If a sign is not +1 or -1, or a length, ``p``, ``n_threads``,
        ``n`` or ``magnitude`` is out of range.
    MemoryError
        If the per-thread scratch memory cannot be allocated.
    """
    cdef int cb = codebook_id(codebook)
    sign_array = np.asarray(signs)
    if sign_array.dtype != np.int8 or sign_array.ndim != 1:
        raise TypeError(f"signs must be a one-dimensional int8 array of +1 and -1, got "
                        f"dtype {sign_array.dtype} and shape {sign_array.shape}")
    try:
        magnitude = operator.index(magnitude)
    except TypeError:
        raise TypeError(f"magnitude must be an integer in [0, 2**32], got "
                        f"{type(magnitude).__name__} {magnitude!r}") from None
    if not 0 <= magnitude <= FIXED_MAX_WEIGHT:
        raise ValueError(f"magnitude must satisfy 0 <= magnitude <= 2**32 = {FIXED_MAX_WEIGHT}, "
                         f"got {magnitude}")
    cdef const int8_t[::1] sg = np.ascontiguousarray(sign_array)
    cdef intp_t n = sg.shape[0]
    cdef fastldp_fixed_source src
    ids_view = _fixed_source(&src, seed, cb, identities, n, p, n_threads, first_identity,
                             "signs")
    out = np.zeros(p, dtype=np.int64)
    if n == 0:
        return out
    # v + 1 is 0 or 2 exactly for v = -1 or +1: one OR over the array (which
    # the compiler vectorizes), and a second pass for the index only on failure
    cdef int bad_bits = 0
    cdef intp_t i, bad = -1
    with nogil:
        for i in range(n):
            bad_bits |= (<int>sg[i] + 1) & ~2
        if bad_bits:
            for i in range(n):
                if sg[i] != 1 and sg[i] != -1:
                    bad = i
                    break
    if bad >= 0:
        raise ValueError(f"signs must be +1 or -1, got signs[{bad}] = {sg[bad]}")
    if magnitude == 0:
        return out
    cdef int64_t c_magnitude = magnitude
    cdef int64_t[::1] o = out
    cdef int rc
    cdef int64_t chunk = _fixed_chunk(n)
    with nogil:
        rc = fastldp_fixed_sign_sketch(&src, &sg[0], n, chunk, n_threads, c_magnitude, &o[0])
    if rc != 0:
        raise MemoryError("sign_sketch: could not allocate per-thread scratch memory")
    return out
