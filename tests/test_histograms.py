"""Paper 003: the shifted-log Gaussian, its calibration and budget, the Rényi tools, the bounds."""

import doctest
import math

import numpy as np
import pytest
from scipy import integrate, special, stats

from fastldp import histograms as H
from fastldp._random import as_generator
from fastldp.histograms import (
    C_LOWER,
    C_UPPER,
    DataIndependentRelease,
    EqualNoiseGaussian,
    ShiftedLogGaussian,
    certify,
    gaussian_zcdp,
    leading_coefficient_bounds,
    leading_coefficient_ratio,
    mechanism_leading_constant,
    multiplicative_error,
    proportional_gaussian_failure,
    renyi_critical_order,
    renyi_gaussian,
    two_count_lower_bound,
)
from fastldp.histograms.mechanism import _error_exact, _kappa

R_VALUES = (0.01, 0.1, 0.5, 1.0)


def _phi(z):
    return math.exp(-0.5 * z * z) / math.sqrt(2 * math.pi)


def _quad_multiplicative(sigma, mu):
    """E|exp(mu + sigma Z) - 1| by quadrature, split at the kink z = -mu/sigma."""
    kink = -mu / sigma
    f = lambda z: abs(math.expm1(mu + sigma * z)) * _phi(z)  # noqa: E731
    lo, hi = -14.0, 14.0 + sigma
    return (integrate.quad(f, lo, kink, epsabs=0, epsrel=1e-12, limit=200)[0]
            + integrate.quad(f, kink, hi, epsabs=0, epsrel=1e-12, limit=200)[0])


@pytest.fixture(scope="module")
def mechs():
    return {(r, d): ShiftedLogGaussian(r=r, drift=d) for r in R_VALUES for d in ("median", "mean")}


# ------------------------------------------------------------------ the drift
@pytest.mark.parametrize("sigma", [0.01, 0.1, 0.5, 1.0, 2.0, 4.0])
def test_erf_identity_for_the_median_drift(sigma):
    # E|exp(sigma Z - sigma^2) - 1| = erf(sigma / sqrt 2): closed form and quadrature
    target = special.erf(sigma / math.sqrt(2))
    assert multiplicative_error(sigma, -sigma ** 2) == pytest.approx(target, rel=1e-13)
    assert _quad_multiplicative(sigma, -sigma ** 2) == pytest.approx(target, rel=1e-9)
    # the mean drift costs 2 erf(sigma / (2 sqrt 2)), more at every sigma
    mean = 2 * special.erf(sigma / (2 * math.sqrt(2)))
    assert multiplicative_error(sigma, -sigma ** 2 / 2) == pytest.approx(mean, rel=1e-13)
    assert _quad_multiplicative(sigma, -sigma ** 2 / 2) == pytest.approx(mean, rel=1e-9)
    assert mean > target


@pytest.mark.parametrize("sigma", [0.05, 0.3, 1.0, 2.5])
def test_median_drift_minimizes_the_multiplicative_error(sigma):
    ks = np.linspace(0.0, 2.0, 201)          # mu = -k sigma^2, step 0.01 in k
    by_quad = np.array([_quad_multiplicative(sigma, -k * sigma ** 2) for k in ks])
    assert ks[np.argmin(by_quad)] == pytest.approx(1.0, abs=0.011)
    by_formula = multiplicative_error(sigma, -ks * sigma ** 2)
    np.testing.assert_allclose(by_formula, by_quad, rtol=1e-8)
    # a continuous minimizer lands on -sigma^2
    from scipy.optimize import minimize_scalar
    res = minimize_scalar(lambda mu: float(multiplicative_error(sigma, mu)),
                          bounds=(-3 * sigma ** 2, 0.0), method="bounded",
                          options={"xatol": 1e-10})
    assert res.x == pytest.approx(-sigma ** 2, rel=1e-4)


def test_median_drift_needs_less_budget_than_the_mean_drift(mechs):
    for r in R_VALUES:
        med, mean = mechs[(r, "median")], mechs[(r, "mean")]
        assert med.sigma > mean.sigma
        assert med.leading_constant < mean.leading_constant
        n = np.array([10, 100, 10_000])
        assert np.all(med.rho(n) < mean.rho(n))


