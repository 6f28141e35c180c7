"""Minimax lower bounds and JPRS upper bounds as functions of a budget vector.

Each function evaluates one displayed bound of paper 000 at a concrete
configuration: it validates the budgets and ``alpha``, computes the
functionals of :mod:`._information` itself, and returns the number. Universal
constants that the paper leaves unspecified (``c`` in Eq. (3), ``C`` in
Eqs. (10)-(11), ``C0`` in Eq. (9)) are parameters with default 1.0, so the
values are rate shapes, not certified numbers. The functions do *not* check a
theorem's hypotheses; :func:`theorem_regime_audit` reports which hold.

References
----------
.. [1] Paper 000 (see :mod:`fastldp.relations` for the citation), Theorems 1, 2
   and 4, Corollaries 1 and 2, Eqs. (3), (4), (9), (10), (11).
"""

from __future__ import annotations

import math
from typing import NamedTuple

from ..._validation import check_float, check_int
from ._information import _i_eff_sorted, _l_eff_sorted, _rho_ind_sorted, _sorted_gammas

__all__ = [
    "T_q",
    "lower_bound_sampling",
    "lower_bound_contamination",
    "lower_bound",
    "upper_bound",
    "expected_risk_upper_bound",
    "regularity_condition",
    "RegularityCheck",
]


def _check_constant(value, name: str, owner: str) -> float:
    return check_float(value, name, owner, low=0, high=math.inf)


def _check_delta(delta, owner: str) -> float:
    return check_float(delta, "delta", owner, low=0, high=1, low_open=True, high_open=False)


def _ratio(numerator: float, denominator: float) -> float:
    """``numerator / denominator`` with a zero denominator read as ``+inf``."""
    if denominator > 0.0:
        return numerator / denominator
    return math.inf if numerator > 0.0 else 0.0


def _t_q(q: int, p: int, delta: float) -> float:
    return q * math.log(9.0 * math.e * p / q) + math.log(8.0 / delta)


def _sampling(kbar: int, s: int, i_eff: float, c: float) -> float:
    return c * min(float(kbar), _ratio(kbar * s, i_eff))


def _contamination(kbar: int, n: int, m: int, rho: float) -> float:
    if 2 * m >= n:
        return kbar / 4.0
    finite_m = max(0.0, 1.0 - 4.0 * math.exp(-m / 6.0))
    return kbar * rho * rho / 16.0 * finite_m


def _upper(k: int, s: int, p: int, delta: float, i_eff: float, l_eff: float, C: float) -> float:
    search = s * math.log(9.0 * math.e * p / s) + math.log(8.0 / delta)
    return C * k * (_ratio(search, i_eff) + l_eff * l_eff)


def _expected_upper(k, kbar, s, p, n, i_eff, l_eff, C) -> float:
    inner = k * (_ratio(s * math.log(9.0 * math.e * p * n), i_eff) + l_eff * l_eff)
    return C * min(float(kbar), inner) + 2.0 * kbar / (n * n)


def T_q(q: int, p: int, delta: float) -> float:
    """Return the support-search term ``T_q(delta) = q log(9ep/q) + log(8/delta)``.

    Parameters
    ----------
    q : int
        Number of coordinates in a comparison set, ``q >= 1`` (the paper uses
        ``q <= 2s``).
    p : int
        Ambient dimension ``p = d1 * d2``, ``p >= 1``.
    delta : float
        Failure probability in ``(0, 1]``.

    Returns
    -------
    float

    References
    ----------
    .. [1] Paper 000, section 6, definition before Eq. (9).
    """
    q = check_int(q, "q", "T_q", low=1)
    p = check_int(p, "p", "T_q", low=1)
    delta = _check_delta(delta, "T_q")
    return _t_q(q, p, delta)


def lower_bound_sampling(
    epsilons, alpha: float, *, s: int, k: int, c: float = 1.0, n: int | None = None
) -> float:
    """Return Theorem 1's sampling lower bound ``c * min(kbar, kbar s / I_eff)``.

    Eq. (3): ``R* >= c [kbar ^ kbar s / I_eff^(alpha)]`` with
    ``kbar = min(k, s)``. The theorem assumes ``p >= 2s``, ``alpha < 1/2`` and
    ``max_i eps_i <= 1``; this function evaluates the right-hand side without
    checking them (see :func:`theorem_regime_audit`).

    Parameters
    ----------
    epsilons : array_like of float
        Budgets, a non-empty 1-d array in ``(0, inf)``; scalar only with ``n``.
    alpha : float
        Contamination fraction in ``[0, 1)``.
    s : int
        Support size, ``s >= 1``.
    k : int
        Record cap, ``k >= 1``.
    c : float, default 1.0
        The unspecified universal constant of Eq. (3), in ``(0, inf)``.
    n : int, optional
        Number of identities (required with a scalar ``epsilons``).

    Returns
    -------
    float

    References
    ----------
    .. [1] Paper 000, section 4, Theorem 1, Eq. (3).
    """
    owner = "lower_bound_sampling"
    gamma, m, _ = _sorted_gammas(epsilons, alpha, n, owner)
    s = check_int(s, "s", owner, low=1)
    k = check_int(k, "k", owner, low=1)
    c = _check_constant(c, "c", owner)
    return _sampling(min(k, s), s, _i_eff_sorted(gamma, m), c)


