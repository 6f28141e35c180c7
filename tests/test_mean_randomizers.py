"""Means of numeric values (issue 35, item 5): Hybrid and stochastic rounding beside Laplace,
Duchi and Piecewise.

Worst-case variances are checked three ways: the issue's table, the closed forms derived in
the docstrings, and exact numeric integration of the output laws; simulations use
tolerances of 5 standard deviations derived from the laws' own moments.
"""

from math import exp, expm1, sqrt

import numpy as np
import pytest
from scipy import integrate

from fastldp import audit
from fastldp.oracles import (RANDOMIZERS, Duchi, Hybrid, Laplace, Piecewise, StochasticRounding,
                             make_randomizer)
from fastldp.oracles import _laws as laws

INPUTS = (-1.0, -0.3, 0.0, 0.7, 1.0)


# ------------------------------------------------------------------ the variance table
@pytest.mark.parametrize("eps, expected", [
    (1.0, {"laplace": 8.0, "duchi": 4.68, "piecewise": 5.22}),
    (4.0, {"laplace": 0.50, "duchi": 1.08, "piecewise": 0.24}),
])
def test_worst_case_variance_table_of_the_issue(eps, expected):
    got = {name: round(RANDOMIZERS[name](epsilon=eps).V_eps, 2) for name in expected}
    assert got == expected


def _hybrid_closed_form(eps):
    """The paper's worst-case variance of HM above its threshold (docstring of Hybrid)."""
    e2 = exp(eps / 2.0)
    return ((e2 + 3.0) / (3.0 * e2 * (e2 - 1.0))
            + (exp(eps) + 1.0) ** 2 / (e2 * expm1(eps) ** 2))


@pytest.mark.parametrize("eps", [0.7, 1.0, 2.0, 4.0, 8.0])
def test_hybrid_worst_case_variance_is_the_closed_form_and_the_same_for_every_input(eps):
    q = Hybrid(epsilon=eps)
    assert q.alpha == pytest.approx(1.0 - exp(-eps / 2.0), rel=1e-15)
    assert q.V_eps == pytest.approx(_hybrid_closed_form(eps), rel=1e-12)
    # alpha = h / (h + 1) cancels the u^2 term: the variance does not depend on the input
    np.testing.assert_allclose(q.variance(np.linspace(-1, 1, 11)), q.V_eps, rtol=1e-12)
    assert q.V_eps < min(Duchi(epsilon=eps).V_eps, Piecewise(epsilon=eps).V_eps)


@pytest.mark.parametrize("eps", [0.1, 0.3, 0.6])
def test_hybrid_below_its_threshold_is_duchi(eps):
    q = Hybrid(epsilon=eps)
    assert q.alpha == 0.0 and q.discrete
    assert q.V_eps == Duchi(epsilon=eps).V_eps and q.c_eps == Duchi(epsilon=eps).C
    y = q.privatize(np.linspace(-1, 1, 1000), rng=3)
    assert set(np.unique(y)) <= {-q.C, q.C}


def test_hybrid_threshold_is_where_piecewise_at_zero_meets_duchi():
    def gap(eps):  # Piecewise's Var at u = 0 minus Duchi's
        return Piecewise(epsilon=eps).variance(0.0) - Duchi(epsilon=eps).variance(0.0)

    star = Hybrid.EPSILON_STAR
    assert round(star, 2) == 0.61                       # the paper's value
    closed = np.log((2 * np.cbrt(6353 - 405 * np.sqrt(241)) + 2 * np.cbrt(6353 + 405 * np.sqrt(241))
                     - 5) / 27)                         # the root of a cubic in e^{eps/2}
    assert star == pytest.approx(closed, rel=1e-14)
    assert gap(star * (1 - 1e-12)) > 0 > gap(star * (1 + 1e-12))
    # at the threshold both choices of alpha give the same worst case
    h = expm1(star / 2.0)
    assert _hybrid_closed_form(star) == pytest.approx(Duchi(epsilon=star).V_eps, rel=1e-9)
    assert h > 0


@pytest.mark.parametrize("eps", [0.3, 0.5, 0.8, 1.0, 2.0, 4.0])
def test_hybrid_alpha_minimizes_the_worst_case_over_all_mixtures(eps):
    """Brute force over alpha in [0, 1]: no mixture of Piecewise and Duchi has a smaller worst
    case than Hybrid's (the worst case over u of a variance linear in u^2 is at 0 or 1)."""
    pw, du = Piecewise(epsilon=eps), Duchi(epsilon=eps)
    alphas = np.linspace(0.0, 1.0, 20_001)
    ends = np.array([0.0, 1.0])
    worst = np.max(alphas[:, None] * pw.variance(ends)[None, :]
                   + (1 - alphas[:, None]) * du.variance(ends)[None, :], axis=1)
    best = worst.min()
    v = Hybrid(epsilon=eps).V_eps
    assert v <= best * (1 + 1e-12)
    # the grid's step is 5e-5 in alpha; the worst case moves by at most its slope times that
    slope = np.abs(np.diff(worst)).max() / (alphas[1] - alphas[0])
    assert v >= best - slope * (alphas[1] - alphas[0])


