"""Theorem-regime audit: which of the paper's statements apply to a configuration.

Paper 000 (section 7.3) insists that experiments be read against the regime in
which each theorem is proved. :func:`theorem_regime_audit` takes a concrete
budget vector, contamination fraction and problem size, checks the stated
hypotheses of Theorems 1, 2 and 4, Corollaries 1 and 2 and Proposition 2,
explains every failing hypothesis in words, and reports the functionals and
bound values alongside.

References
----------
.. [1] Paper 000 (see :mod:`fastldp.relations` for the citation), sections 4,
   6 and 7.3.
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass, fields

import numpy as np

from ..calibration import gamma_from_epsilon
from ..._validation import check_float, check_int, param_error
from ._bounds import (
    _check_constant,
    _check_delta,
    _contamination,
    _expected_upper,
    _ratio,
    _sampling,
    _t_q,
    _upper,
)
from ._information import (
    _budgets,
    _check_alpha,
    _corrupted_count,
    _i_eff_sorted,
    _l_eff_sorted,
    _rho_ind_sorted,
)

__all__ = ["TheoremCheck", "RegimeAudit", "theorem_regime_audit"]

_OWNER = "theorem_regime_audit"


@dataclass(frozen=True)
class TheoremCheck:
    """Whether one statement's hypotheses hold for the audited configuration.

    Attributes
    ----------
    key : str
        Short identifier: ``"theorem1"``, ``"theorem2"``, ``"corollary1"``,
        ``"theorem4"``, ``"corollary2"`` or ``"proposition2"``.
    name : str
        The statement and its equation, e.g. ``"Theorem 1, Eq. (3)"``.
    holds : bool
        True when every checkable hypothesis holds.
    reasons : tuple of str
        One sentence per failing hypothesis (empty when ``holds``).
    value : float
        The statement's bound (or, for Proposition 2, ``min{1, alpha /
        gamma_min}``) evaluated at this configuration, whether or not it holds.
    notes : tuple of str
        Remarks that do not make the statement fail (majority case, vacuous
        finite-``m`` factor, assumptions that cannot be checked).
    """

    key: str
    name: str
    holds: bool
    reasons: tuple[str, ...]
    value: float
    notes: tuple[str, ...] = ()

    def to_dict(self) -> dict:
        """Return the check as a plain dict (tuples become lists)."""
        return {
            "key": self.key,
            "name": self.name,
            "holds": self.holds,
            "reasons": list(self.reasons),
            "value": self.value,
            "notes": list(self.notes),
        }


@dataclass(frozen=True)
class RegimeAudit:
    """Functionals, bound values and hypothesis checks for one configuration.

    Built by :func:`theorem_regime_audit`; all numbers are Python floats or
    ints. ``lower_bound`` is Corollary 1's formula; ``applicable_lower_bound``
    keeps only the terms whose theorem's hypotheses hold (the contamination
    term always, the sampling term under Theorem 1). ``checks`` lists the
    statements in the paper's order; use :meth:`check` to fetch one by key.
    """

    n: int
    alpha: float
    m_alpha: int
    p: int
    s: int
    k: int
    k_bar: int
    delta: float
    C0: float
    c: float
    C: float
    eps_min: float
    eps_max: float
    gamma_min: float
    gamma_max: float
    gamma_ratio: float
    I_eff: float
    L_eff: float
    rho_ind: float
    T_2s: float
    lower_bound_sampling: float
    lower_bound_contamination: float
    lower_bound: float
    applicable_lower_bound: float
    upper_bound: float
    expected_risk_upper_bound: float
    checks: tuple[TheoremCheck, ...]

    def check(self, key: str) -> TheoremCheck:
        """Return the :class:`TheoremCheck` whose ``key`` is ``key``."""
        for item in self.checks:
            if item.key == key:
                return item
        keys = ", ".join(repr(item.key) for item in self.checks)
        raise KeyError(f"No check {key!r}; the keys are {keys}.")

    @property
    def all_hold(self) -> bool:
        """True when every audited statement's hypotheses hold."""
        return all(item.holds for item in self.checks)

    def to_dict(self) -> dict:
        """Return the audit as a plain, JSON-ready dict (``checks`` keyed by key)."""
        out = {f.name: getattr(self, f.name) for f in fields(self) if f.name != "checks"}
        out["checks"] = {item.key: item.to_dict() for item in self.checks}
        return out

    def __str__(self) -> str:
        head = [
            f"Theorem-regime audit: n = {self.n}, alpha = {self.alpha:g} "
            f"(m_alpha = {self.m_alpha}), p = {self.p}, s = {self.s}, k = {self.k} "
            f"(kbar = {self.k_bar}), delta = {self.delta:.3g}",
            f"  eps in [{self.eps_min:.4g}, {self.eps_max:.4g}], "
            f"gamma in [{self.gamma_min:.4g}, {self.gamma_max:.4g}], "
            f"gamma_max/gamma_min = {self.gamma_ratio:.4g}",
            f"  I_eff = {self.I_eff:.6g}, L_eff = {self.L_eff:.6g}, "
            f"rho_ind = {self.rho_ind:.6g}, T_2s = {self.T_2s:.6g}",
            f"  lower bound (applicable) = {self.applicable_lower_bound:.6g}, "
            f"upper bound (Eq. 10) = {self.upper_bound:.6g}",
            "",
        ]
        width = max(len(item.name) for item in self.checks)
        rows = [f"  {'statement':<{width}}  holds  {'value':>11}  why not / notes"]
        rows.append("  " + "-" * (width + 2 + 5 + 2 + 11 + 2 + 15))
        pad = " " * (2 + width + 2 + 5 + 2 + 11 + 2)
        for item in self.checks:
            lines = [f"NOT: {r}" for r in item.reasons] + [f"note: {r}" for r in item.notes]
            first = lines[0] if lines else ""
            rows.append(
                f"  {item.name:<{width}}  {'yes' if item.holds else 'no':<5}  "
                f"{item.value:>11.4g}  {first}".rstrip()
            )
            rows.extend(pad + line for line in lines[1:])
        return "\n".join(head + rows)