def lower_bound_contamination(
    epsilons, alpha: float, *, s: int, k: int, n: int | None = None
) -> float:
    """Return Theorem 2's contamination lower bound.

    Eq. (4): ``R* >= kbar rho_ind^2 / 16 * (1 - 4 exp(-m_alpha / 6))_+``,
    and, in the majority case ``2 m_alpha >= n``, ``R* >= kbar / 4`` for every
    privacy vector. The constants are explicit in the theorem, so there is no
    constant parameter. ``rho_ind`` is this package's reconstruction of the
    heterogeneous radius (see :func:`rho_ind`); it is exact for equal budgets.

    Parameters
    ----------
    epsilons : array_like of float
        Budgets, a non-empty 1-d array in ``(0, inf)``; scalar only with ``n``.
    alpha : float
        Contamination fraction in ``[0, 1)``.
    s : int
        Support size, ``s >= 1``.
    k : int
        Record cap, ``k >= 1``.
    n : int, optional
        Number of identities (required with a scalar ``epsilons``).

    Returns
    -------
    float
        ``kbar / 4`` if ``2 m_alpha >= n``; otherwise Eq. (4), which is 0 for
        ``m_alpha <= 8`` because ``4 exp(-m/6) >= 1`` there.

    References
    ----------
    .. [1] Paper 000, section 4, Theorem 2, Eq. (4).
    """
    owner = "lower_bound_contamination"
    gamma, m, _ = _sorted_gammas(epsilons, alpha, n, owner)
    s = check_int(s, "s", owner, low=1)
    k = check_int(k, "k", owner, low=1)
    return _contamination(min(k, s), gamma.shape[0], m, _rho_ind_sorted(gamma, m))


def lower_bound(
    epsilons, alpha: float, *, s: int, k: int, c: float = 1.0, n: int | None = None
) -> float:
    """Return Corollary 1's combined lower bound.

    ``min{kbar, max(sampling, contamination)}`` where *sampling* is
    :func:`lower_bound_sampling` (with constant ``c``) and *contamination* is
    :func:`lower_bound_contamination`; this is the displayed
    ``kbar ^ {kbar s / I_eff v kbar rho_ind^2}`` with each term carrying the
    constant and finite-``m`` factor of its theorem. The sampling term is only
    a valid bound under Theorem 1's hypotheses.

    Parameters
    ----------
    epsilons : array_like of float
        Budgets, a non-empty 1-d array in ``(0, inf)``; scalar only with ``n``.
    alpha : float
        Contamination fraction in ``[0, 1)``.
    s : int
        Support size, ``s >= 1``.
    k : int
        Record cap, ``k >= 1``.
    c : float, default 1.0
        Universal constant of the sampling term, in ``(0, inf)``.
    n : int, optional
        Number of identities (required with a scalar ``epsilons``).

    Returns
    -------
    float

    References
    ----------
    .. [1] Paper 000, section 4, Corollary 1.
    """
    owner = "lower_bound"
    gamma, m, _ = _sorted_gammas(epsilons, alpha, n, owner)
    s = check_int(s, "s", owner, low=1)
    k = check_int(k, "k", owner, low=1)
    c = _check_constant(c, "c", owner)
    kbar = min(k, s)
    sampling = _sampling(kbar, s, _i_eff_sorted(gamma, m), c)
    contamination = _contamination(kbar, gamma.shape[0], m, _rho_ind_sorted(gamma, m))
    return min(float(kbar), max(sampling, contamination))


def upper_bound(
    epsilons,
    alpha: float,
    *,
    p: int,
    s: int,
    k: int,
    delta: float,
    C: float = 1.0,
    n: int | None = None,
) -> float:
    """Return Theorem 4's high-probability JPRS error bound, Eq. (10).

    ``C k [(s log(9ep/s) + log(8/delta)) / I_eff + L_eff^2]``, which holds
    with probability at least ``1 - delta`` under Eq. (9) and ``alpha < 1/2``
    (not checked here; see :func:`regularity_condition`).

    Parameters
    ----------
    epsilons : array_like of float
        Budgets, a non-empty 1-d array in ``(0, inf)``; scalar only with ``n``.
    alpha : float
        Contamination fraction in ``[0, 1)``.
    p : int
        Ambient dimension ``d1 * d2``, ``p >= 1``.
    s : int
        Support size, ``s >= 1``.
    k : int
        Record cap, ``k >= 1``.
    delta : float
        Failure probability in ``(0, 1]``.
    C : float, default 1.0
        The unspecified universal constant of Eq. (10), in ``(0, inf)``.
    n : int, optional
        Number of identities (required with a scalar ``epsilons``).

    Returns
    -------
    float
        ``inf`` when ``I_eff = 0`` or ``L_eff = inf``.

    References
    ----------
    .. [1] Paper 000, section 6, Theorem 4, Eq. (10).
    """
    owner = "upper_bound"
    gamma, m, _ = _sorted_gammas(epsilons, alpha, n, owner)
    p = check_int(p, "p", owner, low=1)
    s = check_int(s, "s", owner, low=1)
    k = check_int(k, "k", owner, low=1)
    delta = _check_delta(delta, owner)
    C = _check_constant(C, "C", owner)
    return _upper(k, s, p, delta, _i_eff_sorted(gamma, m), _l_eff_sorted(gamma, m), C)