# ------------------------------------------------------------------ calibration
@pytest.mark.parametrize("r", R_VALUES)
@pytest.mark.parametrize("drift", ["median", "mean"])
def test_calibration_meets_the_utility_bound_by_quadrature(mechs, r, drift):
    mech = mechs[(r, drift)]
    assert mech.certificate.ok and mech.certificate.worst < 1
    xs = np.concatenate([[0.0, 1e-9], np.linspace(0.01, 1.0, 25), np.arange(2.0, 21.0),
                         np.geomspace(21.0, 1e15, 60)])
    err = mech.expected_error(xs)                       # adaptive quadrature
    bound = r * np.maximum(xs, 1.0)
    assert np.all(err < bound), xs[np.argmax(err / bound)]
    # quadrature and the closed form agree
    np.testing.assert_allclose(err, mech.expected_error(xs, method="exact"), rtol=1e-9, atol=1e-14)
    # a much denser grid with the closed form, out to 1e18
    dense = np.concatenate([np.linspace(0.0, 1.0, 2001), np.geomspace(1.0, 1e18, 20001)])
    exact = mech.expected_error(dense, method="exact")
    assert np.all(exact < r * np.maximum(dense, 1.0))


@pytest.mark.parametrize("r", [0.1, 1.0])
def test_error_lemmas_behind_the_certificate(mechs, r):
    mech = mechs[(r, "median")]
    xs = np.geomspace(1e-6, 1e9, 3000)
    err = mech.expected_error(xs, method="exact")
    kap = _kappa(xs, mech.c, mech.sigma, mech.mu)
    assert np.all(np.diff(err) >= -1e-12 * err[1:])          # err non-decreasing in x
    assert np.all(np.diff(kap) <= 1e-15) and np.all(kap >= 0)  # kappa non-increasing, >= 0
    # beyond the tail start the unclipped bound suffices: (x + c) e < r x
    tail = mech.certificate.tail_start
    far = tail * np.array([1.0, 10.0, 1e6])
    assert np.all((far + mech.c) * mech.multiplicative_error < r * far)
    # large counts: err / x -> E|W - 1| = r (1 - margin)
    assert mech.expected_error(1e12) / 1e12 == pytest.approx(r * (1 - mech.margin), rel=1e-9)
    # err is non-decreasing in c (so every smaller c is feasible too)
    e = mech.multiplicative_error
    assert np.all(_error_exact(xs, 0.5 * mech.c, mech.sigma, mech.mu, e) <= err + 1e-15)


@pytest.mark.parametrize("r", [0.01, 0.5, 1.0])
def test_calibrated_shift_is_nearly_the_largest(mechs, r):
    mech = mechs[(r, "median")]
    # err(1) sits just below r: a 1% larger shift breaks the requirement at x = 1
    assert mech.expected_error(1.0) / r > 1 - 2e-4
    bigger = _error_exact(np.array([1.0]), 1.01 * mech.c, mech.sigma, mech.mu,
                          mech.multiplicative_error)[0]
    assert bigger >= r * (1 - mech.slack)
    assert not certify(mech.sigma, 1.01 * mech.c, r, slack=mech.slack).ok
    # and a sigma at the limit (margin 0) can never be certified
    if r < 1:
        assert not certify(math.sqrt(2) * special.erfinv(r), 1e-9, r).ok


# ------------------------------------------------------------------ the budget v(n)
def test_rho_matches_closed_form_and_the_renyi_supremum(mechs):
    mech = mechs[(0.1, "median")]
    s, c, mu = mech.sigma, mech.c, mech.mu
    n = np.arange(0, 200)
    closed = np.log((np.maximum(n - 1, 0) + 1 + c) / (np.maximum(n - 1, 0) + c)) ** 2 / (2 * s * s)
    np.testing.assert_allclose(mech.rho(n), closed, rtol=1e-12)
    orders = np.array([1 + 1e-6, 1.5, 2.0, 10.0, 1e3, 1e6])
    for k in [0, 1, 2, 7, 150]:
        m = math.log(k + c) + mu
        sups = []
        for nb in (k - 1, k + 1):
            if nb < 0:
                continue                      # n = 0: only the add direction exists
            m2 = math.log(nb + c) + mu
            both = np.maximum(renyi_gaussian(m, s, m2, s, orders), renyi_gaussian(m2, s, m, s, orders))
            sups.append(np.max(both / orders))
        assert mech.rho(k) == pytest.approx(max(sups), rel=1e-9)
        # the ratio D_alpha / alpha is the same at every order (equal variances)
        assert np.ptp(renyi_gaussian(m, s, math.log(k + 1 + c) + mu, s, orders) / orders) \
            < 1e-9 * mech.rho(k)
    assert mech.rho(0) == mech.rho(1) == mech.edge_rho(0)
    np.testing.assert_allclose(mech.rho(n[1:]), mech.edge_rho(n[1:] - 1))


