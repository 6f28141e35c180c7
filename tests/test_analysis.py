"""Tests for fastldp.relations.analysis: functionals, bounds and the theorem-regime audit.

Reference values are either exact rationals, closed forms written out here
independently of the package (Proposition 1, Theorem 2's homogeneous radius,
Eqs. (3)-(11)), or brute-force enumeration over all subsets / sign patterns.
"""

from __future__ import annotations

import dataclasses
import itertools
import json
import math
from fractions import Fraction

import numpy as np
import pytest

from fastldp.relations.analysis import (
    I_eff,
    L_eff,
    RegimeAudit,
    T_q,
    a_m,
    c_k,
    corrupted_count,
    expected_risk_upper_bound,
    gamma_from_epsilon,
    kappa_k,
    lower_bound,
    lower_bound_contamination,
    lower_bound_sampling,
    regularity_condition,
    rho_ind,
    rho_ind_homogeneous,
    theorem_regime_audit,
    upper_bound,
)

REL = 1e-12


def g(eps: float) -> float:
    return math.tanh(eps / 2.0)


# --------------------------------------------------------------------------
# calibration constants (re-exported)
# --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "m, expected",
    [(1, Fraction(1)), (2, Fraction(1, 2)), (3, Fraction(1, 2)),
     (4, Fraction(3, 8)), (5, Fraction(3, 8)), (6, Fraction(5, 16))],
)
def test_a_m_exact_small_values(m, expected):
    assert a_m(m) == float(expected)


@pytest.mark.parametrize("m", range(1, 15))
def test_a_m_matches_enumeration_of_all_sign_patterns(m):
    total = sum(abs(sum(signs)) for signs in itertools.product((-1, 1), repeat=m))
    # float(Fraction) is correctly rounded, as is a_m, so equality is exact.
    assert a_m(m) == float(Fraction(total, m * 2**m))


@pytest.mark.parametrize("k", range(1, 65))
def test_kappa_k_in_range_and_attained_at_k(k):
    value = kappa_k(k)
    assert 2**-0.5 <= value <= 1.0
    assert value == pytest.approx(math.sqrt(k) * a_m(k), rel=REL)


@pytest.mark.parametrize("k", range(1, 31))
def test_c_k_is_one_at_full_cardinality_and_at_most_one(k):
    assert c_k(k, k) == 1.0
    assert all(0.0 < c_k(m, k) <= 1.0 for m in range(1, k + 1))


def test_gamma_from_epsilon_is_tanh_half():
    eps = np.array([0.1, 1.0, 2.0, 30.0])
    np.testing.assert_allclose(gamma_from_epsilon(eps), np.tanh(eps / 2), rtol=0, atol=0)


# --------------------------------------------------------------------------
# corrupted_count
# --------------------------------------------------------------------------


@pytest.mark.parametrize("n", [8, 20, 100, 1000])
def test_corrupted_count_reads_alpha_as_written_decimal(n):
    got = [corrupted_count(n, a / n) for a in range(n)]
    assert got == list(range(n))


def test_corrupted_count_avoids_float_product_rounding():
    assert math.floor(0.29 * 100) == 28  # the float product loses one identity
    assert corrupted_count(100, 0.29) == 29
    assert math.floor(0.58 * 100) == 57
    assert corrupted_count(100, 0.58) == 58


def test_corrupted_count_edges():
    assert corrupted_count(100, 0.29) == 29
    assert corrupted_count(10, 0.0) == 0
    assert corrupted_count(3, 1 / 3) == 0  # the double 1/3 is below one third
    assert corrupted_count(10, 0.9999999999999999) == 9
    assert corrupted_count(10**18, 0.5) == 5 * 10**17
    assert corrupted_count(np.int64(7), np.float64(0.5)) == 3


# --------------------------------------------------------------------------
# I_eff, L_eff (Eqs. (1)-(2), Proposition 1)
# --------------------------------------------------------------------------

