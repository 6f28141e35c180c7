"""Lower and upper bounds on the count-dependent budget, and the r = 1 mechanism.

Paper 003 shows that ``v(n) = Theta_r(n^-2)`` is optimal for every fixed
``0 < r < 1``:

- upper bound: the shifted-log Gaussian reaches ``n^2 v(n) -> 1/(2 sigma^2)``
  (:class:`~fastldp.histograms.ShiftedLogGaussian`), and with the median drift
  ``erf(sigma/sqrt 2) -> r``, so ``r^2 n^2 v(n) -> r^2 / (2 sigma^2) -> 1/pi``
  as ``r -> 0`` (:func:`mechanism_leading_constant`);
- lower bound, two counts: every mechanism meeting the repaired utility
  requirement has ``liminf n^2 v(n) >= (1-r)^6 / (128 r^2 (1+r)^2)``
  (:func:`two_count_lower_bound`);
- leading coefficient, many counts ("hidden offset"): with ``C*`` the best
  ``lim r^2 liminf n^2 v(n)`` for small ``r``,
  ``pi / (4 e^2) <= C* <= 1/pi`` (:func:`leading_coefficient_bounds`), a
  ratio ``4 e^2 / pi^2 ~ 2.995`` (:func:`leading_coefficient_ratio`);
- at ``r = 1`` the data-independent release 0.5 meets the requirement with
  ``v = 0`` (:class:`DataIndependentRelease`).

The bounds are stated by the paper; here they are functions to compare the
mechanism against, not re-derived.
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import ArrayLike
from scipy import special

from .._random import as_generator
from .._validation import KeywordOnly, check_choice, check_float
from ..results import PrivacyStatement
from ._checks import RngLike, check_counts, check_nonnegative, positional_deprecated, scalar_or_array
from .privacy import HistogramRelease

__all__ = [
    "two_count_lower_bound",
    "C_LOWER",
    "C_UPPER",
    "leading_coefficient_bounds",
    "leading_coefficient_ratio",
    "mechanism_leading_constant",
    "DataIndependentRelease",
]

#: ``pi / (4 e^2)``: the many-count lower bound on the leading coefficient ``C*``.
C_LOWER = math.pi / (4 * math.e ** 2)
#: ``1 / pi``: the shifted-log Gaussian's leading coefficient as ``r -> 0``.
C_UPPER = 1 / math.pi


def _r_array(r, owner: str) -> np.ndarray:
    arr = np.asarray(r)
    if arr.dtype.kind not in "iuf":
        raise TypeError(f"The 'r' parameter of {owner} must be a float or an array of floats "
                        f"in (0, 1]. Got {r!r} instead.")
    arr = arr.astype(np.float64)
    bad = ~((arr > 0) & (arr <= 1))
    if bad.any():
        raise ValueError(f"The 'r' parameter of {owner} must be a float or an array of floats "
                         f"in (0, 1]. Got {float(arr[bad].ravel()[0])!r} instead.")
    return arr


def two_count_lower_bound(r):
    """``(1 - r)^6 / (128 r^2 (1 + r)^2)``: the two-count bound on ``liminf n^2 v(n)``.

    Any mechanism with ``E|x_hat - x| < r max(x, 1)`` and count-dependent zCDP
    budget ``v`` has ``liminf_{n -> inf} n^2 v(n)`` at least this (paper 003).
    It is 0 at ``r = 1``, where :class:`DataIndependentRelease` has ``v = 0``.

    Parameters
    ----------
    r : float or array_like
        Target relative error, in ``(0, 1]``.

    Returns
    -------
    float or ndarray
    """
    r = _r_array(r, "two_count_lower_bound")
    return scalar_or_array((1 - r) ** 6 / (128 * r * r * (1 + r) ** 2))


def leading_coefficient_bounds() -> tuple[float, float]:
    """``(pi / (4 e^2), 1 / pi)``: the paper's bounds on the leading coefficient ``C*``."""
    return C_LOWER, C_UPPER


def leading_coefficient_ratio() -> float:
    """``(1/pi) / (pi / (4 e^2)) = 4 e^2 / pi^2``, about 2.995."""
    return C_UPPER / C_LOWER