@pytest.mark.parametrize("r", R_VALUES)
def test_rho_is_non_increasing(mechs, r):
    v = mechs[(r, "median")].rho(np.arange(0, 100_001))
    assert np.all(np.diff(v) <= 0) and np.all(v > 0) and np.all(np.isfinite(v))


@pytest.mark.parametrize("r", R_VALUES)
def test_n2_rho_tends_to_one_over_two_sigma_squared(mechs, r):
    mech = mechs[(r, "median")]
    n = np.array([1e3, 1e4, 1e5, 1e6, 1e7, 1e8])
    scaled = n ** 2 * mech.rho(n) * 2 * mech.sigma ** 2
    # n^2 v(n) 2 sigma^2 = 1 + (1 - 2c)/n + O(1/n^2)
    assert np.all(np.abs(scaled - 1) <= 2 / n)
    assert np.all(np.diff(np.abs(scaled - 1)) <= 0)          # the gap shrinks with n


def test_r2n2_rho_tends_to_one_over_pi():
    # the limit calibration (margin -> 0): 0.318 at r = 0.01, -> 1/pi as r -> 0
    assert round(mechanism_leading_constant(0.01), 3) == 0.318
    assert mechanism_leading_constant(0.01) == pytest.approx(0.31829, abs=1e-5)
    rs = np.array([0.5, 0.1, 0.01, 1e-3, 1e-4])
    consts = mechanism_leading_constant(rs)
    assert np.all(np.diff(consts) > 0) and np.all(consts < C_UPPER)
    assert consts[-1] == pytest.approx(1 / math.pi, rel=1e-8)
    # out of the mechanism's own rho: r^2 n^2 v(n) at a large n
    mech = ShiftedLogGaussian(r=0.01, margin=1e-4)
    n = 1e7
    assert round(0.01 ** 2 * n ** 2 * mech.rho(n), 3) == 0.318
    # the default margin (0.01) pays a factor (1 - margin)^-2 to first order
    default = ShiftedLogGaussian(r=0.01)
    assert 0.01 ** 2 * n ** 2 * default.rho(n) == pytest.approx(1 / (math.pi * 0.99 ** 2), rel=2e-4)


# ------------------------------------------------------------------ bounds
def test_leading_coefficient_bounds_and_ratio():
    lo, hi = leading_coefficient_bounds()
    assert (lo, hi) == (C_LOWER, C_UPPER)
    assert lo == pytest.approx(math.pi / (4 * math.e ** 2)) and lo == pytest.approx(0.106293, abs=1e-6)
    assert hi == pytest.approx(0.318310, abs=1e-6)
    assert leading_coefficient_ratio() == pytest.approx(4 * math.e ** 2 / math.pi ** 2, rel=1e-14)
    assert round(leading_coefficient_ratio(), 3) == 2.995


def test_two_count_lower_bound_and_the_mechanism_respects_it(mechs):
    assert two_count_lower_bound(0.5) == pytest.approx(0.5 ** 6 / (128 * 0.25 * 2.25), rel=1e-14)
    assert two_count_lower_bound(1.0) == 0.0
    rs = np.array([0.01, 0.1, 0.5, 0.9])
    assert np.all(np.diff(two_count_lower_bound(rs)) < 0)
    # small r: r^2 times the bound -> 1/128, below the many-count bound pi/(4 e^2)
    assert 1e-8 ** 2 * two_count_lower_bound(1e-8) == pytest.approx(1 / 128, rel=1e-6)
    assert 1 / 128 < C_LOWER
    for r in R_VALUES:
        for drift in ("median", "mean"):
            mech = mechs[(r, drift)]
            assert mech.leading_constant >= two_count_lower_bound(r)
            assert np.all(1e6 ** 2 * mech.rho(1e6) >= two_count_lower_bound(r))