HOMOGENEOUS = [
    (n, eps, alpha)
    for n in (1, 2, 7, 100, 1001)
    for eps in (0.05, 0.75, 1.0, 3.0)
    for alpha in (0.0, 0.1, 0.29, 0.49, 0.5, 0.9)
]


@pytest.mark.parametrize("n, eps, alpha", HOMOGENEOUS)
def test_proposition_1_homogeneous_forms(n, eps, alpha):
    m = math.floor(Fraction(repr(alpha)) * n)
    gamma = g(eps)
    budgets = np.full(n, eps)
    assert I_eff(budgets, alpha) == pytest.approx((n - m) * gamma**2, rel=REL)
    assert L_eff(budgets, alpha) == pytest.approx(m / ((n - m) * gamma), rel=REL)
    # scalar + n is the same configuration
    assert I_eff(eps, alpha, n=n) == I_eff(budgets, alpha)
    assert L_eff(eps, alpha, n=n) == L_eff(budgets, alpha)


def _brute_force(gammas, m):
    n = len(gammas)
    best_l, worst_i = 0.0, math.inf
    for size in range(m + 1):
        for b in itertools.combinations(range(n), size):
            honest = [gammas[i] ** 2 for i in range(n) if i not in b]
            num = sum(gammas[i] for i in b)
            best_l = max(best_l, num / sum(honest))
            worst_i = min(worst_i, sum(honest))
    return best_l, worst_i


def test_L_eff_and_I_eff_match_brute_force_over_all_subsets():
    rng = np.random.default_rng(20240611)
    checked_m = set()
    for _ in range(300):
        n = int(rng.integers(1, 9))
        eps = rng.uniform(0.02, 4.0, size=n) * rng.choice([1.0, 0.1], size=n)
        alpha = float(rng.uniform(0.0, 1.0))
        m = math.floor(Fraction(repr(alpha)) * n)
        checked_m.add(m)
        best_l, worst_i = _brute_force(list(np.tanh(eps / 2)), m)
        assert L_eff(eps, alpha) == pytest.approx(best_l, rel=REL)
        assert I_eff(eps, alpha) == pytest.approx(worst_i, rel=REL)
        perm = rng.permutation(n)
        assert L_eff(eps[perm], alpha) == pytest.approx(best_l, rel=REL)
    assert {0, 1, 2, 3, 4, 5} <= checked_m


def test_L_eff_hand_computed_heterogeneous():
    eps = np.array([0.2, 1.0, 2.0, 0.5])
    ga = np.tanh(eps / 2)
    # alpha = 0.5, n = 4 -> m = 2: the top two amplitudes (eps 2 and 1) are corrupted
    expected = (ga[2] + ga[1]) / (ga[0] ** 2 + ga[3] ** 2)
    assert L_eff(eps, 0.5) == pytest.approx(expected, rel=REL)
    assert I_eff(eps, 0.5) == pytest.approx(ga[0] ** 2 + ga[3] ** 2, rel=REL)


def test_L_eff_zero_without_corruption_and_inf_without_honest_information():
    assert L_eff([0.3, 0.9, 2.0], 0.3) == 0.0  # floor(0.9) = 0
    # amplitudes ~5e-301 square to 0 in float64: no honest information left
    tiny = [1e-300, 1e-300, 1.0]
    assert I_eff(tiny, 0.34) == 0.0
    assert L_eff(tiny, 0.34) == math.inf


# --------------------------------------------------------------------------
# rho_ind (Theorem 2)
# --------------------------------------------------------------------------


def test_rho_ind_homogeneous_hand_values():
    # n = 10, alpha = 0.2 -> m = 2; 2 / (18 tanh(1/2))
    assert rho_ind_homogeneous(10, 1.0, 0.2) == pytest.approx(0.24043926819, rel=1e-10)
    # m = 4, gamma ~ 0.05: 4 / (16 * 0.05) ~ 5 -> capped at 1/2
    assert rho_ind_homogeneous(10, 0.1, 0.4) == 0.5
    assert rho_ind_homogeneous(10, 1.0, 0.05) == 0.0