# ------------------------------------------------------------------ exact moments
def _hybrid_moment(q, u, k):
    """``E[Y^k | u]`` by numeric integration of Piecewise's density plus Duchi's atoms."""
    minus, plus = q.prob_atoms(u)
    atoms = float(plus) * q.C**k + float(minus) * (-q.C) ** k
    if q.alpha == 0.0:
        return atoms
    pw = q.piecewise
    left, right = (float(t) for t in pw.band(u))
    b = pw.b
    total = 0.0
    for lo, hi in ((-b, left), (left, right), (right, b)):
        if hi > lo:
            total += integrate.quad(lambda y: y**k * float(pw.density(y, u)), lo, hi,
                                    epsabs=1e-13, epsrel=1e-12)[0]
    return atoms + q.alpha * total


@pytest.mark.parametrize("eps", [0.4, 1.0, 3.0])
@pytest.mark.parametrize("u", INPUTS)
def test_hybrid_variance_against_numeric_integration(eps, u):
    q = Hybrid(epsilon=eps)
    assert _hybrid_moment(q, u, 0) == pytest.approx(1.0, abs=1e-12)
    mean = _hybrid_moment(q, u, 1)
    assert mean == pytest.approx(u, abs=1e-12)
    assert _hybrid_moment(q, u, 2) - mean**2 == pytest.approx(float(q.variance(u)), rel=1e-10)


@pytest.mark.parametrize("eps", [0.2, 1.0, 4.0])
def test_stochastic_rounding_is_duchis_law_and_variance(eps):
    sr, du = StochasticRounding(epsilon=eps), Duchi(epsilon=eps)
    u = np.linspace(-1, 1, 41)
    np.testing.assert_allclose(sr.prob_plus(u), du.prob_plus(u), rtol=0, atol=4e-16)
    assert sr.C == du.C and sr.V_eps == du.V_eps
    # exact moments of the two-point law: mean u, second moment C^2
    pp = sr.prob_plus(u)
    np.testing.assert_allclose(sr.C * (2 * pp - 1), u, atol=1e-14)
    np.testing.assert_allclose(sr.C**2 - u * u, sr.variance(u), rtol=1e-15)
    assert sr.V_eps == pytest.approx(((exp(eps) + 1) / expm1(eps)) ** 2, rel=1e-15)


# ------------------------------------------------------------------ simulation
def _central_moments(q, u):
    """``(variance, fourth central moment)`` of ``Y | u`` from the exact law."""
    if isinstance(q, StochasticRounding):
        pp = float(q.prob_plus(u))
        pts, ps = np.array([q.C, -q.C]), np.array([pp, 1 - pp])
        return float(ps @ (pts - u) ** 2), float(ps @ (pts - u) ** 4)
    m = [_hybrid_moment(q, u, k) for k in range(5)]
    var = m[2] - u * u
    mu4 = m[4] - 4 * u * m[3] + 6 * u * u * m[2] - 3 * u**4
    return var, mu4


@pytest.mark.parametrize("cls", [Hybrid, StochasticRounding], ids=lambda c: c.__name__)
@pytest.mark.parametrize("eps", [0.5, 1.0, 4.0])
@pytest.mark.parametrize("u", [-1.0, 0.0, 0.7])
def test_simulated_mean_and_variance_within_five_standard_deviations(cls, eps, u):
    n = 200_000
    q = cls(epsilon=eps)
    var, mu4 = _central_moments(q, u)
    assert var == pytest.approx(float(q.variance(u)), rel=1e-10)
    y = q.privatize(np.full(n, u), rng=20261204)
    assert abs(y.mean() - u) < 5 * sqrt(var / n)
    # the mean square about the true mean has standard deviation sqrt((mu4 - var^2) / n)
    # (plus rounding: at u = 0 the two-point law has (y - u)^2 = C^2 exactly, sd 0)
    assert abs(np.mean((y - u) ** 2) - var) <= 5 * sqrt((mu4 - var * var) / n) + 1e-13 * var