def test_data_independent_release_at_r_equal_one():
    mech = DataIndependentRelease()
    xs = np.concatenate([np.linspace(0, 1, 101), np.geomspace(1, 1e12, 50)])
    assert np.all(mech.meets(1.0, xs))
    assert not np.all(mech.meets(0.99, xs))          # fails at large x below r = 1
    assert np.all(mech.release([0, 5, 10 ** 9], rng=3) == 0.5)
    assert np.all(mech.rho(np.arange(10)) == 0) and mech.rho(0) == 0.0
    assert mech.expected_error(3.0) == 2.5


# ------------------------------------------------------------------ Rényi between Gaussians
def _renyi_by_quadrature(m1, s1, m2, s2, a):
    logf = lambda x: a * stats.norm.logpdf(x, m1, s1) + (1 - a) * stats.norm.logpdf(x, m2, s2)  # noqa: E731
    val = integrate.quad(lambda x: math.exp(logf(x)), -60, 60, points=[m1, m2], limit=400,
                         epsabs=0, epsrel=1e-11)[0]
    return math.log(val) / (a - 1)


@pytest.mark.parametrize("m1,s1,m2,s2,a", [
    (0.0, 1.0, 1.0, 1.0, 2.0), (0.3, 1.0, -0.4, 1.7, 3.0),
    (1.0, 0.6, 0.0, 0.9, 0.5), (0.0, 2.0, 0.0, 1.0, 1.2), (0.0, 1.5, 0.5, 1.0, 1.5),
])
def test_renyi_gaussian_matches_numerical_integration(m1, s1, m2, s2, a):
    assert renyi_gaussian(m1, s1, m2, s2, a) == pytest.approx(_renyi_by_quadrature(m1, s1, m2, s2, a),
                                                              rel=1e-8)


def test_renyi_gaussian_special_orders():
    assert renyi_gaussian(0.0, 1.0, 1.0, 1.0, 2.0) == 1.0                  # alpha d^2 / (2 s^2)
    assert renyi_gaussian(0.0, 0.5, 3.0, 0.5, 7.0) == pytest.approx(7 * 9 / (2 * 0.25))
    assert renyi_gaussian(0.2, 1.3, -0.5, 0.8, 0.0) == 0.0
    kl = renyi_gaussian(0.2, 1.3, -0.5, 1.8, 1.0)
    assert kl == pytest.approx(math.log(1.8 / 1.3) + (1.3 ** 2 + 0.7 ** 2) / (2 * 1.8 ** 2) - 0.5)
    assert renyi_gaussian(0.2, 1.3, -0.5, 1.8, [1 - 1e-7, 1 + 1e-7]) == pytest.approx([kl, kl], rel=1e-5)
    dmax = renyi_gaussian(0.2, 1.3, -0.5, 1.8, math.inf)
    assert dmax == pytest.approx(math.log(1.8 / 1.3) + 0.49 / (2 * (1.8 ** 2 - 1.3 ** 2)))
    assert renyi_gaussian(0.2, 1.3, -0.5, 1.8, 1e9) == pytest.approx(dmax, rel=1e-6)
    assert renyi_gaussian(0.0, 1.0, 1.0, 1.0, math.inf) == math.inf
    assert renyi_gaussian(1.0, 1.0, 1.0, 1.0, math.inf) == 0.0
    assert gaussian_zcdp(0.0, 2.0, 1.0, 2.0) == pytest.approx(1 / 8)
    assert gaussian_zcdp(0.0, 2.0, 1.0, 2.1) == math.inf


