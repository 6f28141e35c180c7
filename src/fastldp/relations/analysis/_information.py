"""Information, leverage and indistinguishability functionals of a budget vector.

These are the three summaries of a personalized privacy vector that enter the
minimax analysis of paper 000 (section 3.4): the trimmed honest information
``I_eff`` (Eq. (1)), the corrupted linear leverage ``L_eff`` (Eq. (2)) and the
contamination-indistinguishability radius ``rho_ind`` (Theorem 2). All three
are functions of the channel amplitudes ``gamma_i = tanh(eps_i / 2)`` and of
the corruption budget ``m_alpha = floor(alpha * n)``.

References
----------
.. [1] Paper 000 (see :mod:`fastldp.relations` for the citation), section 3.4,
   Eqs. (1)-(2), Proposition 1, Lemma 1 and Theorem 2.
"""

from __future__ import annotations

import math

import numpy as np
from scipy.optimize import brentq

from ..calibration import gamma_from_epsilon
from ..._validation import check_float, check_int, check_positive_array, param_error
from ...corruption import _check_alpha, _corrupted_count

__all__ = [
    "I_eff",
    "L_eff",
    "rho_ind",
    "rho_ind_homogeneous",
]


# --------------------------------------------------------------------------
# shared parameter handling (also used by _bounds and _audit)
# --------------------------------------------------------------------------


def _budgets(epsilons, n, owner: str) -> np.ndarray:
    """Validate ``epsilons`` (1-d, or scalar with ``n``) and return float64 budgets."""
    if n is not None:
        n = check_int(n, "n", owner, low=1)
    eps = check_positive_array(epsilons, "epsilons", owner, size=n)
    if n is None and np.ndim(epsilons) == 0:
        raise param_error(
            "n", owner, "an int in [1, inf) when 'epsilons' is a scalar", None, TypeError
        )
    if eps.shape[0] == 0:
        raise param_error("epsilons", owner, "a non-empty 1-d array", "array of length 0")
    return eps


def _sorted_gammas(epsilons, alpha, n, owner: str):
    """Return ``(gamma sorted ascending, m_alpha, alpha)`` after validation."""
    alpha = _check_alpha(alpha, owner)
    eps = _budgets(epsilons, n, owner)
    gamma = np.sort(gamma_from_epsilon(eps))
    return gamma, _corrupted_count(gamma.shape[0], alpha), alpha


def _i_eff_sorted(gamma: np.ndarray, m: int) -> float:
    honest = gamma[: gamma.shape[0] - m]
    return float(np.sum(honest * honest))


def _l_eff_sorted(gamma: np.ndarray, m: int) -> float:
    if m == 0:
        return 0.0
    n = gamma.shape[0]
    denominator = _i_eff_sorted(gamma, m)
    if not denominator > 0.0:
        return math.inf
    return float(np.sum(gamma[n - m :])) / denominator


def _rho_ind_sorted(gamma: np.ndarray, m: int) -> float:
    if m == 0:
        return 0.0
    target = 0.5 * m

    def excess(rho: float) -> float:
        x = gamma * rho
        return float(np.sum(x / (1.0 + x))) - target

    if excess(0.5) <= 0.0:
        return 0.5
    # f(rho) <= rho * sum(gamma), so f is still below m/2 at m / (2 sum gamma).
    lo = min(target / float(np.sum(gamma)), 0.5)
    if excess(lo) >= 0.0:  # only through rounding: lo is then the root
        return lo
    return float(brentq(excess, lo, 0.5, xtol=1e-300, rtol=4 * np.finfo(float).eps, maxiter=200))


# --------------------------------------------------------------------------
# public functions
# --------------------------------------------------------------------------


def I_eff(epsilons, alpha: float, *, n: int | None = None) -> float:
    """Return the trimmed honest information ``I_eff^(alpha)`` of Eq. (1).

    ``I_eff = sum_{j=1}^{n - m_alpha} gamma_(j)^2``: the sum of the
    ``n - m_alpha`` smallest squared amplitudes ``gamma_i = tanh(eps_i / 2)``,
    i.e. the honest information left after an attacker captures the
    ``m_alpha`` most informative identities.

    Parameters
    ----------
    epsilons : array_like of float
        Personalized budgets, a non-empty 1-d array of finite floats in
        ``(0, inf)``. A scalar is accepted only together with ``n``, and then
        means ``n`` identities with that budget.
    alpha : float
        Contamination fraction in ``[0, 1)``; ``m_alpha = floor(alpha n)``
        (see :func:`corrupted_count`).
    n : int, optional
        Number of identities; required with a scalar ``epsilons``, and checked
        against the length of an array.

    Returns
    -------
    float
        ``I_eff >= 0``. For equal budgets it is ``(n - m_alpha) gamma^2``
        (Proposition 1).

    Notes
    -----
    Computed by one sort, ``O(n log n)``.

    References
    ----------
    .. [1] Paper 000, section 3.4, Eq. (1) and Proposition 1.
    """
    gamma, m, _ = _sorted_gammas(epsilons, alpha, n, "I_eff")
    return _i_eff_sorted(gamma, m)


