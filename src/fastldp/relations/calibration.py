"""Exact calibration constants of the JPRS set score (paper 000, section 5).

These are shared by the mechanisms (which need them to privatize and decode)
and by :mod:`fastldp.relations.analysis` (which re-exports them), so they live below
both.

For ``m >= 1`` let ``xi_1, ..., xi_m`` be independent Rademacher signs and

    a_m = E|xi_1 + ... + xi_m| / m,
    kappa_k = min_{m <= k} sqrt(k) * a_m,
    c_k(m) = kappa_k / (sqrt(k) * a_m).

``E|S_m|`` has the closed form ``m * C(m-1, floor((m-1)/2)) / 2**(m-1)``
(the mean absolute deviation of a symmetric simple random walk), so
``a_m = C(m-1, floor((m-1)/2)) / 2**(m-1)``. :func:`a_m_exact` evaluates it
in exact rational arithmetic. The mechanisms need the whole table
``a_1 .. a_k``, which is computed in ``O(k)`` floating-point operations from
the recurrence

    a_1 = 1,   a_{2j+2} = a_{2j+3} = a_{2j+1} * (2j + 1) / (2j + 2),

(both follow from ``C(2j+1, j) = C(2j, j) (2j+1)/(j+1)`` and
``C(2j+2, j+1) = C(2j, j) (2j+1)(2j+2)/(j+1)^2``). It shows that ``a_m`` is
non-increasing, so ``kappa_k = sqrt(k) a_k`` and ``c_k(m) = a_k / a_m``.

Error bound. Each step multiplies by the correctly rounded quotient
``fl((2j+1)/(2j+2))`` (both integers are exact in binary64 for ``j < 2**52``)
and rounds the product, two roundings of relative size at most
``u = 2**-53`` each. After the ``floor((m-1)/2)`` steps that reach ``a_m``,
``|a_hat_m / a_m - 1| <= (1 + u)**(m - 1) - 1 <= 1.01 (m - 1) u``; for the
ratio ``c_k(m)`` the bound doubles. At ``k = 10**6`` that is below ``2.3e-10``
(``tests/test_analysis.py`` checks it against :func:`a_m_exact`). Nothing in
the mechanisms is sensitive at that level: the calibration enters the
channel through ``theta = c_k(m) sgn(.)`` with ``|theta| <= 1`` (exactly 1 at
``m = k``, where the ratio is computed as ``a_k / a_k = 1``), so privacy
never depends on it, and the estimator's bias from it is below ``2e-10``
relative.

References
----------
.. [1] Paper 000, section 5,
   definitions before Eq. (6).
"""

from __future__ import annotations

from fractions import Fraction
from functools import lru_cache
from math import comb, sqrt

import numpy as np

from .._validation import check_int, check_positive_array
from ..streaming import ExactSum

__all__ = ["a_m", "a_m_exact", "a_m_table", "kappa_k", "c_k", "c_k_table", "gamma_from_epsilon",
           "gamma_sq_sum"]