@pytest.mark.parametrize("n, eps, alpha", HOMOGENEOUS)
def test_rho_ind_reduces_to_homogeneous_closed_form(n, eps, alpha):
    m = math.floor(Fraction(repr(alpha)) * n)
    closed = 0.0 if m == 0 else min(0.5, m / ((2 * n - m) * g(eps)))
    assert rho_ind_homogeneous(n, eps, alpha) == pytest.approx(closed, rel=REL)
    assert rho_ind(np.full(n, eps), alpha) == pytest.approx(closed, rel=REL, abs=0)
    assert rho_ind(eps, alpha, n=n) == pytest.approx(closed, rel=REL, abs=0)


def test_homogeneous_grid_exercises_both_branches_of_the_cap():
    values = [rho_ind_homogeneous(n, e, a) for n, e, a in HOMOGENEOUS]
    assert any(v == 0.5 for v in values)
    assert any(0.0 < v < 0.5 for v in values)


@pytest.mark.parametrize("a_eps, b_eps", [(0.7, 2.0), (0.65, 1.5), (1.0, 1.0), (0.8, 5.0)])
def test_rho_ind_two_group_quadratic(a_eps, b_eps):
    # n = 4, gammas (a, a, b, b), m = 1: 2a r/(1+a r) + 2b r/(1+b r) = 1/2
    # <=> 7ab r^2 + 3(a+b) r - 1 = 0
    a, b = g(a_eps), g(b_eps)
    root = (-3 * (a + b) + math.sqrt(9 * (a + b) ** 2 + 28 * a * b)) / (14 * a * b)
    assert root < 0.5
    assert rho_ind([a_eps, b_eps, a_eps, b_eps], 0.25) == pytest.approx(root, rel=1e-13)


def test_rho_ind_heterogeneous_properties():
    rng = np.random.default_rng(7)
    for _ in range(200):
        n = int(rng.integers(2, 60))
        eps = rng.uniform(0.01, 3.0, size=n)
        alpha = float(rng.uniform(0.0, 0.99))
        m = corrupted_count(n, alpha)
        ga = np.tanh(eps / 2)
        value = rho_ind(eps, alpha)
        assert 0.0 <= value <= 0.5
        # sandwiched by the homogeneous radii at gamma_max and gamma_min
        lo = rho_ind_homogeneous(n, float(eps.max()), alpha)
        hi = rho_ind_homogeneous(n, float(eps.min()), alpha)
        assert lo * (1 - 1e-12) <= value <= hi * (1 + 1e-12)
        if m and value < 0.5:  # interior: the overlap equation holds at the root
            lhs = float(np.sum(ga * value / (1 + ga * value)))
            assert lhs == pytest.approx(m / 2, rel=1e-11)
            assert value >= m / (2 * ga.sum()) * (1 - 1e-12)
        # raising one budget can only shrink the radius
        bigger = eps.copy()
        bigger[0] *= 2
        assert rho_ind(bigger, alpha) <= value * (1 + 1e-12)


# --------------------------------------------------------------------------
# bounds
# --------------------------------------------------------------------------


def test_T_q_hand_value():
    assert T_q(4, 100, 0.5) == pytest.approx(4 * math.log(9 * math.e * 25) + math.log(16), rel=REL)
    assert T_q(1, 1, 1.0) == pytest.approx(math.log(9 * math.e) + math.log(8), rel=REL)