def L_eff(epsilons, alpha: float, *, n: int | None = None) -> float:
    """Return the corrupted linear leverage ``L_eff^(alpha)`` of Eq. (2).

    ``L_eff = max_{|B| <= m_alpha} (sum_{i in B} gamma_i) /
    (sum_{i not in B} gamma_i^2)``: the largest signed influence a corrupted
    set can exert after budget-weighted channel inversion, relative to the
    honest information that remains.

    Parameters
    ----------
    epsilons : array_like of float
        Personalized budgets, a non-empty 1-d array of finite floats in
        ``(0, inf)``; a scalar only together with ``n``.
    alpha : float
        Contamination fraction in ``[0, 1)``.
    n : int, optional
        Number of identities (required with a scalar ``epsilons``).

    Returns
    -------
    float
        ``0.0`` when ``m_alpha = 0``; ``inf`` when the honest denominator is
        0 (only possible when amplitudes underflow to 0). For equal budgets it
        is ``m_alpha / ((n - m_alpha) gamma)`` (Proposition 1).

    Notes
    -----
    The maximum over the ``sum_{b <= m} C(n, b)`` candidate sets is attained by
    the ``m_alpha`` largest amplitudes, so the value is exact after one sort
    (``O(n log n)``):

    1. *Fixed size.* Fix ``|B| = b``. The numerator ``sum_B gamma_i`` is
       maximized by the ``b`` largest amplitudes. The denominator equals
       ``sum_i gamma_i^2 - sum_B gamma_i^2``; since ``x -> x^2`` is increasing
       on ``[0, 1]`` it is minimized by the same ``b`` largest amplitudes. One
       set therefore maximizes the numerator (``>= 0``) and minimizes the
       denominator (``> 0``), hence maximizes the ratio among sets of size
       ``b``.
    2. *Growing the set.* Passing from the top ``b`` to the top ``b + 1``
       amplitudes adds ``gamma >= 0`` to the numerator and removes
       ``gamma^2 >= 0`` from the denominator, so the optimal ratio is
       non-decreasing in ``b`` and the maximum is at ``b = m_alpha``.

    Ties between equal amplitudes do not change the value.

    References
    ----------
    .. [1] Paper 000, section 3.4, Eq. (2) and Proposition 1.
    """
    gamma, m, _ = _sorted_gammas(epsilons, alpha, n, "L_eff")
    return _l_eff_sorted(gamma, m)


def rho_ind_homogeneous(n: int, epsilon: float, alpha: float) -> float:
    """Return Theorem 2's homogeneous radius ``min{1/2, m / ((2n - m) gamma)}``.

    Parameters
    ----------
    n : int
        Number of identities, ``n >= 1``.
    epsilon : float
        Common budget in ``(0, inf)``; ``gamma = tanh(epsilon / 2)``.
    alpha : float
        Contamination fraction in ``[0, 1)``; ``m = floor(alpha n)``.

    Returns
    -------
    float
        The radius in ``[0, 1/2]``; 0 when ``m = 0``.

    References
    ----------
    .. [1] Paper 000, section 4, Theorem 2 (homogeneous budgets).
    """
    owner = "rho_ind_homogeneous"
    n = check_int(n, "n", owner, low=1)
    epsilon = check_float(epsilon, "epsilon", owner, low=0, high=math.inf)
    alpha = _check_alpha(alpha, owner)
    m = _corrupted_count(n, alpha)
    if m == 0:
        return 0.0
    gamma = math.tanh(epsilon / 2.0)
    if not gamma > 0.0:
        return 0.5
    return min(0.5, m / ((2 * n - m) * gamma))