@lru_cache(maxsize=None)
def a_m_exact(m: int) -> Fraction:
    """Return ``a_m = E|xi_1 + ... + xi_m| / m`` as an exact fraction.

    Parameters
    ----------
    m : int
        Number of Rademacher signs, ``m >= 1``.

    Returns
    -------
    fractions.Fraction
        ``C(m-1, floor((m-1)/2)) / 2**(m-1)``.
    """
    m = check_int(m, "m", "a_m", low=1)
    return Fraction(comb(m - 1, (m - 1) // 2), 2 ** (m - 1))


def a_m(m: int) -> float:
    """Return ``a_m = E|sum of m Rademacher signs| / m`` (paper 000, section 5).

    ``a_1 = 1``, ``a_2 = a_3 = 1/2``, ``a_4 = a_5 = 3/8``; ``a_m`` is
    non-increasing and behaves like ``sqrt(2 / (pi m))``.

    Parameters
    ----------
    m : int
        Number of signs, ``m >= 1``.

    Returns
    -------
    float
    """
    return float(a_m_exact(m))


def a_m_table(k: int) -> np.ndarray:
    """Return ``[nan, a_1, ..., a_k]`` (index = ``m``) in ``O(k)`` float operations.

    See the module docstring for the recurrence and its error bound
    (relative error at most ``1.01 (m - 1) 2**-53``).
    """
    k = check_int(k, "k", "a_m_table", low=1)
    j = np.arange((k + 1) // 2, dtype=np.float64)       # steps j = 0, 1, ...
    ratios = (2.0 * j + 1.0) / (2.0 * j + 2.0)          # fl((2j+1)/(2j+2))
    odd = np.empty(j.shape[0])                          # odd[j] = a_{2j+1}
    odd[0] = 1.0
    odd[1:] = np.cumprod(ratios[:-1])
    table = np.full(k + 1, np.nan)
    table[1::2] = odd                                   # a_1, a_3, a_5, ...
    table[2::2] = (odd * ratios)[: k // 2]              # a_2, a_4, ...
    return table


def kappa_k(k: int) -> float:
    """Return ``kappa_k = min_{1 <= m <= k} sqrt(k) a_m`` (paper 000, section 5).

    ``a_m`` is non-increasing (module docstring), so the minimum is
    ``sqrt(k) a_k``. ``2**-0.5 <= kappa_k <= 1``.

    Parameters
    ----------
    k : int
        Set-size cap, ``k >= 1``.

    Returns
    -------
    float
    """
    k = check_int(k, "k", "kappa_k", low=1)
    return sqrt(k) * float(a_m_table(k)[k])


def c_k(m: int, k: int) -> float:
    """Return the cardinality calibration ``c_k(m) = kappa_k / (sqrt(k) a_m) = a_k / a_m``.

    This is the factor that makes the set score of a holder with ``m``
    relations have first moment ``kappa_k / sqrt(k)`` on every held pair
    (paper 000, Eq. (7)). ``0 < c_k(m) <= 1``; ``c_k(m) = 0`` is used for the
    empty set by the mechanism, not by this function.

    Parameters
    ----------
    m : int
        Number of relations held, ``1 <= m <= k``.
    k : int
        Set-size cap.

    Returns
    -------
    float
    """
    k = check_int(k, "k", "c_k", low=1)
    m = check_int(m, "m", "c_k", low=1, high=k)
    table = a_m_table(k)
    return float(table[k] / table[m])


def c_k_table(k: int) -> np.ndarray:
    """Return ``[0, c_k(1), ..., c_k(k)]`` as a float64 array (index = set size); ``O(k)``."""
    k = check_int(k, "k", "c_k_table", low=1)
    a = a_m_table(k)
    table = np.zeros(k + 1, dtype=np.float64)
    table[1:] = a[k] / a[1:]
    table[k] = 1.0
    return table


def gamma_from_epsilon(epsilons) -> np.ndarray:
    """Return the channel amplitudes ``gamma_i = tanh(eps_i / 2)``.

    Parameters
    ----------
    epsilons : array_like of float
        Budgets, each in ``(0, inf)``.

    Returns
    -------
    numpy.ndarray of float64
    """
    eps = check_positive_array(epsilons, "epsilons", "gamma_from_epsilon")
    return np.tanh(eps / 2.0)


_BLOCK = 1 << 16


def add_gamma_squares(total: ExactSum, eps: np.ndarray, gamma=None, n_threads: int = 1) -> None:
    """Add ``tanh(eps_i / 2)^2`` of every budget to the exact sum ``total``.

    ``gamma``, when given, is ``np.tanh(eps * 0.5)`` already computed. A
    block of equal budgets adds ``n`` copies of one square in O(1); its
    ``tanh`` is evaluated by the same array call as in a mixed block, so the
    squares, and the exact sum, do not depend on how the budgets were split.
    """
    if eps.shape[0] == 0:
        return
    if eps[0] == eps[-1] and bool(np.all(eps == eps[0])):
        g = np.tanh(eps[:1] * 0.5)
        total.add_repeated(float(g[0] * g[0]), eps.shape[0])
        return
    g = np.tanh(eps * 0.5) if gamma is None else gamma
    total.add_terms(g * g, n_threads)


def gamma_sq_sum(eps: np.ndarray) -> float:
    """Return ``D = sum_i tanh(eps_i / 2)^2`` for validated budgets.

    The exact sum of the squares rounded once (:class:`fastldp.streaming.ExactSum`),
    in blocks of 65,536: the value JPRS's decode uses, however the budgets
    are split or ordered, with no length-n temporary.
    """
    total = ExactSum(1)
    for start in range(0, eps.shape[0], _BLOCK):
        add_gamma_squares(total, eps[start:start + _BLOCK])
    return float(total.value()[0])