def expected_risk_upper_bound(
    epsilons,
    alpha: float,
    *,
    p: int,
    s: int,
    k: int,
    C: float = 1.0,
    n: int | None = None,
) -> float:
    """Return Corollary 2's expected-risk bound, Eq. (11) (``delta = n^-2``).

    ``C [kbar ^ k {s log(9epn) / I_eff + L_eff^2}] + 2 kbar / n^2``, as
    displayed in the paper (the high-probability bound at ``delta = n^-2``
    plus ``kbar`` times the failure probability, using that the projected
    estimate's loss is at most of order ``kbar``).

    Parameters
    ----------
    epsilons : array_like of float
        Budgets, a non-empty 1-d array in ``(0, inf)``; scalar only with ``n``.
    alpha : float
        Contamination fraction in ``[0, 1)``.
    p : int
        Ambient dimension ``d1 * d2``, ``p >= 1``.
    s : int
        Support size, ``s >= 1``.
    k : int
        Record cap, ``k >= 1``.
    C : float, default 1.0
        The unspecified universal constant of Eq. (11), in ``(0, inf)``.
    n : int, optional
        Number of identities (required with a scalar ``epsilons``).

    Returns
    -------
    float

    References
    ----------
    .. [1] Paper 000, section 6, Corollary 2, Eq. (11).
    """
    owner = "expected_risk_upper_bound"
    gamma, m, _ = _sorted_gammas(epsilons, alpha, n, owner)
    p = check_int(p, "p", owner, low=1)
    s = check_int(s, "s", owner, low=1)
    k = check_int(k, "k", owner, low=1)
    C = _check_constant(C, "C", owner)
    return _expected_upper(
        k, min(k, s), s, p, gamma.shape[0], _i_eff_sorted(gamma, m), _l_eff_sorted(gamma, m), C
    )


class RegularityCheck(NamedTuple):
    """Outcome of Eq. (9): ``holds`` iff ``k <= s`` and ``lhs >= rhs``."""

    holds: bool
    #: ``I_eff^(alpha)``, the left-hand side of the information condition.
    lhs: float
    #: ``C0 * gamma_max^2 * T_2s(delta)``, its right-hand side.
    rhs: float


def regularity_condition(
    epsilons,
    alpha: float,
    *,
    p: int,
    s: int,
    k: int,
    delta: float,
    C0: float = 1.0,
    n: int | None = None,
) -> RegularityCheck:
    """Evaluate the upper-bound regularity condition, Eq. (9).

    ``k <= s`` and ``I_eff^(alpha) >= C0 * gamma_max^2 * T_{2s}(delta)``.

    Parameters
    ----------
    epsilons : array_like of float
        Budgets, a non-empty 1-d array in ``(0, inf)``; scalar only with ``n``.
    alpha : float
        Contamination fraction in ``[0, 1)``.
    p : int
        Ambient dimension ``d1 * d2``, ``p >= 1``.
    s : int
        Support size, ``s >= 1``.
    k : int
        Record cap, ``k >= 1``.
    delta : float
        Failure probability in ``(0, 1]``.
    C0 : float, default 1.0
        The unspecified constant of Eq. (9), in ``(0, inf)``.
    n : int, optional
        Number of identities (required with a scalar ``epsilons``).

    Returns
    -------
    RegularityCheck
        ``(holds, lhs, rhs)`` with ``lhs = I_eff`` and
        ``rhs = C0 gamma_max^2 T_2s(delta)``; it unpacks as a 3-tuple.

    References
    ----------
    .. [1] Paper 000, section 6, Eq. (9).
    """
    owner = "regularity_condition"
    gamma, m, _ = _sorted_gammas(epsilons, alpha, n, owner)
    p = check_int(p, "p", owner, low=1)
    s = check_int(s, "s", owner, low=1)
    k = check_int(k, "k", owner, low=1)
    delta = _check_delta(delta, owner)
    C0 = _check_constant(C0, "C0", owner)
    lhs = _i_eff_sorted(gamma, m)
    gmax = float(gamma[-1])
    rhs = C0 * gmax * gmax * _t_q(2 * s, p, delta)
    return RegularityCheck(bool(k <= s and lhs >= rhs), lhs, rhs)