def test_lower_bound_sampling_hand_values():
    gamma2 = g(1.0) ** 2
    # n = 100, alpha = 0.1 -> m = 10, I = 90 gamma^2; s = 4, k = 8 -> kbar = 4
    expected = 4 * 4 / (90 * gamma2)
    assert expected < 4
    assert lower_bound_sampling(1.0, 0.1, n=100, s=4, k=8) == pytest.approx(expected, rel=REL)
    assert lower_bound_sampling(1.0, 0.1, n=100, s=4, k=8, c=2.5) == pytest.approx(
        2.5 * expected, rel=REL
    )
    # little information: the kbar branch of the minimum
    assert lower_bound_sampling(0.01, 0.0, n=10, s=4, k=2) == 2.0


def test_lower_bound_contamination_hand_values_and_majority_edge():
    # n = 100, alpha = 0.2 -> m = 20, rho = 20 / (180 gamma) < 1/2
    rho = 20 / (180 * g(1.0))
    expected = 4 * rho**2 / 16 * (1 - 4 * math.exp(-20 / 6))
    assert lower_bound_contamination(1.0, 0.2, n=100, s=4, k=8) == pytest.approx(expected, rel=REL)
    # m <= 8: the finite-m factor vanishes
    assert lower_bound_contamination(1.0, 0.08, n=100, s=4, k=8) == 0.0
    # majority case exactly at 2m = n, and just below it
    assert lower_bound_contamination(1.0, 0.5, n=40, s=4, k=8) == 1.0
    below = lower_bound_contamination(1.0, 0.4999, n=40, s=4, k=8)  # m = 19
    rho19 = min(0.5, 19 / (61 * g(1.0)))
    assert below == pytest.approx(4 * rho19**2 / 16 * (1 - 4 * math.exp(-19 / 6)), rel=REL)
    assert below < 1.0


def test_lower_bound_is_capped_maximum():
    s, k, n = 4, 8, 100
    samp = lower_bound_sampling(1.0, 0.2, n=n, s=s, k=k)
    cont = lower_bound_contamination(1.0, 0.2, n=n, s=s, k=k)
    assert lower_bound(1.0, 0.2, n=n, s=s, k=k) == max(samp, cont)
    assert lower_bound(1.0, 0.2, n=n, s=s, k=k, c=100.0) == 4.0  # capped at kbar
    assert lower_bound(1.0, 0.5, n=n, s=s, k=k, c=1e-6) == 1.0  # majority term wins


def test_upper_bound_hand_value():
    n, alpha, p, s, k, delta = 1000, 0.1, 4096, 16, 4, 0.01
    gamma = g(1.0)
    info, lev = 900 * gamma**2, 100 / (900 * gamma)
    search = 16 * math.log(9 * math.e * 4096 / 16) + math.log(800)
    expected = 4 * (search / info + lev**2)
    got = upper_bound(1.0, alpha, n=n, p=p, s=s, k=k, delta=delta)
    assert got == pytest.approx(expected, rel=REL)
    assert upper_bound(1.0, alpha, n=n, p=p, s=s, k=k, delta=delta, C=3.0) == pytest.approx(
        3 * expected, rel=REL
    )
    assert upper_bound([1e-300, 1e-300, 1.0], 0.34, p=p, s=s, k=k, delta=delta) == math.inf


def test_expected_risk_upper_bound_hand_values():
    n, p, s, k = 100_000, 4096, 16, 4
    gamma, m = g(1.0), 10_000
    info, lev = (n - m) * gamma**2, m / ((n - m) * gamma)
    inner = 4 * (16 * math.log(9 * math.e * 4096 * n) / info + lev**2)
    assert inner < 4
    got = expected_risk_upper_bound(1.0, 0.1, n=n, p=p, s=s, k=k)
    assert got == pytest.approx(inner + 2 * 4 / n**2, rel=REL)
    # information-starved: C * kbar + 2 kbar / n^2 with kbar = min(8, 2) = 2
    got = expected_risk_upper_bound(0.01, 0.0, n=10, p=p, s=2, k=8, C=2.0)
    assert got == pytest.approx(2.0 * 2 + 2 * 2 / 100, rel=REL)


