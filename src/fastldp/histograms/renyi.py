"""Rényi divergences between univariate Gaussians, and why N(n, r^2 n^2) fails zCDP.

For ``P1 = N(mu1, sigma1^2)``, ``P2 = N(mu2, sigma2^2)`` and an order
``alpha`` not in ``{0, 1, inf}``, write

    sigma_alpha^2 = alpha sigma2^2 + (1 - alpha) sigma1^2.

Then ``D_alpha(P1 || P2)`` is finite if and only if ``sigma_alpha^2 > 0``,
and in that case [1]_

    D_alpha = log(sigma2 / sigma1)
              + log(sigma2^2 / sigma_alpha^2) / (2 (alpha - 1))
              + alpha (mu1 - mu2)^2 / (2 sigma_alpha^2).

Why: ``p1^alpha p2^(1 - alpha)`` is a Gaussian kernel whose quadratic
coefficient is ``-sigma_alpha^2 / (2 sigma1^2 sigma2^2)``; its integral over
the line is finite exactly when that coefficient is negative. For ``alpha``
in ``(0, 1)`` ``sigma_alpha^2`` is a convex combination of positive numbers,
so only orders ``alpha > 1`` can be infinite, and only when
``sigma1 > sigma2`` (the first law has the heavier tail): the critical order is

    alpha* = sigma1^2 / (sigma1^2 - sigma2^2)   (> 1),

with ``D_alpha = inf`` for every ``alpha >= alpha*`` (at ``alpha*`` the
kernel is the exponential of a linear function, whose integral diverges).
The three limit orders are

- ``alpha = 0``: ``-log P2(supp P1) = 0``;
- ``alpha = 1``: the Kullback-Leibler divergence
  ``log(sigma2/sigma1) + (sigma1^2 + (mu1 - mu2)^2) / (2 sigma2^2) - 1/2``;
- ``alpha = inf``: ``log sup p1/p2``, which is
  ``log(sigma2/sigma1) + (mu1 - mu2)^2 / (2 (sigma2^2 - sigma1^2))`` when
  ``sigma1 < sigma2``, ``0`` for identical laws and ``inf`` otherwise
  (equal variances with different means included).

With equal variances ``sigma_alpha = sigma`` and ``D_alpha = alpha delta^2 /
(2 sigma^2)``, ``delta = mu1 - mu2``: the ratio ``D_alpha / alpha`` does not
depend on the order, which is what makes the shifted-log Gaussian mechanism
zCDP (see :mod:`fastldp.histograms.mechanism`).

The naive release ``N(n, r^2 n^2)`` has the right error scale, but adjacent
counts have unequal variances, so the larger count's law against the smaller
one's becomes infinite at the order ``(n + 1)^2 / (2n + 1)``
(:func:`proportional_gaussian_failure`): no zCDP budget, however large,
covers it.

References
----------
.. [1] M. Gil, F. Alajaji and T. Linder, "Rényi divergence measures for
   commonly used univariate continuous distributions", Information Sciences
   249 (2013) 124-131.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from .._validation import check_float, check_int, param_error
from ._checks import scalar_or_array

__all__ = [
    "renyi_gaussian",
    "renyi_critical_order",
    "gaussian_zcdp",
    "ProportionalFailure",
    "proportional_gaussian_failure",
]


def _float_array(value, name: str, owner: str, *, positive: bool = False,
                 allow_inf: bool = False, low=None) -> np.ndarray:
    kind = "floats in (0, inf)" if positive else ("floats in [0, inf]" if low == 0 else "finite floats")
    try:
        arr = np.asarray(value)
    except (TypeError, ValueError):
        raise param_error(name, owner, f"a float or an array of {kind}", value, TypeError) from None
    if arr.dtype.kind not in "iuf":
        raise param_error(name, owner, f"a float or an array of {kind}", value, TypeError)
    arr = arr.astype(np.float64)
    ok = np.isfinite(arr) | (allow_inf & (arr == np.inf))
    if positive:
        ok &= arr > 0
    if low is not None:
        ok &= arr >= low
    if not ok.all():
        bad = arr[~ok].ravel()[0]
        raise param_error(name, owner, f"a float or an array of {kind}", float(bad))
    return arr


def renyi_critical_order(sigma1, sigma2):
    """The order from which ``D_alpha(N(., sigma1^2) || N(., sigma2^2))`` is infinite.

    Parameters
    ----------
    sigma1, sigma2 : float or array_like
        Standard deviations of the first and second law, in ``(0, inf)``.

    Returns
    -------
    float or ndarray
        ``sigma1^2 / (sigma1^2 - sigma2^2)`` when ``sigma1 > sigma2``, else
        ``inf`` (every order is finite). The divergence is infinite for every
        order ``>=`` this value and finite below it.
    """
    owner = "renyi_critical_order"
    s1 = _float_array(sigma1, "sigma1", owner, positive=True)
    s2 = _float_array(sigma2, "sigma2", owner, positive=True)
    return scalar_or_array(_critical(s1, s2))


def _critical(s1: np.ndarray, s2: np.ndarray) -> np.ndarray:
    v1, v2 = s1 * s1, s2 * s2
    with np.errstate(divide="ignore", invalid="ignore"):
        crit = np.where(v1 > v2, v1 / (v1 - v2), np.inf)
    return np.asarray(crit, dtype=np.float64)


def renyi_gaussian(mu1, sigma1, mu2, sigma2, order):
    """Rényi divergence ``D_order(N(mu1, sigma1^2) || N(mu2, sigma2^2))`` in nats.

    Exact for every order in ``[0, inf]``, including the orders where it is
    infinite; the formula and the finiteness condition are in the module
    docstring. Arguments broadcast against each other.

    Parameters
    ----------
    mu1, mu2 : float or array_like
        Means, finite.
    sigma1, sigma2 : float or array_like
        Standard deviations, in ``(0, inf)``.
    order : float or array_like
        Orders in ``[0, inf]``; ``1`` is the Kullback-Leibler divergence and
        ``inf`` the max-divergence.

    Returns
    -------
    float or ndarray
        The divergence, ``inf`` where it diverges (``order >=``
        :func:`renyi_critical_order`, or ``order = inf`` with equal variances
        and different means).

    Examples
    --------
    >>> renyi_gaussian(0.0, 1.0, 1.0, 1.0, 2.0)   # alpha delta^2 / (2 sigma^2)
    1.0
    >>> renyi_gaussian(0.0, 2.0, 0.0, 1.0, 4 / 3)  # critical order 4/(4-1)
    inf
    """
    owner = "renyi_gaussian"
    m1 = _float_array(mu1, "mu1", owner)
    m2 = _float_array(mu2, "mu2", owner)
    s1 = _float_array(sigma1, "sigma1", owner, positive=True)
    s2 = _float_array(sigma2, "sigma2", owner, positive=True)
    a = _float_array(order, "order", owner, allow_inf=True, low=0)
    m1, s1, m2, s2, a = np.broadcast_arrays(m1, s1, m2, s2, a)
    d2 = (m1 - m2) ** 2
    v1, v2 = s1 * s1, s2 * s2
    log_ratio = np.log(s2 / s1)
    out = np.empty(a.shape, dtype=np.float64)
    crit = _critical(s1, s2)

    zero = a == 0
    out[zero] = 0.0

    kl = a == 1
    out[kl] = (log_ratio + (v1 + d2) / (2 * v2) - 0.5)[kl]

    top = np.isinf(a)
    with np.errstate(divide="ignore", invalid="ignore"):
        dmax = np.where(v1 < v2, log_ratio + d2 / (2 * (v2 - v1)),
                        np.where((v1 == v2) & (d2 == 0), 0.0, np.inf))
    out[top] = dmax[top]

    mid = ~(zero | kl | top)
    finite = mid & (a < crit)
    out[mid & ~finite] = np.inf
    if finite.any():
        af, v1f, v2f = a[finite], v1[finite], v2[finite]
        va = v1f + af * (v2f - v1f)  # alpha v2 + (1 - alpha) v1, exact when v1 == v2
        out[finite] = (log_ratio[finite] + np.log(v2f / va) / (2 * (af - 1))
                       + af * d2[finite] / (2 * va))
    # Rounding can leave a tiny negative value for (almost) identical laws.
    out = np.maximum(out, 0.0)
    return scalar_or_array(out)


def gaussian_zcdp(mu1, sigma1, mu2, sigma2):
    """``sup_{alpha > 1} max(D_alpha(P1||P2), D_alpha(P2||P1)) / alpha`` for two Gaussians.

    This is the smallest ``rho`` for which the pair satisfies ``rho``-zCDP in
    both directions. It is ``(mu1 - mu2)^2 / (2 sigma^2)`` with equal
    variances (the ratio ``D_alpha/alpha`` is the same at every order) and
    ``inf`` with unequal variances (the direction from the wider law is
    infinite from :func:`renyi_critical_order` on).

    Parameters
    ----------
    mu1, mu2 : float or array_like
        Means, finite.
    sigma1, sigma2 : float or array_like
        Standard deviations, in ``(0, inf)``.

    Returns
    -------
    float or ndarray
    """
    owner = "gaussian_zcdp"
    m1 = _float_array(mu1, "mu1", owner)
    m2 = _float_array(mu2, "mu2", owner)
    s1 = _float_array(sigma1, "sigma1", owner, positive=True)
    s2 = _float_array(sigma2, "sigma2", owner, positive=True)
    with np.errstate(divide="ignore"):
        out = np.where(s1 == s2, (m1 - m2) ** 2 / (2 * s1 * s2), np.inf)
    return scalar_or_array(np.asarray(out, dtype=np.float64))


@dataclass(frozen=True)
class ProportionalFailure:
    """How ``N(n, r^2 n^2)`` against ``N(n + 1, r^2 (n + 1)^2)`` breaks zCDP.

    Attributes
    ----------
    n : int
        The smaller count (``n >= 1``).
    r : float
        The relative noise scale.
    critical_order : float
        ``(n + 1)^2 / (2n + 1)``: ``D_alpha(N(n+1, .) || N(n, .))`` is infinite
        for every ``alpha >= critical_order`` and finite below it.
    infinite_direction : str
        Which direction diverges: from the larger count's law to the smaller's.
    forward_finite : bool
        Whether ``D_alpha(N(n, .) || N(n+1, .))`` is finite at every order
        (always true: the narrower law never diverges against the wider one).

    Examples
    --------
    >>> fail = proportional_gaussian_failure(3, 0.1)
    >>> round(fail.critical_order, 4)  # (n + 1)^2 / (2n + 1) = 16 / 7
    2.2857
    >>> fwd, back = fail.divergences([2.0, 3.0])
    >>> bool(np.isfinite(fwd).all()), bool(np.isinf(back[1]))
    (True, True)
    """

    n: int
    r: float
    critical_order: float
    infinite_direction: str = "D_alpha(N(n+1, r^2 (n+1)^2) || N(n, r^2 n^2))"
    forward_finite: bool = True

    def divergences(self, orders: ArrayLike) -> tuple:
        """``(D_alpha(N(n)||N(n+1)), D_alpha(N(n+1)||N(n)))`` at ``orders``."""
        n, r = self.n, self.r
        fwd = renyi_gaussian(n, r * n, n + 1, r * (n + 1), orders)
        back = renyi_gaussian(n + 1, r * (n + 1), n, r * n, orders)
        return fwd, back


def proportional_gaussian_failure(n: int, r: float) -> ProportionalFailure:
    """Show that releasing ``N(n, r^2 n^2)`` for a count ``n`` violates zCDP.

    The two adjacent counts ``n`` and ``n + 1`` get standard deviations
    ``r n < r (n + 1)``. By :func:`renyi_critical_order` with ``sigma1 = r (n+1)``
    and ``sigma2 = r n`` the divergence from the wider law is infinite from
    ``alpha* = (n + 1)^2 / ((n + 1)^2 - n^2) = (n + 1)^2 / (2n + 1)`` on, which
    does not depend on ``r``. So ``sup_alpha D_alpha / alpha = inf``: no
    budget ``v(n)`` exists. (At ``n = 0`` the law is a point mass at 0 and
    every divergence from ``N(1, r^2)`` to it is infinite.)

    Parameters
    ----------
    n : int
        The smaller of the two adjacent counts, ``>= 1``.
    r : float
        Relative noise scale, in ``(0, inf)``.

    Returns
    -------
    ProportionalFailure
    """
    owner = "proportional_gaussian_failure"
    n = check_int(n, "n", owner, low=1)
    r = check_float(r, "r", owner, low=0)
    crit = float(_critical(np.array(r * (n + 1.0)), np.array(r * float(n))))
    return ProportionalFailure(n=n, r=r, critical_order=crit)
