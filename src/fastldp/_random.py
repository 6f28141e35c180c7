"""Seeds, generators and thread counts.

Client-side randomness flows from a :class:`numpy.random.Generator`; public
randomness (the codebook) from the counter-based hash keyed by
``(codebook_seed, identity, counter)``. Nothing here touches global state.
"""

from __future__ import annotations

import numbers
import os
from typing import Union

import numpy as np

from ._kernels._openmp import max_threads
from ._validation import param_error

__all__ = ["as_generator", "resolve_codebook_seed", "resolve_n_threads", "resolve_identities",
           "RngLike"]

UINT64_MAX = 2**64 - 1

#: What every ``rng`` parameter accepts (see :func:`as_generator`).
RngLike = Union[None, int, np.random.SeedSequence, np.random.Generator]


def as_generator(rng, owner: str = "privatize") -> np.random.Generator:
    """Return a Generator for ``rng``.

    ``None`` draws fresh OS entropy; an int or :class:`~numpy.random.SeedSequence`
    seeds a new PCG64 generator; a Generator is used as is (and advanced).
    """
    if isinstance(rng, np.random.Generator):
        return rng
    if rng is None or isinstance(rng, np.random.SeedSequence):
        return np.random.default_rng(rng)
    if isinstance(rng, numbers.Integral) and not isinstance(rng, bool):
        if rng < 0:
            raise param_error("rng", owner, "None, a non-negative int, a SeedSequence or a Generator", rng)
        return np.random.default_rng(int(rng))
    raise param_error(
        "rng", owner, "None, a non-negative int, a SeedSequence or a Generator", rng, TypeError
    )


def resolve_codebook_seed(seed, owner: str) -> int:
    """Return the 64-bit public codebook seed; ``None`` draws one from OS entropy."""
    if seed is None:
        return int(np.random.SeedSequence().generate_state(1, dtype=np.uint64)[0])
    expected = f"None or an int in [0, {UINT64_MAX}]"
    if isinstance(seed, (bool, np.bool_)) or not isinstance(seed, numbers.Integral):
        raise param_error("codebook_seed", owner, expected, seed, TypeError)
    if not 0 <= int(seed) <= UINT64_MAX:
        raise param_error("codebook_seed", owner, expected, seed)
    return int(seed)


def resolve_n_threads(n_threads, owner: str) -> int:
    """Return a thread count in ``[1, cores]``.

    ``None`` uses OpenMP's default (``OMP_NUM_THREADS`` or all cores), ``-1``
    all cores, a positive int that many, clamped to the number of cores:
    more threads than cores only adds contention, and asking libgomp for
    thousands of threads under a memory limit ends the process without a
    Python exception. Results never depend on it.
    """
    if n_threads is None:
        return max(1, max_threads())
    expected = "None, -1 or an int >= 1"
    if isinstance(n_threads, (bool, np.bool_)) or not isinstance(n_threads, numbers.Integral):
        raise param_error("n_threads", owner, expected, n_threads, TypeError)
    if n_threads == -1:
        return max(1, os.cpu_count() or 1)
    if n_threads < 1:
        raise param_error("n_threads", owner, expected, n_threads)
    return min(int(n_threads), max(1, os.cpu_count() or 1))


def resolve_identities(identities, n: int, owner: str) -> np.ndarray:
    """Return the uint64 identities of ``n`` reports (default ``0 .. n-1``).

    Identities key each holder's public signs, so they must be distinct
    non-negative integers below 2**64.
    """
    if identities is None:
        return np.arange(n, dtype=np.uint64)
    arr = np.asarray(identities)
    expected = f"a 1-d array of {n} distinct integers in [0, 2**64)"
    if arr.dtype.kind not in "iu" or arr.ndim != 1:
        raise param_error("identities", owner, expected, identities, TypeError)
    if arr.shape[0] != n:
        raise param_error("identities", owner, expected, f"an array of length {arr.shape[0]}")
    if arr.dtype.kind == "i" and arr.size and arr.min() < 0:
        raise param_error("identities", owner, expected, f"negative identity {int(arr.min())}")
    arr = arr.astype(np.uint64)
    # increasing identities (report files, ranges) are distinct without a sort
    if n > 1 and not bool(np.all(arr[1:] > arr[:-1])):
        ordered = np.sort(arr)
        if bool(np.any(ordered[1:] == ordered[:-1])):
            raise param_error("identities", owner, expected, "repeated identities")
    return np.ascontiguousarray(arr)
