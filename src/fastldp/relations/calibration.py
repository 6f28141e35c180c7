"""Exact calibration constants of the JPRS set score (paper 000, section 5).

These are shared by the mechanisms (which need them to privatize and decode)
and by :mod:`fastldp.relations.analysis` (which re-exports them), so they live below
both.

For ``m >= 1`` let ``xi_1, ..., xi_m`` be independent Rademacher signs and

    a_m = E|xi_1 + ... + xi_m| / m,
    kappa_k = min_{m <= k} sqrt(k) * a_m,
    c_k(m) = kappa_k / (sqrt(k) * a_m).

``E|S_m|`` has the closed form ``m * C(m-1, floor((m-1)/2)) / 2**(m-1)``
(the mean absolute deviation of a symmetric simple random walk), which is
evaluated here in exact rational arithmetic and rounded once to float.

References
----------
.. [1] Paper 000 (``shared/papers/000_46b2269cb625a267.txt``), section 5,
   definitions before Eq. (6).
"""

from __future__ import annotations

from fractions import Fraction
from functools import lru_cache
from math import comb, sqrt

import numpy as np

from .._validation import check_int, check_positive_array

__all__ = ["a_m", "a_m_exact", "kappa_k", "c_k", "gamma_from_epsilon", "gamma_sq_sum"]


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


def kappa_k(k: int) -> float:
    """Return ``kappa_k = min_{1 <= m <= k} sqrt(k) a_m`` (paper 000, section 5).

    Because ``a_m`` is non-increasing the minimum is attained at ``m = k``;
    the minimum is nevertheless taken over all ``m`` as in the definition.
    ``2**-0.5 <= kappa_k <= 1``.

    Parameters
    ----------
    k : int
        Set-size cap, ``k >= 1``.

    Returns
    -------
    float
    """
    k = check_int(k, "k", "kappa_k", low=1)
    best = min(a_m_exact(m) for m in range(1, k + 1))
    return sqrt(k) * float(best)


def c_k(m: int, k: int) -> float:
    """Return the cardinality calibration ``c_k(m) = kappa_k / (sqrt(k) a_m)``.

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
    best = min(a_m_exact(j) for j in range(1, k + 1))
    return float(best / a_m_exact(m))


def c_k_table(k: int) -> np.ndarray:
    """Return ``[0, c_k(1), ..., c_k(k)]`` as a float64 array (index = set size)."""
    k = check_int(k, "k", "c_k_table", low=1)
    table = np.zeros(k + 1, dtype=np.float64)
    for m in range(1, k + 1):
        table[m] = c_k(m, k)
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


def gamma_sq_sum(eps: np.ndarray) -> float:
    """Return ``D = sum_i tanh(eps_i / 2)^2`` for validated budgets.

    Summed in fixed blocks of 65,536 (no BLAS, no length-n temporary), so
    the value is deterministic and the decoder's memory stays ``O(p)``
    beyond its inputs.
    """
    total = 0.0
    for start in range(0, eps.shape[0], _BLOCK):
        g = np.tanh(eps[start:start + _BLOCK] * 0.5)
        total += float(np.sum(g * g))
    return total
