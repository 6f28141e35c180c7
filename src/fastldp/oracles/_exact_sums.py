"""Exact sums of the oracles' partials: scalars, broadcasts, integer multiples, weighted hits.

Every sum a :class:`~fastldp.streaming.Partial` of a frequency oracle keeps
is an :class:`~fastldp.streaming.ExactSum`, so that partials merge in any
order to the same numbers; these build them from report terms, integer
counts and float kernels.
"""

from __future__ import annotations

import math

import numpy as np

from ..streaming import ExactSum

__all__ = ["MAX_WEIGHT_CLASSES", "scalar_sum", "add_broadcast", "scaled_sum", "count_sum",
           "add_weighted_hits"]

#: Below this many distinct weights (or one per 64 reports), a weighted kernel sum
#: runs once per distinct weight with unit weights (integer counts) instead of
#: once per integer limb of the weights.
MAX_WEIGHT_CLASSES = 32


def scalar_sum(values) -> ExactSum:
    """The exact sum of ``values`` as a one-position :class:`~fastldp.streaming.ExactSum`."""
    out = ExactSum(1)
    out.add_terms(values)
    return out


def add_broadcast(total: ExactSum, scalar: ExactSum) -> ExactSum:
    """``total + scalar`` at every position, exactly (a new sum; neither input changes)."""
    k_lo, digits = scalar.canonical()
    if digits.shape[0] == 0:
        return total
    return total.merge(ExactSum.from_digits(total.size, k_lo,
                                            np.repeat(digits, total.size, axis=1)))


def scaled_sum(ints: ExactSum, value: float) -> ExactSum:
    """``value`` times an integer-valued :class:`~fastldp.streaming.ExactSum`, exactly.

    Digit row ``r`` of ``ints`` (place ``2**(32 (k_lo + r))``, normalized
    below ``2**32``) times the double ``value * 2**(32 (k_lo + r))``, itself
    exact since the integer places are non-negative powers of two, is added
    by :meth:`~fastldp.streaming.ExactSum.add_multiples`: no rounding
    anywhere, for counts of any size.
    """
    k_lo, digits = ints.canonical()
    if digits.shape[0] and k_lo < 0:  # pragma: no cover - hit counts are integers
        raise ValueError("scaled_sum scales integer sums only")
    out = ExactSum(ints.size)
    for r in range(digits.shape[0]):
        if digits[r].any():
            out.add_multiples(digits[r], math.ldexp(float(value), 32 * (k_lo + r)))
    return out


def count_sum(count: int) -> ExactSum:
    """A one-position :class:`~fastldp.streaming.ExactSum` holding the integer ``count``."""
    out = ExactSum(1)
    count, place = int(count), 0
    while count:
        out.add_integers(np.array([count & 0xFFFFFFFF], dtype=np.int64), 32 * place)
        count >>= 32
        place += 1
    return out


def add_weighted_hits(total: ExactSum, weights, hits) -> None:
    """Add ``sum_i weights[i] * hit_i(v)`` exactly, using a kernel that sums floats.

    Parameters
    ----------
    total : ExactSum
        Receives the sums, one position per ``v``.
    weights : float64 array, shape (n,)
        Finite report weights.
    hits : callable ``hits(members, w)``
        Returns, for the reports ``members`` (an index array, or ``None`` for
        all), the length-``total.size`` vector ``sum_i w_i hit_i(v)``
        computed in float64 (any order), ``hit_i(v)`` in ``{0, 1}``; ``w``
        is aligned with ``members``, or ``None`` for unit weights.

    Notes
    -----
    A float sum of integers is exact, whatever the order, while every partial
    sum stays below ``2**53``. With few distinct weights (at most
    ``max(MAX_WEIGHT_CLASSES, n // 64)``) the kernel runs once per weight
    with unit weights, and each integer count is multiplied by its weight
    exactly (:meth:`~fastldp.streaming.ExactSum.add_multiples`): one pass over the reports in all.
    Otherwise, with ``w_i = M_i 2^(e_i - 53)`` (``|M_i| < 2^53``), weights of
    one sign whose exponents lie within a few bits of each other form a
    group with the integers ``M_i 2^(e_i - e_lo)``, and the kernel runs on
    their limbs of ``L = 53 - bitlength(n)`` bits: ``n (2^L - 1) < 2^53``,
    so every kernel sum is exact. Weights spanning a factor ``2^9`` or less
    form one group of two limbs for chunks below ``2^22`` reports: two
    passes over the reports.
    """
    w = np.ascontiguousarray(weights, dtype=np.float64).ravel()
    n = w.shape[0]
    if n == 0:
        return
    if not np.isfinite(w).all():
        raise ValueError("add_weighted_hits: the weights must be finite")
    order = np.argsort(w, kind="stable")
    ordered = w[order]
    cuts = np.flatnonzero(ordered[1:] != ordered[:-1]) + 1
    if cuts.shape[0] + 1 <= max(MAX_WEIGHT_CLASSES, n // 64):
        bounds = np.concatenate(([0], cuts, [n]))
        for a, b in zip(bounds[:-1], bounds[1:]):
            u = float(ordered[a])
            if u == 0.0:
                continue
            members = None if (a == 0 and b == n) else np.sort(order[a:b])
            counts = np.asarray(hits(members, None))
            total.add_multiples(np.rint(counts).astype(np.int64), u)
        return
    m, e = np.frexp(w)
    e = e.astype(np.int64)
    mant = np.ldexp(m, 53).astype(np.int64)  # exact: |mant| in [2^52, 2^53), 0 for w = 0
    magnitude = np.abs(mant)
    bits = 53 - int(n).bit_length()  # n (2^bits - 1) < 2^53: every kernel sum is exact
    if bits < 1:  # pragma: no cover - 2**52 reports in one chunk
        raise ValueError("add_weighted_hits: too many reports in one chunk")
    mask = np.int64((1 << bits) - 1)
    # exponents up to `spread` apart share one group: M_i 2^(e_i - e_lo) < 2^(53 + spread)
    # stays in an int64 and in two limbs whenever 53 + spread <= 2 bits
    spread = max(0, min(62 - 53, 2 * bits - 53))
    for negative in (False, True):
        side = (mant < 0) if negative else (mant > 0)
        if not side.any():
            continue
        exponents = np.unique(e[side])[::-1]
        i = 0
        while i < exponents.shape[0]:
            e_hi, j = int(exponents[i]), i
            while j + 1 < exponents.shape[0] and e_hi - int(exponents[j + 1]) <= spread:
                j += 1
            e_lo = int(exponents[j])
            sel = side & (e >= e_lo) & (e <= e_hi)
            members = None if sel.all() else np.flatnonzero(sel)
            scaled = magnitude[sel] << (e[sel] - e_lo)
            sign = -1 if negative else 1
            for t in range(-(-(53 + e_hi - e_lo) // bits)):
                limb = (scaled >> np.int64(bits * t)) & mask
                if not limb.any():
                    continue
                sums = np.asarray(hits(members, limb.astype(np.float64)))
                total.add_integers(sign * np.rint(sums).astype(np.int64), e_lo - 53 + bits * t)
            i = j + 1
