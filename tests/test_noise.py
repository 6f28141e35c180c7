"""fastldp.noise: the exact discrete Laplace / Gaussian and Bernoulli(exp(-gamma)) samplers.

The law tests bin the samples on a support cut where the omitted tail mass
is below 1e-9, merge the outer bins until every expected count is >= 5, and
run Pearson's chi-square and the G-test at a fixed seed (p > 1e-3). A
2%-off scale must push the same statistic past the critical value at the
same sample size (the test has the power to see the mistake it guards).
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from scipy import stats

from fastldp import noise
from fastldp.noise import (
    bernoulli_exp,
    discrete_gaussian,
    discrete_gaussian_pmf,
    discrete_laplace,
    discrete_laplace_pmf,
)

ALPHA = 1e-3
TAIL = 1e-9


# --------------------------------------------------------------------------- helpers

def _support_cut(pmf) -> int:
    """Smallest M with P(|X| > M) < TAIL (pmf symmetric and decreasing in |x|)."""
    M = 0
    mass = float(pmf(np.array([0]))[0])
    while 1.0 - mass >= TAIL:
        M += 1
        mass += 2 * float(pmf(np.array([M]))[0])
    return M


def _binned(samples: np.ndarray, pmf):
    """Observed and expected counts on [-M, M], outer bins merged to expected >= 5.

    The two outer bins hold everything beyond them (half the omitted tail
    mass, < TAIL / 2, each), so the expected counts sum to n.
    """
    n = samples.size
    M = _support_cut(pmf)
    xs = np.arange(-M, M + 1)
    p = pmf(xs)
    outside = (1.0 - p.sum()) / 2
    L = M
    while L > 0 and n * p[M + L] < 5:  # |x| >= L merged into the two edge bins
        L -= 1
    assert L >= 1, "the law is too concentrated for binning"
    inner = p[M - L + 1: M + L]
    edge = p[: M - L + 1].sum() + outside
    expected = n * np.concatenate([[edge], inner, [edge]])
    clipped = np.clip(samples, -L, L)
    observed = np.bincount(clipped + L, minlength=2 * L + 1).astype(float)
    return observed, expected


def _chi2_stat(samples, pmf):
    observed, expected = _binned(samples, pmf)
    stat = float(((observed - expected) ** 2 / expected).sum())
    return stat, observed.size - 1


def _assert_law(samples, pmf):
    observed, expected = _binned(samples, pmf)
    chi = stats.chisquare(observed, expected)
    g = stats.power_divergence(observed, expected, lambda_="log-likelihood")
    assert chi.pvalue > ALPHA, (chi, observed, expected)
    assert g.pvalue > ALPHA, (g, observed, expected)


def _laplace_pmf(scale):
    return lambda x: discrete_laplace_pmf(x, scale)


def _gaussian_pmf(sigma2):
    return lambda x: discrete_gaussian_pmf(x, sigma2)


# --------------------------------------------------------------------------- exact laws

def test_laplace_pmf_is_the_normalized_two_sided_geometric():
    # naive twin: (1 - q) / (1 + q) q^|x| summed over a wide window
    for scale in (Fraction(1, 3), 1, Fraction(1000, 7)):
        q = math.exp(-1 / float(scale))
        xs = np.arange(-20000, 20001)
        p = discrete_laplace_pmf(xs, scale)
        naive = (1 - q) / (1 + q) * q ** np.abs(xs)
        np.testing.assert_allclose(p, naive, rtol=1e-12, atol=0)
        assert abs(p.sum() - 1) < 1e-12


def test_gaussian_pmf_normalizer_against_a_long_sum_and_poisson_summation():
    for sigma2 in (Fraction(1, 10), 1, Fraction(5, 2), 400):
        s2 = float(sigma2)
        k = np.arange(-5000, 5001, dtype=float)
        terms = np.exp(-k * k / (2 * s2))
        naive = math.fsum(terms)
        assert abs(noise._gaussian_normalizer(s2) - naive) <= 1e-14 * naive
    # above 1e10 the normalizer switches to sqrt(2 pi sigma2); both agree at the switch
    s2 = 1e10
    assert abs(noise._gaussian_normalizer(s2) / math.sqrt(2 * math.pi * s2) - 1) < 1e-12


# --------------------------------------------------------------------------- parameters

@pytest.mark.parametrize("bad, exc", [
    (0, ValueError), (-1, ValueError), (float("nan"), ValueError), (float("inf"), ValueError),
    (-0.5, ValueError), ((1, 0), ValueError), ((-1, 2), ValueError),
    ("1", TypeError), (True, TypeError), (None, TypeError), ((1.0, 2), TypeError),
    ((1, 2, 3), TypeError), ([1], TypeError),
])
def test_bad_scale_is_refused_with_the_parameter_message(bad, exc):
    with pytest.raises(exc, match=r"The 'scale' parameter of discrete_laplace must be a "
                                  r"rational in \(0, inf\).* Got .* instead\."):
        discrete_laplace(bad, 3, rng=0)
    with pytest.raises(exc, match=r"The 'sigma2' parameter of discrete_gaussian must be"):
        discrete_gaussian(bad, 3, rng=0)


def test_gamma_may_be_zero_but_not_negative():
    assert bernoulli_exp(0, 50, rng=0).all()  # exp(-0) = 1: no draw can fail
    with pytest.raises(ValueError, match=r"The 'gamma' parameter of bernoulli_exp must be a "
                                         r"rational in \[0, inf\)"):
        bernoulli_exp(-1, rng=0)
    with pytest.raises(ValueError, match="'gamma'"):
        bernoulli_exp(float("nan"), rng=0)


def test_rationals_are_taken_exactly():
    assert noise.as_rational(0.1, "x", "f") == Fraction(3602879701896397, 2**55)
    assert noise.as_rational((6, 4), "x", "f") == Fraction(3, 2)
    assert noise.as_rational(np.int64(7), "x", "f") == 7
    assert noise.as_rational(Fraction(2, 3), "x", "f") == Fraction(2, 3)


def test_size_rng_and_method_are_checked():
    with pytest.raises(ValueError, match="'size' parameter of discrete_laplace"):
        discrete_laplace(1, -1)
    with pytest.raises(TypeError, match="'size' parameter of discrete_laplace"):
        discrete_laplace(1, 2.0)
    with pytest.raises(ValueError, match="'method' parameter of discrete_laplace"):
        discrete_laplace(1, 2, method="fast")
    with pytest.raises(ValueError, match="'rng' parameter of discrete_laplace"):
        discrete_laplace(1, 2, rng=-1)


def test_shapes_and_dtypes():
    x = discrete_laplace(3, (2, 3), rng=0)
    assert x.shape == (2, 3) and x.dtype == np.int64
    assert isinstance(discrete_laplace(3, rng=0), np.int64)
    assert isinstance(discrete_gaussian(3, rng=0), np.int64)
    assert isinstance(bernoulli_exp(Fraction(1, 2), rng=0), np.bool_)
    assert discrete_gaussian(3, 0, rng=0).shape == (0,)
    assert bernoulli_exp(1, (4, 0), rng=0).shape == (4, 0)


# --------------------------------------------------------------------------- the reference's law

@pytest.mark.parametrize("gamma", [Fraction(1, 3), 1, Fraction(5, 2),
                                   Fraction(10**20 + 1, 10**20)])
def test_reference_bernoulli_exp_frequency(gamma):
    # binomial tolerance: |freq - p| < 5 sqrt(p (1 - p) / n)
    n = 20_000
    p = math.exp(-float(gamma))
    freq = bernoulli_exp(gamma, n, rng=11, method="python").mean()
    assert abs(freq - p) < 5 * math.sqrt(p * (1 - p) / n)


@pytest.mark.parametrize("scale", [Fraction(1, 2), 3, Fraction(1000, 7)])
def test_reference_discrete_laplace_law(scale):
    _assert_law(discrete_laplace(scale, 20_000, rng=21, method="python"), _laplace_pmf(scale))


@pytest.mark.parametrize("sigma2", [Fraction(1, 4), Fraction(5, 2), 30])
def test_reference_discrete_gaussian_law(sigma2):
    _assert_law(discrete_gaussian(sigma2, 10_000, rng=31, method="python"), _gaussian_pmf(sigma2))


def test_reference_is_reproducible_from_a_seed():
    a = discrete_laplace(Fraction(7, 3), 200, rng=5, method="python")
    b = discrete_laplace(Fraction(7, 3), 200, rng=5, method="python")
    c = discrete_laplace(Fraction(7, 3), 200, rng=6, method="python")
    assert np.array_equal(a, b) and not np.array_equal(a, c)
