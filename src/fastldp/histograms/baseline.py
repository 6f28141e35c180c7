"""The baseline: the Gaussian mechanism with equal absolute noise on every count.

``x_hat = max(0, x + s Z)`` (clipping at 0 is post-processing). Adjacent
counts differ by 1 and the variance is the same for all counts, so every
group gets the same budget ``rho = 1 / (2 s^2)``, whatever its size. Its
expected error, with ``t = x / s`` and ``phi``, ``Phi`` the standard normal
density and CDF, is

    E|x_hat - x| = s (sqrt(2/pi) - phi(t)) + x Phi(-t),

(``E[|Z| 1{Z < -t}] = phi(t)``), non-decreasing in ``x`` from ``s phi(0)``
at ``x = 0`` to ``s sqrt(2/pi)``. So its relative error falls like ``1/x``
while its budget stays flat, the opposite trade of the shifted-log Gaussian.

Two calibrations to the same worst group as a
:class:`~fastldp.histograms.ShiftedLogGaussian`:

- :meth:`EqualNoiseGaussian.matching_privacy`: the same budget as the
  mechanism's worst-off group, ``rho = v(0) = v(1)``;
- :meth:`EqualNoiseGaussian.matching_utility`: the same utility requirement
  ``E|x_hat - x| < r max(x, 1)``, whose worst group is ``x = 1``:
  ``s sqrt(2/pi) = r (1 - margin)``, so ``rho = 1 / (pi r^2 (1 - margin)^2)``
  for every group, against ``~1 / (pi r^2 (1 - margin)^2 n^2)`` for the
  shifted-log Gaussian (median drift, small ``r``).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import ArrayLike
from scipy import special

from .._random import as_generator
from .._validation import KeywordOnly, check_float
from ..results import PrivacyStatement
from ._checks import RngLike, check_counts, check_nonnegative, scalar_or_array
from .privacy import HistogramRelease

if TYPE_CHECKING:
    from .mechanism import ShiftedLogGaussian

__all__ = ["EqualNoiseGaussian"]

_OWNER = "EqualNoiseGaussian"


class EqualNoiseGaussian(KeywordOnly):
    """Equal absolute Gaussian noise on every count, clipped at 0.

    Parameters
    ----------
    scale : float
        The noise standard deviation ``s``, in ``(0, inf)``.
    label : str, optional
        A name for tables and figures.

    Attributes
    ----------
    scale : float
    label : str

    Examples
    --------
    >>> import numpy as np
    >>> base = EqualNoiseGaussian.matching_utility(0.1)
    >>> noisy = base.release([0, 4, 120, 50_000], rng=1)
    >>> bool((noisy >= 0).all()), base.rho(5) == 1 / (2 * base.scale**2)
    (True, True)
    """

    def __init__(self, *, scale: float, label: str = "equal-noise Gaussian") -> None:
        self.scale = check_float(scale, "scale", _OWNER, low=0)
        self.label = str(label)

    def __repr__(self) -> str:
        return f"EqualNoiseGaussian(scale={self.scale:.6g})"

    @classmethod
    def matching_privacy(cls, mechanism: "ShiftedLogGaussian") -> "EqualNoiseGaussian":
        """The same zCDP budget as ``mechanism``'s worst-off group, ``max_n v(n) = v(0)``."""
        rho0 = float(mechanism.rho(0))
        return cls(scale=1 / math.sqrt(2 * rho0), label="equal noise, same worst-group budget")

    @classmethod
    def matching_utility(cls, r: float, *, margin: float = 0.01) -> "EqualNoiseGaussian":
        """The smallest budget meeting ``E|x_hat - x| < r max(x, 1)``, up to ``margin``.

        The error is non-decreasing in ``x`` and bounded by ``s sqrt(2/pi)``,
        so ``s = r (1 - margin) sqrt(pi/2)`` meets the bound at every ``x``
        (at ``x <= 1`` through ``x = 1``, above it since ``s sqrt(2/pi) < r x``).
        """
        r = check_float(r, "r", f"{_OWNER}.matching_utility", low=0, high=1, high_open=False)
        margin = check_float(margin, "margin", f"{_OWNER}.matching_utility", low=0, high=1)
        return cls(scale=r * (1 - margin) * math.sqrt(math.pi / 2),
                   label="equal noise, same utility requirement")

    def release(self, counts: ArrayLike, *, rng: RngLike = None) -> np.ndarray:
        """``max(0, x + s Z)`` for each count, the shape of ``counts``."""
        return self._release(counts, rng, f"{_OWNER}.release")

    def _release(self, counts, rng, owner: str) -> np.ndarray:
        x = check_counts(counts, "counts", owner)
        gen = as_generator(rng, owner)
        return np.maximum(x + self.scale * gen.standard_normal(x.shape), 0.0)

    def release_result(self, counts: ArrayLike, *, rng: RngLike = None) -> HistogramRelease:
        """:meth:`release` (the same numbers for the same ``rng``) as a
        :class:`~fastldp.histograms.HistogramRelease`, zCDP per person at
        ``rho = 1 / (2 s^2)``."""
        noisy = self._release(counts, rng, f"{_OWNER}.release_result")
        return HistogramRelease(noisy, int(noisy.size),
                                PrivacyStatement.zcdp(rho=1 / (2 * self.scale ** 2)), repr(self))

    def rho(self, n: ArrayLike) -> float | np.ndarray:
        """``1 / (2 s^2)`` for every count ``n`` (vectorized)."""
        n = check_counts(n, "n", f"{_OWNER}.rho")
        return scalar_or_array(np.full(n.shape, 1 / (2 * self.scale ** 2)))

    def expected_error(self, x: ArrayLike) -> float | np.ndarray:
        """``E|x_hat - x| = s (sqrt(2/pi) - phi(x/s)) + x Phi(-x/s)`` (vectorized)."""
        xs = check_nonnegative(x, "x", f"{_OWNER}.expected_error")
        s = self.scale
        t = xs / s
        phi = np.exp(-0.5 * t * t) / math.sqrt(2 * math.pi)
        return scalar_or_array(s * (math.sqrt(2 / math.pi) - phi) + xs * special.ndtr(-t))