def test_regularity_condition_at_its_edge():
    eps = np.array([0.5, 0.75, 1.0] * 1000)
    alpha, p, s, k, delta = 0.1, 4096, 8, 4, 1e-3
    lhs = I_eff(eps, alpha)
    t2s = T_q(2 * s, p, delta)
    edge = lhs / (g(1.0) ** 2 * t2s)
    holds, got_lhs, rhs = regularity_condition(
        eps, alpha, p=p, s=s, k=k, delta=delta, C0=edge * (1 - 1e-9)
    )
    assert holds and got_lhs == lhs and rhs == pytest.approx(lhs, rel=1e-8)
    check = regularity_condition(eps, alpha, p=p, s=s, k=k, delta=delta, C0=edge * (1 + 1e-9))
    assert not check.holds and check.rhs > check.lhs
    # k > s fails regardless of the information
    assert not regularity_condition(eps, alpha, p=p, s=s, k=s + 1, delta=delta, C0=1e-9).holds


# --------------------------------------------------------------------------
# theorem-regime audit
# --------------------------------------------------------------------------

GOOD = dict(p=4096, s=128, k=8)


def _good_eps(n=100_000, eps=0.75):
    return np.full(n, eps)


def test_audit_all_hold_in_the_paper_regime():
    audit = theorem_regime_audit(_good_eps(), 0.1, **GOOD)
    assert isinstance(audit, RegimeAudit)
    assert audit.all_hold, str(audit)
    assert all(not c.reasons for c in audit.checks)
    assert audit.m_alpha == 10_000 and audit.k_bar == 8 and audit.delta == 1e-10
    assert audit.I_eff == pytest.approx(90_000 * g(0.75) ** 2, rel=REL)
    assert audit.L_eff == pytest.approx(10_000 / (90_000 * g(0.75)), rel=REL)
    assert audit.rho_ind == pytest.approx(10_000 / (190_000 * g(0.75)), rel=REL)
    assert audit.lower_bound_sampling == lower_bound_sampling(_good_eps(), 0.1, s=128, k=8)
    assert audit.upper_bound == upper_bound(_good_eps(), 0.1, delta=1e-10, **GOOD)
    assert audit.applicable_lower_bound == audit.lower_bound


def test_audit_shape_equals_p():
    a = theorem_regime_audit(_good_eps(1000), 0.1, shape=(64, 64), s=128, k=8)
    b = theorem_regime_audit(_good_eps(1000), 0.1, **GOOD)
    assert a == b


def _reasons(audit, key):
    return audit.check(key).reasons


def test_audit_reports_large_budget():
    eps = _good_eps()
    eps[3] = 2.0
    audit = theorem_regime_audit(eps, 0.1, **GOOD)
    msg = "max_i eps_i = 2 > 1: outside the strong-privacy regime of Theorem 1"
    assert _reasons(audit, "theorem1") == (msg,)
    assert _reasons(audit, "corollary1") == ("sampling term needs Theorem 1: " + msg,)
    assert audit.check("theorem4").holds and audit.check("theorem2").holds
    assert audit.applicable_lower_bound == audit.lower_bound_contamination
    assert msg in str(audit)


def test_audit_theorem1_conditions_at_their_edges():
    eps = _good_eps(1000)
    eps[0] = 1.0
    assert theorem_regime_audit(eps, 0.1, p=256, s=128, k=8).check("theorem1").holds
    eps[0] = np.nextafter(1.0, 2.0)
    (reason,) = _reasons(theorem_regime_audit(eps, 0.1, p=256, s=128, k=8), "theorem1")
    assert reason.startswith("max_i eps_i = 1.0000000000000002 > 1: outside")
    assert _reasons(theorem_regime_audit(_good_eps(1000), 0.1, p=255, s=128, k=8), "theorem1") == (
        "p = 255 < 2s = 256",
    )
    assert not theorem_regime_audit(_good_eps(1000), 0.5, **GOOD).check("theorem1").holds
    assert theorem_regime_audit(_good_eps(1000), 0.4999, **GOOD).check("theorem1").holds