@pytest.mark.parametrize("s1,s2", [(2.0, 1.0), (1.0001, 1.0), (5.0, 4.9), (11.0, 10.0)])
def test_unequal_variance_divergence_is_infinite_exactly_beyond_the_critical_order(s1, s2):
    crit = renyi_critical_order(s1, s2)
    assert crit == pytest.approx(s1 ** 2 / (s1 ** 2 - s2 ** 2))
    below = renyi_gaussian(0.3, s1, 0.0, s2, [1.0001, crit * (1 - 1e-9), crit * (1 - 1e-3)])
    assert np.all(np.isfinite(below))
    above = renyi_gaussian(0.3, s1, 0.0, s2, [crit, crit * (1 + 1e-9), 2 * crit, 1e9, math.inf])
    assert np.all(np.isinf(above))
    # the other direction (narrow law first) is finite at every order
    assert renyi_critical_order(s2, s1) == math.inf
    assert np.all(np.isfinite(renyi_gaussian(0.0, s2, 0.3, s1, [2.0, crit, 1e3, 1e12, math.inf])))
    # the integral itself diverges past crit: it grows with the integration range
    a = 1.5 * crit

    def log_kernel(x):
        return a * stats.norm.logpdf(x, 0.3, s1) + (1 - a) * stats.norm.logpdf(x, 0.0, s2)

    def log_mass(L):
        shift = max(log_kernel(-L), log_kernel(0.0), log_kernel(L))
        f = lambda x: math.exp(log_kernel(x) - shift)  # noqa: E731
        return shift + math.log(integrate.quad(f, -L, L, points=[0.0], limit=400)[0])

    assert log_mass(20 * s1) > log_mass(5 * s1) + math.log(10)


@pytest.mark.parametrize("n", [1, 2, 10, 100])
@pytest.mark.parametrize("r", [0.01, 0.3])
def test_proportional_gaussian_fails_zcdp(n, r):
    fail = proportional_gaussian_failure(n, r)
    assert fail.critical_order == pytest.approx((n + 1) ** 2 / (2 * n + 1), rel=1e-12)
    orders = np.array([fail.critical_order * (1 - 1e-6), fail.critical_order, 2 * fail.critical_order])
    fwd, back = fail.divergences(orders)
    assert np.all(np.isfinite(fwd))
    assert np.isfinite(back[0]) and np.all(np.isinf(back[1:]))
    assert gaussian_zcdp(n, r * n, n + 1, r * (n + 1)) == math.inf
    assert proportional_gaussian_failure(1, r).critical_order == pytest.approx(4 / 3)


# ------------------------------------------------------------------ the release
def test_release_is_non_negative_seeded_and_shaped(mechs):
    mech = mechs[(0.5, "median")]
    counts = np.array([[0, 1, 2], [10, 1000, 10 ** 12]])
    a = mech.release(counts, rng=11)
    assert a.shape == counts.shape and np.all(a >= 0)
    np.testing.assert_array_equal(a, mech.release(counts, rng=11))
    # rng=11 is the keyed Generator as_generator(11) (issue 37), not default_rng(11)
    np.testing.assert_array_equal(a, mech.release(counts.astype(float), rng=as_generator(11)))
    assert not np.array_equal(a, mech.release(counts, rng=12))
    assert np.any(mech.release(np.zeros(1000, dtype=int), rng=1) == 0)  # the atom at 0


@pytest.mark.parametrize("x", [0, 1, 5, 2000])
def test_release_law_matches_the_formula(mechs, x):
    mech = mechs[(0.5, "median")]
    n = 20_000
    y = mech.release(np.full(n, x), rng=2024 + x)
    p0 = mech.zero_probability(x)
    # bins: the atom at 0, then 20 equal-probability bins of the continuous part
    qs = p0 + (1 - p0) * np.linspace(0, 1, 21)[1:-1]
    edges = np.exp(special.ndtri(qs) * mech.sigma + mech.mu + math.log(x + mech.c)) - mech.c
    np.testing.assert_allclose(mech.cdf(edges, x), qs, rtol=1e-10)
    observed = np.bincount(np.searchsorted(edges, y[y > 0]), minlength=20)
    observed = np.concatenate([[np.sum(y == 0)], observed])
    expected = n * np.concatenate([[p0], np.full(20, (1 - p0) / 20)])
    keep = expected > 0
    if p0 * n < 5:   # merge a negligible atom into the first bin
        observed[1] += observed[0]
        keep[0] = False
    stat, p = stats.chisquare(observed[keep], expected[keep] * observed[keep].sum() / expected[keep].sum())
    assert p > 1e-3, (stat, p)


@pytest.mark.parametrize("x", [0, 1, 30])
def test_monte_carlo_error_agrees_with_quadrature(mechs, x):
    mech = mechs[(0.5, "median")]
    n = 100_000
    dev = np.abs(mech.release(np.full(n, x), rng=77 + x) - x)
    mean = mech.expected_error(x)
    # exact second moment by quadrature: E (x_hat - x)^2
    a, c, s, mu = x + mech.c, mech.c, mech.sigma, mech.mu
    f = lambda z: (max(0.0, a * math.exp(mu + s * z) - c) - x) ** 2 * _phi(z)  # noqa: E731
    kink = (math.log(c / a) - mu) / s
    second = (integrate.quad(f, -14, kink, limit=200)[0]
              + integrate.quad(f, kink, 14 + s, limit=200)[0])
    sd = math.sqrt(second - mean ** 2)
    assert abs(dev.mean() - mean) < 5 * sd / math.sqrt(n)


