"""Shared pieces of the ``fixed_sketch`` tests: the naive twin, table-path weights, a SIMD cap.

The twin takes every sign from ``pair_signs`` one (identity, pair) at a time
(``pair_signs`` itself is checked against NumPy's Philox in the hash tests)
and sums ``w_i * R_i(e)`` in int64, so every comparison with the kernel is
exact.
"""

from __future__ import annotations

import numpy as np

from fastldp._kernels import _sketch
from fastldp._kernels._hash import pair_signs

TWO32 = 2**32


def naive_fixed(seed, ids, w, p, codebook="philox4x64-10"):
    """sum_i w[i] * R_{ids[i]}(e) for e in [0, p), one identity at a time, in int64."""
    out = np.zeros(p, dtype=np.int64)
    pairs = np.arange(p, dtype=np.int64)
    for ident, wi in zip(np.asarray(ids, dtype=np.uint64), np.asarray(w, dtype=np.int64)):
        signs = pair_signs(seed, np.full(p, ident, dtype=np.uint64), pairs, codebook)
        out += wi * signs.astype(np.int64)
    return out


def table_weights(rng, n, limit=TWO32):
    """Weights in [-limit, limit] with both extremes and zeros among them, never all of
    one magnitude (equal magnitudes take the counting path, not the tables)."""
    w = rng.integers(-limit, limit + 1, n, dtype=np.int64)
    w[::5] = np.where(rng.random(w[::5].size) < 0.5, limit, -limit)
    w[1::7] = 0
    if n > 1 and np.all(np.abs(w) == np.abs(w[0])):
        w[-1] = 3
    return w


def with_simd_cap(cap, fn):
    """``fn()`` with ``_sketch``'s SIMD level capped at ``cap``, the old cap restored after."""
    old = _sketch.set_simd_cap(cap)
    try:
        return fn()
    finally:
        _sketch.set_simd_cap(old)