def test_audit_reports_small_ambient_dimension():
    audit = theorem_regime_audit(_good_eps(), 0.1, p=100, s=128, k=8)
    assert _reasons(audit, "theorem1") == ("p = 100 < 2s = 256",)
    assert audit.check("theorem4").holds


def test_audit_reports_majority_contamination():
    audit = theorem_regime_audit(_good_eps(1000), 0.6, **GOOD)
    for key in ("theorem1", "theorem4", "corollary2"):
        assert "alpha = 0.6 >= 1/2" in _reasons(audit, key)
    assert _reasons(audit, "proposition2") == (
        "alpha = 0.6 >= 1/2 (needs alpha <= alpha_0 < 1/2)",
    )
    assert audit.check("theorem2").holds
    assert any("majority case" in note for note in audit.check("theorem2").notes)
    assert audit.lower_bound_contamination == 2.0  # kbar / 4


def test_audit_reports_cap_above_sparsity():
    audit = theorem_regime_audit(_good_eps(), 0.1, p=4096, s=4, k=8)
    assert _reasons(audit, "theorem4") == ("k = 8 > s = 4",)
    assert _reasons(audit, "corollary2") == ("k = 8 > s = 4",)
    assert audit.check("theorem1").holds


def test_audit_reports_insufficient_information():
    eps, alpha = _good_eps(1000), 0.1
    audit = theorem_regime_audit(eps, alpha, delta=1e-6, **GOOD)
    holds, lhs, rhs = regularity_condition(eps, alpha, delta=1e-6, **GOOD)
    assert not holds and lhs < rhs
    assert _reasons(audit, "theorem4") == (
        f"I_eff = {lhs:.6g} < C0*gamma_max^2*T_2s = {rhs:.6g}",
    )
    (reason,) = _reasons(audit, "corollary2")
    assert reason.startswith(f"I_eff = {lhs:.6g} < C0*gamma_max^2*T_2s = ")
    assert reason.endswith("(delta = n^-2 = 1e-06)")
    assert audit.check("theorem1").holds


def test_audit_reports_budget_ratio_and_vanishing_factor():
    eps = np.r_[np.full(50, 0.1), np.full(50, 1.0)]
    audit = theorem_regime_audit(eps, 0.05, C_gamma=2.0, **GOOD)
    ratio = g(1.0) / g(0.1)
    assert _reasons(audit, "proposition2") == (f"gamma_max/gamma_min = {ratio:.6g} > C_gamma = 2",)
    assert theorem_regime_audit(eps, 0.05, C_gamma=10.0, **GOOD).check("proposition2").holds
    notes = audit.check("theorem2").notes
    assert any("m_alpha = 5 <= 8" in note for note in notes)
    assert any("reconstruction" in note for note in notes)
    assert audit.lower_bound_contamination == 0.0


def test_audit_to_dict_str_and_frozen():
    eps = _good_eps(1000)
    eps[0] = 2.0
    audit = theorem_regime_audit(eps, 0.6, p=100, s=128, k=256)
    data = audit.to_dict()
    json.dumps(data)
    assert set(data["checks"]) == {
        "theorem1", "theorem2", "corollary1", "theorem4", "corollary2", "proposition2"
    }
    assert data["m_alpha"] == 600 and data["checks"]["theorem1"]["holds"] is False
    text = str(audit)
    for check in audit.checks:
        assert check.name in text
        for reason in check.reasons:
            assert reason in text
    with pytest.raises(dataclasses.FrozenInstanceError):
        audit.n = 3
    with pytest.raises(KeyError, match="theorem9"):
        audit.check("theorem9")


# --------------------------------------------------------------------------
# parameter validation
# --------------------------------------------------------------------------