def mechanism_leading_constant(r, drift: str = "median"):
    """``r^2 lim n^2 v(n) = r^2 / (2 sigma_r^2)`` for the limit calibration ``margin -> 0``.

    ``sigma_r`` solves ``E|W - 1| = r`` exactly (``sqrt 2 erfinv(r)`` for the
    median drift), the supremum of the feasible ``sigma``; a calibrated
    :class:`~fastldp.histograms.ShiftedLogGaussian` approaches it as its
    margin shrinks. With the median drift ``erf(s/sqrt 2) = s sqrt(2/pi) +
    O(s^3)``, so this tends to ``1/pi`` as ``r -> 0`` (0.3183 at ``r = 0.01``).

    Parameters
    ----------
    r : float or array_like
        In ``(0, 1)`` (``r = 1`` would need ``sigma = inf`` with the median drift).
    drift : {"median", "mean"}

    Returns
    -------
    float or ndarray
    """
    owner = "mechanism_leading_constant"
    drift = check_choice(drift, "drift", owner, ("median", "mean"))
    r = _r_array(r, owner)
    if np.any(r >= 1):
        raise ValueError(f"The 'r' parameter of {owner} must be a float or an array of floats "
                         f"in (0, 1). Got {r!r} instead.")
    if drift == "median":
        sigma = math.sqrt(2) * special.erfinv(r)
    else:
        sigma = 2 * math.sqrt(2) * special.erfinv(r / 2)
    return scalar_or_array(r * r / (2 * sigma * sigma))


class DataIndependentRelease(KeywordOnly):
    """The ``r = 1`` mechanism: release ``value`` (0.5) whatever the count; ``v = 0``.

    ``E|0.5 - x| = |0.5 - x| < max(x, 1)`` for every ``x >= 0`` (it is at most
    0.5 on ``[0, 1]`` and ``x - 0.5`` above), so the repaired requirement holds
    with ``r = 1`` and no privacy loss. For ``r < 1`` it fails at large ``x``
    (``x - 0.5 < r x`` only below ``0.5 / (1 - r)``).

    Parameters
    ----------
    value : float, default 0.5
        The constant released, in ``(0, 1)`` (any such value meets ``r = 1``).
        Keyword-only; ``DataIndependentRelease(0.3)`` still works for one
        release, with a ``DeprecationWarning``.

    Examples
    --------
    >>> mech = DataIndependentRelease(value=0.5)
    >>> mech.release([0, 7, 10**6]).tolist()
    [0.5, 0.5, 0.5]
    >>> out = mech.release_result([0, 7, 10**6])
    >>> out.privacy.rho, bool(mech.meets(1.0, [0, 7, 10**6]).all())
    (0.0, True)
    """

    r = 1.0

    @positional_deprecated("value")
    def __init__(self, *, value: float = 0.5) -> None:
        self.value = check_float(value, "value", "DataIndependentRelease", low=0, high=1)

    def __repr__(self) -> str:
        return f"DataIndependentRelease(value={self.value!r})"

    def release(self, counts: ArrayLike, *, rng: RngLike = None) -> np.ndarray:
        """``value`` for every count (``rng`` is accepted and unused)."""
        x = check_counts(counts, "counts", "DataIndependentRelease.release")
        as_generator(rng, "DataIndependentRelease.release")
        return np.full(x.shape, self.value)

    def release_result(self, counts: ArrayLike, *, rng: RngLike = None) -> HistogramRelease:
        """:meth:`release` as a :class:`~fastldp.histograms.HistogramRelease` (``rho = 0``)."""
        x = check_counts(counts, "counts", "DataIndependentRelease.release_result")
        as_generator(rng, "DataIndependentRelease.release_result")
        return HistogramRelease(np.full(x.shape, self.value), int(x.size),
                                PrivacyStatement.zcdp(rho=0.0), repr(self))

    def rho(self, n: ArrayLike) -> float | np.ndarray:
        """``v(n) = 0``: the output does not depend on the data."""
        n = check_counts(n, "n", "DataIndependentRelease.rho")
        return scalar_or_array(np.zeros_like(n))

    def expected_error(self, x: ArrayLike) -> float | np.ndarray:
        """``|value - x|`` (the release is deterministic)."""
        xs = check_nonnegative(x, "x", "DataIndependentRelease.expected_error")
        return scalar_or_array(np.abs(self.value - xs))

    def meets(self, r: float, x: ArrayLike) -> np.ndarray:
        """Whether ``|value - x| < r max(x, 1)`` at each ``x``."""
        r = check_float(r, "r", "DataIndependentRelease.meets", low=0, high=1, high_open=False)
        xs = check_nonnegative(x, "x", "DataIndependentRelease.meets")
        return np.abs(self.value - xs) < r * np.maximum(xs, 1.0)