# ------------------------------------------------------------------ clipping is post-processing
def test_released_divergence_by_quadrature_and_rho_is_exact_for_it(mechs):
    mech = mechs[(0.5, "median")]
    s, c, mu = mech.sigma, mech.c, mech.mu
    cut = math.log(c)
    for k in (0, 1, 5):
        lo, hi = math.log(k + c) + mu, math.log(k + 1 + c) + mu
        closed = mech.released_renyi(k, [2.0, 5.0])
        for direction, (m1, m2) in enumerate([(lo, hi), (hi, lo)]):
            for i, a in enumerate((2.0, 5.0)):
                # the release in log(x_hat + c) space: atom below log c, Gaussian above
                p0, q0 = stats.norm.cdf(cut, m1, s), stats.norm.cdf(cut, m2, s)
                f = lambda t: math.exp(a * stats.norm.logpdf(t, m1, s)  # noqa: E731
                                       + (1 - a) * stats.norm.logpdf(t, m2, s))
                top = max(m1, m2) + 40 * s
                cont = integrate.quad(f, cut, top, points=[a * m1 + (1 - a) * m2], limit=200)[0]
                quad = math.log(p0 ** a * q0 ** (1 - a) + cont) / (a - 1)
                assert closed[direction][i] == pytest.approx(quad, rel=1e-7)
                assert quad / a <= mech.edge_rho(k) * (1 + 1e-9)     # post-processing
        # from the larger count, D_alpha / alpha -> edge_rho(k): the bound is exact
        _, back = mech.released_renyi(k, [1e2, 1e4, 1e6])
        assert back[-1] / 1e6 == pytest.approx(mech.edge_rho(k), rel=1e-6)
        assert np.all(back / np.array([1e2, 1e4, 1e6]) <= mech.edge_rho(k) * (1 + 1e-12))
    # at the edge {0, 1} clipping lowers the other direction a lot
    fwd, _ = mech.released_renyi(0, 2.0)
    assert fwd / 2 < 0.6 * mech.edge_rho(0)


# ------------------------------------------------------------------ report and baseline
def test_privacy_report(mechs):
    mech = mechs[(0.1, "median")]
    counts = [0, 3, 250, 10_000]
    rep = mech.privacy_report(counts, delta=1e-6)
    np.testing.assert_allclose(rep.rho, mech.rho(counts))
    eps = rep.rho + 2 * np.sqrt(rep.rho * math.log(1e6))
    np.testing.assert_allclose(rep.epsilon, eps)
    assert np.all(rep.meets_utility)
    assert rep.rho_asymptotic[0] == math.inf
    assert rep.rho_asymptotic[-1] == pytest.approx(rep.rho[-1], rel=1e-3)
    rows = rep.rows()
    assert [r["count"] for r in rows] == counts and rows[2]["meets_utility"]
    assert rep.to_csv().splitlines()[0].startswith("group,count,rho,")
    assert "rho = v(n)" in str(rep) and "10000" in str(rep)


def test_equal_noise_baseline(mechs):
    mech = mechs[(0.1, "median")]
    util = EqualNoiseGaussian.matching_utility(0.1)
    xs = np.concatenate([[0.0], np.linspace(0.01, 1, 50), np.geomspace(1, 1e9, 50)])
    assert np.all(util.expected_error(xs) < 0.1 * np.maximum(xs, 1))
    assert util.rho(7) == pytest.approx(1 / (math.pi * 0.01 * 0.99 ** 2))
    # same utility requirement: the shifted-log budget is ~ n^2 times smaller
    n = 1000.0
    assert util.rho(n) / mech.rho(n) == pytest.approx(n ** 2 * (mech.sigma / util.scale) ** 2 / 1.0,
                                                       rel=3e-3)
    priv = EqualNoiseGaussian.matching_privacy(mech)
    assert priv.rho(5) == pytest.approx(mech.rho(0)) and priv.rho(0) == pytest.approx(mech.rho(0))
    # the error formula against quadrature
    s = util.scale
    for x in (0.0, 0.05, 2.0):
        f = lambda z: abs(max(0.0, x + s * z) - x) * _phi(z)  # noqa: E731
        q = sum(integrate.quad(f, lo, hi, epsabs=0, epsrel=1e-12)[0]
                for lo, hi in [(-14, -x / s), (-x / s, 0.0), (0.0, 14)] if hi > lo)
        assert util.expected_error(x) == pytest.approx(q, rel=1e-9)
    y = util.release([0, 5], rng=1)
    assert y.shape == (2,) and np.all(y >= 0)