FUNCS = {
    "I_eff": lambda e, a, **kw: I_eff(e, a, **kw),
    "L_eff": lambda e, a, **kw: L_eff(e, a, **kw),
    "rho_ind": lambda e, a, **kw: rho_ind(e, a, **kw),
    "lower_bound_sampling": lambda e, a, **kw: lower_bound_sampling(e, a, s=4, k=2, **kw),
    "lower_bound_contamination": lambda e, a, **kw: lower_bound_contamination(e, a, s=4, k=2, **kw),
    "lower_bound": lambda e, a, **kw: lower_bound(e, a, s=4, k=2, **kw),
    "upper_bound": lambda e, a, **kw: upper_bound(e, a, p=64, s=4, k=2, delta=0.1, **kw),
    "expected_risk_upper_bound": lambda e, a, **kw: expected_risk_upper_bound(
        e, a, p=64, s=4, k=2, **kw
    ),
    "regularity_condition": lambda e, a, **kw: regularity_condition(
        e, a, p=64, s=4, k=2, delta=0.1, **kw
    ),
    "theorem_regime_audit": lambda e, a, **kw: theorem_regime_audit(e, a, p=64, s=4, k=2, **kw),
}

BAD_ALPHA = [
    (float("nan"), ValueError, r"Got nan instead"),
    (1.0, ValueError, r"Got 1\.0 instead"),
    (-0.1, ValueError, r"Got -0\.1 instead"),
    ("0.1", TypeError, r"Got '0\.1' instead"),
    (None, TypeError, r"Got None instead"),
]


@pytest.mark.parametrize("owner", FUNCS)
@pytest.mark.parametrize("alpha, exc, got", BAD_ALPHA)
def test_bad_alpha_names_the_parameter(owner, alpha, exc, got):
    expected = rf"'alpha' parameter of {owner} must be a float in \[0, 1\)\. {got}"
    with pytest.raises(exc, match=expected):
        FUNCS[owner]([0.5, 1.0], alpha)


BAD_EPS = [
    ([0.5, -1.0], ValueError, r"Got (np\.float64\()?-1\.0\)? at index 1"),
    ([0.5, 0.0], ValueError, r"Got (np\.float64\()?0\.0\)? at index 1"),
    ([np.inf, 0.5], ValueError, r"Got (np\.float64\()?inf\)? at index 0"),
    ([0.5, np.nan], ValueError, r"Got (np\.float64\()?nan\)? at index 1"),
    ([], ValueError, r"non-empty"),
    ("abc", TypeError, r"Got 'abc'"),
    ([[0.5, 1.0]], ValueError, r"1-d array"),
]


@pytest.mark.parametrize("owner", FUNCS)
@pytest.mark.parametrize("eps, exc, got", BAD_EPS)
def test_bad_epsilons_names_the_parameter(owner, eps, exc, got):
    with pytest.raises(exc, match=rf"'epsilons' parameter of {owner} .*{got}"):
        FUNCS[owner](eps, 0.1)


@pytest.mark.parametrize("owner", FUNCS)
def test_scalar_epsilon_requires_n(owner):
    with pytest.raises(TypeError, match=rf"'n' parameter of {owner} .*when 'epsilons' is a scalar"):
        FUNCS[owner](0.5, 0.1)
    with pytest.raises(ValueError, match=rf"'epsilons' parameter of {owner} .*length 3"):
        FUNCS[owner]([0.5, 1.0], 0.1, n=3)
    with pytest.raises(ValueError, match=rf"'n' parameter of {owner} must be an int in \[1, inf\)"):
        FUNCS[owner](0.5, 0.1, n=0)


