"""The result every range estimator returns: a histogram over ``[0, D)`` that answers ranges and quantiles.

:class:`RangeEstimate` is small on purpose, so that any estimator of a
distribution over an ordered domain (a flat oracle, a hierarchy, Square
Wave's reconstruction) can return it or a subclass. A subclass that answers
ranges otherwise (a hierarchy without consistency sums tree nodes, not
leaves) overrides :meth:`RangeEstimate.prefix_counts`; ``range_count``,
``cdf`` and ``quantile`` are built on it.

Conventions
-----------
- Ranges are *inclusive*: ``range_count(a, b)`` estimates the number of
  users whose value ``v`` has ``a <= v <= b`` (integers, ``0 <= a <= b <
  D``), as "how many fall in [a, b]" reads.
- ``cdf()[v]`` estimates the fraction of users with value ``<= v``
  (``prefix_counts(v + 1) / n``): unbiased, so it may decrease or leave
  ``[0, 1]`` by noise.
- ``quantile(q)``: value ``v`` is spread uniformly over ``[v, v + 1)``, so
  the CDF is the piecewise-linear curve through ``(v, G[v - 1])`` and
  ``(v + 1, G[v])``, where ``G`` is ``cdf()`` made non-decreasing (running
  maximum) and clipped to ``[0, 1]``, with ``G[-1] = 0``. The quantile is
  the smallest ``t`` in ``[0, D]`` where that curve reaches ``q``; ``D``
  when it never does. On exact counts this is the inverse of the
  interpolated empirical CDF (:func:`quantile_from_cdf`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional

import numpy as np

from .._sanitize import SanitizationReport
from .._validation import param_error
from ..results import PrivacyStatement, Result

__all__ = ["RangeEstimate", "quantile_from_cdf", "check_ranges", "check_probabilities"]


def check_ranges(a: Any, b: Any, domain_size: int, owner: str) -> tuple:
    """``a`` and ``b`` as broadcast int64 arrays with ``0 <= a <= b < D``, or raise."""
    expected = f"integers in [0, {domain_size - 1}] with a <= b"
    out = []
    for name, value in (("a", a), ("b", b)):
        arr = np.asarray(value)
        if arr.dtype.kind == "f":
            finite = np.isfinite(arr)
            if not (finite.all() and np.all(np.floor(np.where(finite, arr, 0)) == arr)):
                raise param_error(name, owner, expected, value)
        elif arr.dtype.kind not in "iu" or arr.dtype == bool:
            raise param_error(name, owner, expected, value, TypeError)
        out.append(arr.astype(np.int64))
    lo, hi = np.broadcast_arrays(*out)
    bad = ~((lo >= 0) & (lo <= hi) & (hi < domain_size))
    if bad.any():
        i = np.unravel_index(int(np.flatnonzero(bad.ravel())[0]), bad.shape)
        raise ValueError(f"The ranges of {owner} must be {expected}. Got a={int(lo[i])}, "
                         f"b={int(hi[i])} at index {tuple(int(j) for j in i)} instead.")
    return lo, hi


def check_probabilities(q: Any, owner: str) -> np.ndarray:
    """``q`` as a float array in ``[0, 1]`` (NaN refused), or raise."""
    try:
        arr = np.asarray(q, dtype=np.float64)
    except (TypeError, ValueError):
        raise param_error("q", owner, "a float or array of floats in [0, 1]", q,
                          TypeError) from None
    if not np.all((arr >= 0) & (arr <= 1)):
        raise param_error("q", owner, "a float or array of floats in [0, 1]", q)
    return arr


def quantile_from_cdf(cdf: np.ndarray, q: Any) -> np.ndarray:
    """The documented quantile rule on a CDF ``cdf[v] = P(value <= v)`` (module docstring).

    Parameters
    ----------
    cdf : float array, shape (D,)
    q : float or array of floats in [0, 1]

    Returns
    -------
    numpy.ndarray of float64, the shape of ``q``
        Values in ``[0, D]``.

    Examples
    --------
    >>> quantile_from_cdf(np.array([0.25, 0.5, 1.0]), [0.0, 0.5, 0.75])
    array([0. , 2. , 2.5])
    """
    G = np.clip(np.maximum.accumulate(np.asarray(cdf, dtype=np.float64)), 0.0, 1.0)
    D = G.shape[0]
    q = np.asarray(q, dtype=np.float64)
    flat = q.ravel()
    v = np.searchsorted(G, flat, side="left")  # first v with G[v] >= q
    inside = v < D
    vv = np.minimum(v, D - 1)
    below = np.where(vv > 0, G[np.maximum(vv - 1, 0)], 0.0)
    rise = G[vv] - below
    frac = np.where(rise > 0, (flat - below) / np.where(rise > 0, rise, 1.0), 0.0)
    t = np.where(inside, vv + np.clip(frac, 0.0, 1.0), float(D))
    return t.reshape(q.shape)


@dataclass(frozen=True, repr=False)
class RangeEstimate(Result):
    """Estimated counts of every value of ``[0, D)``, answering ranges, the CDF and quantiles.

    Attributes
    ----------
    counts : numpy.ndarray of float64, shape (D,)
        The estimated number of users holding each value (``.estimate``).
        Unbiased; entries may be negative.
    variances : numpy.ndarray of float64 or None
        The variance of each count (``None`` where the estimator defines none).
    n : int
        The number of reports.
    privacy : PrivacyStatement
    sanitization : SanitizationReport or None
        The malformed reports, replaced and counted by reason.

    Notes
    -----
    Ranges are inclusive, ``quantile`` interpolates within a value (the
    module docstring :mod:`fastldp.ranges._base` has the rules). A
    subclass whose ranges are not sums of ``counts`` overrides
    :meth:`prefix_counts`.

    Examples
    --------
    >>> import numpy as np
    >>> from fastldp.results import PrivacyStatement
    >>> r = RangeEstimate(np.array([1.0, 2.0, 3.0, 4.0]), None, 10,
    ...                   PrivacyStatement.local(epsilon=1.0), None)
    >>> r.range_count([0, 1], [3, 2])
    array([10.,  5.])
    >>> r.quantile(0.5)
    array(2.66666667)
    """

    _estimate_field = "counts"
    counts: np.ndarray
    variances: Optional[np.ndarray]
    n: int
    privacy: PrivacyStatement
    sanitization: Optional[SanitizationReport]

    @property
    def domain_size(self) -> int:
        """``D``: the values are ``0 .. D - 1``."""
        return int(self.counts.shape[0])

    def prefix_counts(self, x: np.ndarray) -> np.ndarray:
        """The estimated number of users with a value ``< x`` (int array ``x`` in ``[0, D]``)."""
        cum = np.concatenate([[0.0], np.cumsum(self.counts)])
        return cum[np.asarray(x, dtype=np.int64)]

    def range_count(self, a: Any, b: Any) -> np.ndarray:
        """The estimated number of users with a value in ``[a, b]`` (inclusive), per range.

        Parameters
        ----------
        a, b : int or array_like of int
            The ends, broadcast together; ``0 <= a <= b < D``.

        Returns
        -------
        numpy.ndarray of float64, the broadcast shape of ``a`` and ``b``

        Raises
        ------
        ValueError, TypeError
            Naming the first range that is not one of ``[0, D)``.
        """
        lo, hi = check_ranges(a, b, self.domain_size, f"{type(self).__name__}.range_count")
        return self.prefix_counts(hi + 1) - self.prefix_counts(lo)

    def cdf(self) -> np.ndarray:
        """``F[v]``: the estimated fraction of users with a value ``<= v`` (shape ``(D,)``)."""
        prefix = self.prefix_counts(np.arange(1, self.domain_size + 1))
        return prefix / max(self.n, 1)

    def quantile(self, q: Any) -> np.ndarray:
        """The ``q``-quantiles (floats in ``[0, D]``) by the documented interpolation rule.

        Parameters
        ----------
        q : float or array_like of float in [0, 1]

        Returns
        -------
        numpy.ndarray of float64, the shape of ``q``
            See :func:`quantile_from_cdf`: ``v`` is spread over ``[v, v + 1)``
            and the CDF is first made non-decreasing and clipped to ``[0, 1]``.
        """
        arr = check_probabilities(q, f"{type(self).__name__}.quantile")
        return quantile_from_cdf(self.cdf(), arr)