def test_docstring_examples():
    for module in (H.mechanism, H.renyi, H):
        result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
        assert result.failed == 0


# ------------------------------------------------------------------ bad inputs
@pytest.mark.parametrize("r,exc", [(0, ValueError), (-0.1, ValueError), (1.5, ValueError),
                                   (math.nan, ValueError), (math.inf, ValueError),
                                   ("0.1", TypeError), (True, TypeError), (None, TypeError)])
def test_bad_r_raises(r, exc):
    with pytest.raises(exc, match="'r' parameter of ShiftedLogGaussian"):
        ShiftedLogGaussian(r=r)


def test_bad_parameters_raise():
    with pytest.raises(ValueError, match="'drift'.*'median', 'mean'.*'mode'"):
        ShiftedLogGaussian(r=0.1, drift="mode")
    for margin in (0, 0.6, math.nan):
        with pytest.raises(ValueError, match="'margin'"):
            ShiftedLogGaussian(r=0.1, margin=margin)
    with pytest.raises(TypeError):
        ShiftedLogGaussian(0.1)  # keyword only
    with pytest.raises(ValueError, match=r"\(0, 1\]"):
        two_count_lower_bound(0.0)
    with pytest.raises(ValueError, match="'r'"):
        two_count_lower_bound(math.nan)
    with pytest.raises(ValueError, match="'n'"):
        proportional_gaussian_failure(0, 0.1)
    with pytest.raises(ValueError, match="'sigma1'"):
        renyi_gaussian(0, 0.0, 0, 1, 2)
    with pytest.raises(ValueError, match="'order'"):
        renyi_gaussian(0, 1, 0, 1, -1)
    with pytest.raises(ValueError, match="'order'"):
        renyi_gaussian(0, 1, 0, 1, math.nan)
    with pytest.raises(ValueError, match="'mu2'"):
        renyi_gaussian(0, 1, math.nan, 1, 2)
    with pytest.raises(ValueError, match="'scale'"):
        EqualNoiseGaussian(scale=-1)
    with pytest.raises(ValueError, match="'value'"):
        DataIndependentRelease(value=2.0)


@pytest.mark.parametrize("counts,exc,text", [
    ([3, -1], ValueError, "Got -1 at index 1"),
    ([1.5], ValueError, "Got 1.5 at index 0"),
    ([2.0, math.nan], ValueError, "Got nan at index 1"),
    ([math.inf], ValueError, "Got inf"),
    (["a"], TypeError, "non-negative integers"),
    ([True, False], TypeError, "non-negative integers"),
    ([[1, 2], [3]], TypeError, "non-negative integers"),
])
def test_bad_counts_raise(mechs, counts, exc, text):
    mech = mechs[(0.1, "median")]
    with pytest.raises(exc, match=text):
        mech.release(counts, rng=0)
    with pytest.raises(exc, match="'n' parameter of ShiftedLogGaussian.rho"):
        mech.rho(counts)
    with pytest.raises(exc, match="'counts' parameter"):
        mech.privacy_report(counts)


def test_bad_rng_and_x_raise(mechs):
    mech = mechs[(0.1, "median")]
    with pytest.raises(ValueError, match="'rng'"):
        mech.release([1], rng=-1)
    with pytest.raises(TypeError, match="'rng'"):
        mech.release([1], rng="seed")
    for x in (-1.0, math.nan, math.inf):
        with pytest.raises(ValueError, match="'x' parameter"):
            mech.expected_error(x)
    with pytest.raises(ValueError, match="'method'"):
        mech.expected_error(1.0, method="mc")
    with pytest.raises(ValueError, match="'delta'"):
        mech.privacy_report([1], delta=0)