def test_simulation_catches_a_wrong_variance():
    """The test above bites: Duchi's variance is not Hybrid's at eps = 4 (1.08 vs 0.22)."""
    n, u = 200_000, 0.0
    q = Hybrid(epsilon=4.0)
    var, mu4 = _central_moments(q, u)
    y = q.privatize(np.full(n, u), rng=1)
    assert abs(np.mean(y * y) - Duchi(epsilon=4.0).V_eps) > 5 * sqrt((mu4 - var * var) / n)


# ------------------------------------------------------------------ privacy and audit
@pytest.mark.parametrize("eps", [0.5, 1.0, 3.0])
def test_hybrid_density_ratios_are_bounded_by_e_eps(eps):
    q = Hybrid(epsilon=eps)
    ys = np.concatenate([np.linspace(-q.c_eps, q.c_eps, 2001), [-q.C, q.C]])
    us = np.linspace(-1, 1, 21)
    dens = np.array([q.density(ys, u) for u in us])
    legal = dens.max(axis=0) > 0
    ratio = dens[:, legal].max(axis=0) / dens[:, legal].min(axis=0)
    assert ratio.max() <= exp(eps) * (1 + 1e-12)
    assert ratio.max() >= exp(eps) * (1 - 1e-12)          # attained at u = +-1


@pytest.mark.parametrize("eps", [0.5, 1.0, 3.0])
def test_laws_of_the_audit_agree_with_the_classes(eps):
    sr, hy = StochasticRounding(epsilon=eps), Hybrid(epsilon=eps)
    law = laws.stochastic_rounding_law(eps)
    assert law.outputs == [-sr.C, sr.C]
    np.testing.assert_allclose(law.probs[0, :, 1], sr.prob_plus(np.array(law.inputs)), atol=1e-16)
    law = laws.hybrid_atoms_law(eps, Hybrid.EPSILON_STAR)
    minus, plus = hy.prob_atoms(np.array(law.inputs))
    np.testing.assert_allclose(law.probs[0, :, 0], minus, atol=1e-16)
    np.testing.assert_allclose(law.probs[0, :, 1], plus, atol=1e-16)
    assert len(law.outputs) == (3 if hy.alpha > 0 else 2)


@pytest.mark.parametrize("name", ["hybrid", "hybrid-atoms", "stochastic-rounding"])
def test_new_channels_pass_and_their_controls_are_caught(name):
    row = audit.audit_channel(audit.get_channel(name, epsilon=1.0), n=40_000, rng=2)
    assert row.holds and row.as_expected
    if row.exact is not None:
        assert row.exact.epsilon_audited == pytest.approx(1.0, rel=1e-12)
    controls = {k: c for k, c in audit.negative_controls(1.0).items() if c.control_of == name}
    assert len(controls) == 2                            # the law fault and the sampler fault
    for ctrl in controls.values():
        row = audit.audit_channel(ctrl, n=40_000, rng=2)
        assert not row.holds and row.as_expected, ctrl.name


# ------------------------------------------------------------------ registry and input
def test_registered_by_name():
    assert RANDOMIZERS["hybrid"] is Hybrid
    assert RANDOMIZERS["stochastic-rounding"] is StochasticRounding
    assert make_randomizer("hybrid", 2.0, "test") == Hybrid(epsilon=2.0)
    assert make_randomizer("stochastic-rounding", 2.0, "test") == StochasticRounding(epsilon=2.0)
    assert Hybrid(epsilon=2.0) != Piecewise(epsilon=2.0)
    assert repr(Hybrid(epsilon=2.0)) == "Hybrid(epsilon=2.0)"


@pytest.mark.parametrize("cls", [Hybrid, StochasticRounding], ids=lambda c: c.__name__)
def test_bad_input_names_the_parameter(cls):
    for bad in (float("nan"), -1.0, 0.0, 701.0):
        with pytest.raises(ValueError, match="epsilon"):
            cls(epsilon=bad)
    q = cls(epsilon=1.0)
    with pytest.raises(ValueError, match=r"u.*\[-1.0, 1.0\].*1.5"):
        q.privatize([0.0, 1.5])
    with pytest.raises(ValueError, match="u"):
        q.privatize([float("nan")])
    with pytest.raises(ValueError, match="epsilons"):
        q.privatize([0.0], epsilons=2.0)


def test_outputs_are_legal_and_bounded():
    for q in (Hybrid(epsilon=2.0), StochasticRounding(epsilon=2.0), Hybrid(epsilon=0.3)):
        y = q.privatize(np.linspace(-1, 1, 5000), rng=5)
        assert q.is_legal(y).all() and np.abs(y).max() <= q.c_eps
    assert Laplace(epsilon=1.0).V_eps == 8.0