def rho_ind(epsilons, alpha: float, *, n: int | None = None) -> float:
    """Return the contamination-indistinguishability radius ``rho_ind^(alpha)``.

    Theorem 2 of the paper asserts a personalized radius with
    ``R* >= kbar rho_ind^2 / 16 * (1 - 4 exp(-m_alpha / 6))_+`` and gives
    ``rho_ind = min{1/2, m / ((2n - m) gamma)}`` for equal budgets; its finite
    heterogeneous program (Supplementary Appendix C) is not available. The
    program computed here is **this package's reconstruction** from Lemma 1,
    derived below; it reproduces the homogeneous closed form exactly, but it
    is not copied from the appendix and may differ from it for unequal
    budgets. It is

    .. math::

        \\varrho_{\\rm ind} = \\min\\Bigl\\{\\tfrac12,\\ \\text{the root }
        \\varrho > 0 \\text{ of } \\sum_{i=1}^n
        \\frac{\\gamma_i \\varrho}{1 + \\gamma_i \\varrho} = \\frac{m_\\alpha}{2}\\Bigr\\}

    and ``0`` when ``m_alpha = 0``.

    Parameters
    ----------
    epsilons : array_like of float
        Personalized budgets, a non-empty 1-d array of finite floats in
        ``(0, inf)``; a scalar only together with ``n``.
    alpha : float
        Contamination fraction in ``[0, 1)``.
    n : int, optional
        Number of identities (required with a scalar ``epsilons``).

    Returns
    -------
    float
        The radius in ``[0, 1/2]``.

    Notes
    -----
    **Derivation (reconstruction).** Two candidate means ``M_0, M_1`` differ by
    ``rho`` on ``kbar`` coordinates, through record laws with
    ``TV(P_{0}, P_{1}) <= rho`` for every identity (the two-point construction
    behind the homogeneous formula; assumed, not taken from the appendix).

    * *Contraction (Lemma 1, first part).* Identity ``i``'s honest output laws
      ``R_{0,i}, R_{1,i}`` satisfy ``TV(R_{0,i}, R_{1,i}) <= gamma_i rho``
      whatever ``eps_i``-LDP channel is used.
    * *Randomized corruption.* The adversary corrupts identity ``i``
      independently with probability ``beta_i`` and then emits a law
      ``Q_{h,i}``, so identity ``i``'s observed law under hypothesis ``h`` is
      ``(1 - beta_i) R_{h,i} + beta_i Q_{h,i}``; identities stay independent,
      so the two transcripts coincide iff every identity's mixtures coincide.
    * *Overlap (Lemma 1, second part).* Those mixtures can be made equal iff
      ``TV(R_{0,i}, R_{1,i}) <= beta_i / (1 - beta_i)``; by contraction it
      suffices that ``beta_i >= gamma_i rho / (1 + gamma_i rho)``, and this
      is also necessary for a channel that attains the contraction.
    * *Budget.* Asking the expected number of corruptions to be at most
      ``m/2`` gives, by the multiplicative Chernoff bound for independent
      Bernoulli counts, ``P(more than m corrupted) <= exp(-m/6)``, the exponent
      of the finite-``m`` factor ``(1 - 4 e^{-m/6})_+`` of Eq. (4); this is
      why the budget is ``m/2`` and not ``m``.

    The cheapest feasible allocation takes ``beta_i`` at its lower limit, so
    ``rho`` is feasible iff ``f(rho) = sum_i gamma_i rho / (1 + gamma_i rho)
    <= m/2``. ``f`` is continuous, strictly increasing and concave with
    ``f(0) = 0``, so the feasible set is ``[0, root]``; the cap ``1/2`` keeps
    both means inside ``[0, 1]`` as in the theorem. For equal budgets
    ``n gamma rho / (1 + gamma rho) = m/2`` gives ``rho = m / ((2n - m) gamma)``,
    the paper's closed form.

    The candidate ``m / (sum_i gamma_i + sum_{honest} gamma_i)`` also reduces
    to the homogeneous form, but we found no overlap argument that produces it;
    the program above follows from Lemma 1 and the stated Chernoff factor.
    Since ``f`` increases in every ``gamma_i``, the radius lies between the
    homogeneous radii at ``gamma_max`` and ``gamma_min``, and ``x / (1 + x)
    <= x`` gives ``rho_root >= m / (2 sum_i gamma_i)``.

    **Computation.** ``f`` is evaluated in ``O(n)``; the root is bracketed in
    ``[m / (2 sum gamma), 1/2]`` and found by Brent's method to a relative
    accuracy of a few ulps (``O(n)`` per iteration, a few dozen iterations).

    **Majority case.** When ``2 m_alpha >= n`` Theorem 2 gives
    ``R* >= kbar / 4`` by swapping two honest sets, independently of the
    radius. This function still returns the program's value (so that it
    agrees with the homogeneous closed form for every ``alpha``);
    :func:`lower_bound_contamination` applies the majority statement.

    References
    ----------
    .. [1] Paper 000, section 4, Lemma 1 and Theorem 2.
    .. [2] P. J. Huber, "A robust version of the probability ratio test",
       Ann. Math. Statist. 36 (1965) (contamination neighbourhoods).
    """
    gamma, m, _ = _sorted_gammas(epsilons, alpha, n, "rho_ind")
    return _rho_ind_sorted(gamma, m)