def _resolve_p(shape, p) -> int:
    if (shape is None) == (p is None):
        given = f"p={p!r}, shape={shape!r}"
        raise param_error("p", _OWNER, "given exactly when 'shape' is not", given, TypeError)
    if p is not None:
        return check_int(p, "p", _OWNER, low=1)
    expected = "a pair of ints (d1, d2), each in [1, inf)"
    try:
        d1, d2 = shape
    except (TypeError, ValueError):
        raise param_error("shape", _OWNER, expected, shape, TypeError) from None
    for d in (d1, d2):
        if isinstance(d, (bool, np.bool_)) or not isinstance(d, numbers.Integral):
            raise param_error("shape", _OWNER, expected, shape, TypeError)
        if d < 1:
            raise param_error("shape", _OWNER, expected, shape)
    return int(d1) * int(d2)


def _num(x: float) -> str:
    """Short ``%g`` form, or the exact ``repr`` when ``%g`` would round ``x``."""
    short = f"{x:g}"
    return short if float(short) == x else repr(float(x))


def _information_reason(i_eff: float, rhs: float, note: str = "") -> str:
    return f"I_eff = {i_eff:.6g} < C0*gamma_max^2*T_2s = {rhs:.6g}{note}"


def theorem_regime_audit(
    epsilons,
    alpha: float,
    *,
    shape=None,
    p: int | None = None,
    s: int,
    k: int,
    delta: float | None = None,
    C0: float = 1.0,
    c: float = 1.0,
    C: float = 1.0,
    C_gamma: float | None = None,
    n: int | None = None,
) -> RegimeAudit:
    """Check which of the paper's statements apply to a configuration.

    For each of Theorem 1 (Eq. (3)), Theorem 2 (Eq. (4)), Corollary 1,
    Theorem 4 with its regularity condition Eq. (9) (Eq. (10)), Corollary 2
    (Eq. (11)) and Proposition 2, the audit records whether the stated
    hypotheses hold and, for each one that does not, a sentence such as
    ``"p = 100 < 2s = 256"`` or ``"max_i eps_i = 2 > 1: outside the
    strong-privacy regime of Theorem 1"``.

    Hypotheses checked:

    * Theorem 1: ``p >= 2s``, ``alpha < 1/2``, ``max_i eps_i <= 1``
      (``kbar >= 1`` always holds here).
    * Theorem 2: none (it is unrestricted in the budgets); notes flag the
      majority case ``2 m_alpha >= n`` and a vanishing factor
      ``(1 - 4e^{-m/6})_+`` (``m_alpha <= 8``).
    * Corollary 1: its sampling term needs Theorem 1's hypotheses.
    * Theorem 4: Eq. (9) (``k <= s``, ``I_eff >= C0 gamma_max^2 T_2s(delta)``)
      and ``alpha < 1/2``. Fixed-before-codebook corruption is assumed.
    * Corollary 2: as Theorem 4, with ``delta = n^-2``.
    * Proposition 2: ``alpha < 1/2`` and, when ``C_gamma`` is given,
      ``gamma_max / gamma_min <= C_gamma``.

    Parameters
    ----------
    epsilons : array_like of float
        Budgets, a non-empty 1-d array in ``(0, inf)``; scalar only with ``n``.
    alpha : float
        Contamination fraction in ``[0, 1)``.
    shape : tuple of int, optional
        ``(d1, d2)``; ``p = d1 * d2``. Give exactly one of ``shape`` and ``p``.
    p : int, optional
        Ambient dimension, ``p >= 1``.
    s : int
        Support size, ``s >= 1``.
    k : int
        Record cap, ``k >= 1``.
    delta : float, optional
        Failure probability of Theorem 4 in ``(0, 1]``; default ``n^-2``.
    C0 : float, default 1.0
        Constant of Eq. (9).
    c : float, default 1.0
        Constant of Eq. (3).
    C : float, default 1.0
        Constant of Eqs. (10) and (11).
    C_gamma : float, optional
        Budget-ratio bound of Proposition 2's regular class, ``>= 1``.
    n : int, optional
        Number of identities (required with a scalar ``epsilons``).

    Returns
    -------
    RegimeAudit
        Printable (``str``) and convertible (``to_dict``).

    References
    ----------
    .. [1] Paper 000, Theorems 1, 2, 4, Corollaries 1, 2, Proposition 2,
       Eqs. (3), (4), (9), (10), (11); section 7.3 (theorem-regime audit).
    """
    alpha = _check_alpha(alpha, _OWNER)
    eps = _budgets(epsilons, n, _OWNER)
    p = _resolve_p(shape, p)
    s = check_int(s, "s", _OWNER, low=1)
    k = check_int(k, "k", _OWNER, low=1)
    C0 = _check_constant(C0, "C0", _OWNER)
    c = _check_constant(c, "c", _OWNER)
    C = _check_constant(C, "C", _OWNER)
    if C_gamma is not None:
        C_gamma = check_float(C_gamma, "C_gamma", _OWNER, low=1, high=math.inf, low_open=False)

    n = int(eps.shape[0])
    delta_cor2 = 1.0 / (n * n)
    delta = delta_cor2 if delta is None else _check_delta(delta, _OWNER)
    m = _corrupted_count(n, alpha)
    kbar = min(k, s)
    gamma = np.sort(gamma_from_epsilon(eps))
    gmin, gmax = float(gamma[0]), float(gamma[-1])
    eps_max = float(eps.max())
    i_eff = _i_eff_sorted(gamma, m)
    l_eff = _l_eff_sorted(gamma, m)
    rho = _rho_ind_sorted(gamma, m)
    t_2s = _t_q(2 * s, p, delta)
    rhs = C0 * gmax * gmax * t_2s
    rhs_cor2 = C0 * gmax * gmax * _t_q(2 * s, p, delta_cor2)

    lb_sampling = _sampling(kbar, s, i_eff, c)
    lb_contamination = _contamination(kbar, n, m, rho)
    lb = min(float(kbar), max(lb_sampling, lb_contamination))
    ub = _upper(k, s, p, delta, i_eff, l_eff, C)
    ub_expected = _expected_upper(k, kbar, s, p, n, i_eff, l_eff, C)

    alpha_reason = f"alpha = {_num(alpha)} >= 1/2"

    # Theorem 1 -----------------------------------------------------------
    t1 = []
    if p < 2 * s:
        t1.append(f"p = {p} < 2s = {2 * s}")
    if not alpha < 0.5:
        t1.append(alpha_reason)
    if eps_max > 1.0:
        t1.append(
            f"max_i eps_i = {_num(eps_max)} > 1: outside the strong-privacy regime of Theorem 1"
        )
    theorem1 = TheoremCheck(
        "theorem1", "Theorem 1, Eq. (3)", not t1, tuple(t1), lb_sampling,
        (f"universal constant c = {c:g} is a placeholder",),
    )

    # Theorem 2 -----------------------------------------------------------
    t2_notes = []
    if 2 * m >= n:
        t2_notes.append(
            f"2*m_alpha = {2 * m} >= n = {n}: majority case, R* >= kbar/4 = {kbar / 4:g}"
        )
    elif m <= 8:
        t2_notes.append(
            f"m_alpha = {m} <= 8: the factor (1 - 4e^(-m/6))_+ is 0, so Eq. (4) is vacuous"
        )
    if gmin != gmax:
        t2_notes.append("heterogeneous rho_ind is fastldp's reconstruction of Appendix C")
    theorem2 = TheoremCheck(
        "theorem2", "Theorem 2, Eq. (4)", True, (), lb_contamination, tuple(t2_notes)
    )

    # Corollary 1 ---------------------------------------------------------
    c1 = [f"sampling term needs Theorem 1: {r}" for r in t1]
    corollary1 = TheoremCheck(
        "corollary1", "Corollary 1", not c1, tuple(c1), lb,
        ("only the contamination term (Theorem 2) applies",) if c1 else (),
    )

    # Theorem 4 and Corollary 2 -------------------------------------------
    def upper_reasons(rhs_value: float, note: str) -> list[str]:
        reasons = []
        if k > s:
            reasons.append(f"k = {k} > s = {s}")
        if not i_eff >= rhs_value:
            reasons.append(_information_reason(i_eff, rhs_value, note))
        if not alpha < 0.5:
            reasons.append(alpha_reason)
        return reasons

    unchecked = "corruption fixed before the public codebook is assumed, not checked"
    t4 = upper_reasons(rhs, "")
    theorem4 = TheoremCheck(
        "theorem4", "Theorem 4 / Eq. (9), Eq. (10)", not t4, tuple(t4), ub, (unchecked,)
    )
    c2 = upper_reasons(rhs_cor2, f" (delta = n^-2 = {delta_cor2:.3g})")
    corollary2 = TheoremCheck(
        "corollary2", "Corollary 2, Eq. (11)", not c2, tuple(c2), ub_expected, (unchecked,)
    )

    # Proposition 2 -------------------------------------------------------
    ratio = _ratio(gmax, gmin)
    p2 = []
    if not alpha < 0.5:
        p2.append(alpha_reason + " (needs alpha <= alpha_0 < 1/2)")
    if C_gamma is not None and not ratio <= C_gamma:
        p2.append(f"gamma_max/gamma_min = {ratio:.6g} > C_gamma = {_num(C_gamma)}")
    scale = min(1.0, _ratio(alpha, gmin))
    p2_notes = [f"gamma_max/gamma_min = {ratio:.6g}"]
    if scale > 0.0:
        p2_notes.append(
            f"L_eff / min(1, alpha/gamma_min) = {l_eff / scale:.4g}, "
            f"rho_ind / min(1, alpha/gamma_min) = {rho / scale:.4g}"
        )
    proposition2 = TheoremCheck(
        "proposition2", "Proposition 2", not p2, tuple(p2), scale, tuple(p2_notes)
    )

    return RegimeAudit(
        n=n,
        alpha=alpha,
        m_alpha=m,
        p=p,
        s=s,
        k=k,
        k_bar=kbar,
        delta=delta,
        C0=C0,
        c=c,
        C=C,
        eps_min=float(eps.min()),
        eps_max=eps_max,
        gamma_min=gmin,
        gamma_max=gmax,
        gamma_ratio=ratio,
        I_eff=i_eff,
        L_eff=l_eff,
        rho_ind=rho,
        T_2s=t_2s,
        lower_bound_sampling=lb_sampling,
        lower_bound_contamination=lb_contamination,
        lower_bound=lb,
        applicable_lower_bound=lb if theorem1.holds else min(float(kbar), lb_contamination),
        upper_bound=ub,
        expected_risk_upper_bound=ub_expected,
        checks=(theorem1, theorem2, corollary1, theorem4, corollary2, proposition2),
    )