@pytest.mark.parametrize(
    "call, exc, pattern",
    [
        (lambda: corrupted_count(0, 0.1), ValueError, r"'n' parameter of corrupted_count"),
        (lambda: corrupted_count(2.0, 0.1), TypeError, r"'n' parameter of corrupted_count"),
        (lambda: corrupted_count(10, float("nan")), ValueError,
         r"'alpha' parameter of corrupted_count"),
        (lambda: rho_ind_homogeneous(10, -1.0, 0.1), ValueError,
         r"'epsilon' parameter of rho_ind_homogeneous must be a float in \(0, inf\)"),
        (lambda: rho_ind_homogeneous(10, math.inf, 0.1), ValueError, r"'epsilon' parameter"),
        (lambda: T_q(0, 10, 0.1), ValueError, r"'q' parameter of T_q"),
        (lambda: T_q(2, 10, 0.0), ValueError,
         r"'delta' parameter of T_q must be a float in \(0, 1\]"),
        (lambda: T_q(2, 10, 1.5), ValueError, r"'delta' parameter of T_q"),
        (lambda: T_q(2, True, 0.1), TypeError, r"'p' parameter of T_q"),
        (lambda: lower_bound_sampling([1.0], 0.0, s=0, k=2), ValueError,
         r"'s' parameter of lower_bound_sampling"),
        (lambda: lower_bound_sampling([1.0], 0.0, s=4, k=2.5), TypeError,
         r"'k' parameter of lower_bound_sampling"),
        (lambda: lower_bound_sampling([1.0], 0.0, s=4, k=2, c=-1.0), ValueError,
         r"'c' parameter of lower_bound_sampling"),
        (lambda: lower_bound([1.0], 0.0, s=4, k=2, c=float("nan")), ValueError,
         r"'c' parameter of lower_bound"),
        (lambda: upper_bound([1.0], 0.0, p=0, s=4, k=2, delta=0.1), ValueError,
         r"'p' parameter of upper_bound"),
        (lambda: upper_bound([1.0], 0.0, p=64, s=4, k=2, delta=float("nan")), ValueError,
         r"'delta' parameter of upper_bound"),
        (lambda: upper_bound([1.0], 0.0, p=64, s=4, k=2, delta=0.1, C=0.0), ValueError,
         r"'C' parameter of upper_bound"),
        (lambda: expected_risk_upper_bound([1.0], 0.0, p=64, s=4, k=2, C=math.inf), ValueError,
         r"'C' parameter of expected_risk_upper_bound"),
        (lambda: regularity_condition([1.0], 0.0, p=64, s=4, k=2, delta=0.1, C0=-2.0), ValueError,
         r"'C0' parameter of regularity_condition"),
        (lambda: theorem_regime_audit([1.0], 0.0, s=4, k=2), TypeError,
         r"'p' parameter of theorem_regime_audit must be given exactly when 'shape' is not"),
        (lambda: theorem_regime_audit([1.0], 0.0, p=64, shape=(8, 8), s=4, k=2), TypeError,
         r"'p' parameter of theorem_regime_audit"),
        (lambda: theorem_regime_audit([1.0], 0.0, shape=(8, 0), s=4, k=2), ValueError,
         r"'shape' parameter of theorem_regime_audit must be a pair of ints"),
        (lambda: theorem_regime_audit([1.0], 0.0, shape=(8,), s=4, k=2), TypeError,
         r"'shape' parameter of theorem_regime_audit"),
        (lambda: theorem_regime_audit([1.0], 0.0, shape=(8, 2.0), s=4, k=2), TypeError,
         r"'shape' parameter of theorem_regime_audit"),
        (lambda: theorem_regime_audit([1.0], 0.0, p=64, s=4, k=2, C_gamma=0.5), ValueError,
         r"'C_gamma' parameter of theorem_regime_audit must be a float in \[1, inf\)"),
        (lambda: theorem_regime_audit([1.0], 0.0, p=64, s=4, k=2, delta=0.0), ValueError,
         r"'delta' parameter of theorem_regime_audit"),
    ],
)
def test_bad_parameters_name_the_parameter(call, exc, pattern):
    with pytest.raises(exc, match=pattern):
        call()
