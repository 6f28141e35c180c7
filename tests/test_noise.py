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
from fastldp._random import as_generator
from fastldp._kernels import _noise
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


def test_discrete_laplace_neighbours_ratio_is_e_to_the_one_over_scale():
    # sensitivity 1: P[x + Z = y] / P[x' + Z = y] over y for x = 0, x' = 1 is
    # q^(|y - 1| - |y|) in {e^(1/t), e^(-1/t)}: the largest is e^(1/t), attained
    for scale in (Fraction(1, 3), 1, Fraction(1000, 7)):
        y = np.arange(-50, 51)
        log_ratio = (np.log(discrete_laplace_pmf(y, scale))
                     - np.log(discrete_laplace_pmf(y - 1, scale)))
        assert abs(log_ratio.max() - 1 / float(scale)) < 1e-9
        assert abs(log_ratio.min() + 1 / float(scale)) < 1e-9


@pytest.mark.parametrize("sigma2", [Fraction(1, 2), 1])
def test_discrete_gaussian_renyi_divergence_is_its_zcdp_claim(sigma2):
    # D_a(N_Z(0, s2) || N_Z(1, s2)) = a / (2 s2) + ln(Z_(1-a) / Z_0) / (a - 1) where
    # Z_c = sum_x exp(-(x - c)^2 / (2 s2)) <= Z_0 (Canonne et al. 2020, Sec. 2.3):
    # equal to the zCDP bound a rho, rho = 1 / (2 s2), at integer a, strictly below
    # between (the gap at s2 <= 1 is above 5e-9, far above the sum's rounding, 1e-15)
    # (|x| <= K, K^2 >= 600 s2: every pmf value is a normal float, and the terms left
    # out, centred at 1 - a >= -4, are below e^-190)
    s2 = float(sigma2)
    K = math.ceil(math.sqrt(600 * s2))
    x = np.arange(-K, K + 1)
    l0, l1 = np.log(discrete_gaussian_pmf(x, sigma2)), np.log(discrete_gaussian_pmf(x - 1, sigma2))

    def renyi(a):
        return math.log(math.fsum(np.exp(a * l0 + (1 - a) * l1))) / (a - 1)

    for a in (2, 3, 5):
        assert abs(renyi(a) - a / (2 * s2)) < 1e-12
    for a in (1.5, 2.5):
        assert renyi(a) < a / (2 * s2) - 1e-9


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


@pytest.mark.slow
@pytest.mark.parametrize("scale", [Fraction(1, 2), 3, Fraction(1000, 7)], ids=str)
def test_reference_discrete_laplace_law(scale):
    _assert_law(discrete_laplace(scale, 20_000, rng=21, method="python"), _laplace_pmf(scale))


@pytest.mark.slow
@pytest.mark.parametrize("sigma2", [Fraction(1, 4), Fraction(5, 2), 30])
def test_reference_discrete_gaussian_law(sigma2):
    _assert_law(discrete_gaussian(sigma2, 10_000, rng=31, method="python"), _gaussian_pmf(sigma2))


def test_reference_is_reproducible_from_a_seed():
    a = discrete_laplace(Fraction(7, 3), 200, rng=5, method="python")
    b = discrete_laplace(Fraction(7, 3), 200, rng=5, method="python")
    c = discrete_laplace(Fraction(7, 3), 200, rng=6, method="python")
    assert np.array_equal(a, b) and not np.array_equal(a, c)


# --------------------------------------------------------------------------- the compiled law

N = 1_000_000

LAPLACE_SCALES = [
    Fraction(1, 3),  # s > 1: Y = floor(X / s)
    1,               # t = 1: U = 0, only V and the sign
    10,
    Fraction(1000, 7),
    0.7,             # a float, exactly 3152519739159347 / 2**52: 64-bit uniforms
    Fraction(2**62 + 1, 2**62 - 3),  # t V >= 2**64 for V >= 4: the 128-bit division
]


@pytest.mark.parametrize("scale", LAPLACE_SCALES, ids=str)
def test_discrete_laplace_law(scale):
    _assert_law(discrete_laplace(scale, N, rng=101, method="compiled"), _laplace_pmf(scale))


GAUSSIAN_SIGMA2 = [Fraction(1, 4), 1, Fraction(5, 2), 30, Fraction(1000, 3)]


@pytest.mark.parametrize("sigma2", GAUSSIAN_SIGMA2, ids=str)
def test_discrete_gaussian_law(sigma2):
    _assert_law(discrete_gaussian(sigma2, N, rng=102, method="compiled"), _gaussian_pmf(sigma2))


@pytest.mark.parametrize("scale", [1, 10, Fraction(1000, 7)], ids=str)
def test_the_laplace_law_test_sees_a_scale_two_percent_off(scale):
    # the statistic of samples drawn at 1.02 * scale, scored against the law at
    # scale, passes the critical value of the law test at the same N and alpha
    off = discrete_laplace(Fraction(scale) * Fraction(51, 50), N, rng=101)
    stat, df = _chi2_stat(off, _laplace_pmf(scale))
    assert stat > stats.chi2.isf(ALPHA, df)


@pytest.mark.parametrize("sigma2", [1, 30], ids=str)
def test_the_gaussian_law_test_sees_a_variance_two_percent_off(sigma2):
    off = discrete_gaussian(Fraction(sigma2) * Fraction(51, 50), N, rng=102)
    stat, df = _chi2_stat(off, _gaussian_pmf(sigma2))
    assert stat > stats.chi2.isf(ALPHA, df)


def test_large_gaussian_variance_mean_and_variance():
    # sigma2 = 10**6: mean 0 within 5 sd (sd = sqrt(sigma2 / n)); the variance of
    # the discrete Gaussian differs from sigma2 by less than 1e-100 here, and the
    # sample variance has sd sigma2 sqrt(2 / n)
    n, s2 = 200_000, 10**6
    x = discrete_gaussian(s2, n, rng=103).astype(float)
    assert abs(x.mean()) < 5 * math.sqrt(s2 / n)
    assert abs(x.var() - s2) < 5 * s2 * math.sqrt(2 / n)


BERNOULLI_GAMMAS = [Fraction(1, 3), 1, Fraction(5, 2), 7, 0.1,
                    Fraction(2**62, 2**62 - 1)]  # b k overflows 64 bits from k = 4


@pytest.mark.parametrize("gamma", BERNOULLI_GAMMAS, ids=str)
def test_bernoulli_exp_frequency(gamma):
    # binomial tolerance: |freq - p| < 5 sqrt(p (1 - p) / n)
    p = math.exp(-float(gamma))
    freq = bernoulli_exp(gamma, N, rng=104, method="compiled").mean()
    assert abs(freq - p) < 5 * math.sqrt(p * (1 - p) / N)


def test_bernoulli_exp_edges():
    assert bernoulli_exp(0, 5000, rng=1, method="compiled").all()
    # exp(-10**18): floor(gamma) = 10**18 Bernoulli(exp(-1)) trials, stopped at the
    # first failure; a True here has probability exp(-10**18)
    assert not bernoulli_exp((10**18, 1), 5000, rng=1, method="compiled").any()


def test_discrete_laplace_is_symmetric():
    # among the non-zero samples the sign is a fair coin: 5 binomial sd
    x = discrete_laplace(Fraction(7, 2), N, rng=105)
    pos, neg = int((x > 0).sum()), int((x < 0).sum())
    m = pos + neg
    assert abs(pos - m / 2) < 5 * math.sqrt(m / 4)
    # and each |x| = k in 1..15 splits evenly too: chi-square of the positive and
    # negative counts against their mean, 15 degrees of freedom (one per k)
    pc = np.bincount(x[x > 0], minlength=16)[1:16]
    nc = np.bincount(-x[x < 0], minlength=16)[1:16]
    half = (pc + nc) / 2
    stat = float((((pc - half) ** 2 + (nc - half) ** 2) / half).sum())
    assert stats.chi2.sf(stat, 15) > ALPHA


@pytest.mark.slow
@pytest.mark.parametrize("sampler, param, pmf", [
    (discrete_laplace, Fraction(10, 3), _laplace_pmf(Fraction(10, 3))),
    (discrete_gaussian, Fraction(5, 2), _gaussian_pmf(Fraction(5, 2))),
], ids=["laplace", "gaussian"])
def test_reference_and_kernel_follow_one_law(sampler, param, pmf):
    # two-sample chi-square (contingency table) on the bins of the law test
    ref = sampler(param, 20_000, rng=106, method="python")
    fast = sampler(param, 200_000, rng=107, method="compiled")
    observed, _ = _binned(np.concatenate([ref, fast]), pmf)
    L = (observed.size - 1) // 2
    table = np.array([np.bincount(np.clip(ref, -L, L) + L, minlength=2 * L + 1),
                      np.bincount(np.clip(fast, -L, L) + L, minlength=2 * L + 1)])
    assert stats.chi2_contingency(table).pvalue > ALPHA


# --------------------------------------------------------------------------- streams

def test_compiled_samples_are_reproducible_and_the_generator_advances():
    a = discrete_laplace(Fraction(7, 3), 5000, rng=5)
    assert np.array_equal(a, discrete_laplace(Fraction(7, 3), 5000, rng=5))
    assert not np.array_equal(a, discrete_laplace(Fraction(7, 3), 5000, rng=6))
    gen = as_generator(5)  # the Generator rng=5 builds (keyed, issue 37)
    b = discrete_laplace(Fraction(7, 3), 5000, rng=gen)
    assert np.array_equal(a, b)  # the key is the Generator's first 64-bit draw
    assert not np.array_equal(b, discrete_laplace(Fraction(7, 3), 5000, rng=gen))
    ss = np.random.SeedSequence(9)
    assert np.array_equal(discrete_gaussian(3, 100, rng=ss), discrete_gaussian(3, 100, rng=ss))


@pytest.mark.parametrize("sampler, param", [(discrete_laplace, Fraction(1000, 7)),
                                            (discrete_gaussian, Fraction(5, 2)),
                                            (bernoulli_exp, Fraction(1, 3))])
def test_samples_do_not_depend_on_the_thread_count(sampler, param):
    n = 7 * noise.BLOCK + 17
    one = sampler(param, n, rng=8, n_threads=1)
    for threads in (2, 3):
        assert np.array_equal(one, sampler(param, n, rng=8, n_threads=threads))
    # block b reads stream (key, b) only: a shorter request is a prefix
    assert np.array_equal(one[: 2 * noise.BLOCK + 5], sampler(param, 2 * noise.BLOCK + 5, rng=8))


def test_compiled_method_refuses_what_the_kernel_cannot_hold():
    with pytest.raises(ValueError, match="'scale' parameter of discrete_laplace"):
        discrete_laplace(Fraction(2**63, 3), 2, rng=0, method="compiled")
    with pytest.raises(ValueError, match="'sigma2' parameter of discrete_gaussian"):
        discrete_gaussian(0.1, 2, rng=0, method="compiled")  # q = 2**55: 2 p q t^2 >= 2**63
    # auto falls back to the exact reference
    assert discrete_laplace(Fraction(2**63, 3), 3, rng=0).dtype == np.int64
    with pytest.raises(ValueError, match="must be in"):
        _noise.discrete_laplace(1, 0, 1, 3)
    with pytest.raises(ValueError, match="2 p q t"):
        _noise.discrete_gaussian(1, 2**40, 2**20, 3)


def test_a_sample_outside_int64_raises_instead_of_wrapping():
    # scale 2**62: |X| >= 2**63 has probability about exp(-2) per sample, so 1000
    # samples overflow at any seed (all fit with probability below 1e-60)
    with pytest.raises(OverflowError, match="outside int64"):
        discrete_laplace(2**62, 1000, rng=0)
    with pytest.raises(OverflowError, match="outside int64"):
        discrete_laplace(2**62, 1000, rng=0, method="python")


# --------------------------------------------------------------------------- naive twin

class _TwinStream:
    """The documented use of the Philox words, on numpy.random.Philox (not the kernel's)."""

    def __init__(self, key: int, block: int):
        # numpy's Philox returns philox(counter + 1, key): start one before (0, 4, 0, 0)
        self.gen = np.random.Philox(key=key + (block << 64), counter=(4 << 64) - 1)
        self.words: list = []
        self.bits = 0
        self.nbits = 0
        self.half = None

    def word64(self) -> int:
        if not self.words:
            self.words = [int(w) for w in self.gen.random_raw(4)]
        return self.words.pop(0)

    def word32(self) -> int:
        if self.half is not None:
            h, self.half = self.half, None
            return h
        x = self.word64()
        self.half = x >> 32
        return x & 0xFFFFFFFF

    def take_bits(self, j: int) -> int:
        if self.nbits < j:
            self.bits, self.nbits = self.word64(), 64
        r = self.bits & ((1 << j) - 1)
        self.bits >>= j
        self.nbits -= j
        return r

    def below(self, n: int) -> int:
        # Lemire's multiply-and-reject, with arbitrary-precision integers
        if n <= 1:
            return 0
        if n & (n - 1) == 0 and n <= 2**32:
            return self.word32() if n == 2**32 else self.take_bits(n.bit_length() - 1)
        width, draw = (32, self.word32) if n <= 2**32 else (64, self.word64)
        threshold = (2**width) % n
        while True:
            m = draw() * n
            if m % 2**width >= threshold:
                return m >> width

    def bernoulli(self, a: int, d: int) -> bool:
        return a > 0 and (a >= d or self.below(d) < a)

    def bexp_frac(self, a: int, b: int) -> bool:
        if a == 0:
            return True
        k = 1
        while True:
            if b * k < 2**64:
                ok = self.bernoulli(a, b * k)
            else:
                ok = self.bernoulli(a, b) and self.below(k) == 0
            if not ok:
                return k % 2 == 1
            k += 1

    def bexp_one(self) -> bool:
        k = 2
        while self.below(k) == 0:
            k += 1
        return k % 2 == 1

    def bexp(self, a: int, b: int) -> bool:
        for _ in range(a // b):
            if not self.bexp_one():
                return False
        return self.bexp_frac(a % b, b)

    def laplace(self, t: int, s: int) -> int:
        while True:
            u = self.below(t)
            if not self.bexp_frac(u, t):
                continue
            v = 0
            while self.bexp_one():
                v += 1
            y = (u + t * v) // s
            negative = self.take_bits(1)
            if negative and y == 0:
                continue
            return -y if negative else y

    def gaussian(self, p: int, q: int) -> int:
        t = math.isqrt(p * q) // q + 1
        D = 2 * p * q * t * t
        while True:
            y = self.laplace(t, 1)
            num = (abs(y) * q * t - p) ** 2
            if self.bexp(num, D):
                return y


def _twin(method: str, key: int, n: int, *params) -> list:
    out = []
    for start in range(0, n, _noise.BLOCK):
        stream = _TwinStream(key, start // _noise.BLOCK)
        out += [getattr(stream, method)(*params) for _ in range(min(_noise.BLOCK, n - start))]
    return out


@pytest.mark.parametrize("t, s", [(1, 1), (10, 1), (1000, 7), (1, 3), (3152519739159347, 2**52),
                                  (2**62 + 1, 2**62 - 3), (2**32, 1), (2**32 + 1, 5)])
def test_kernel_laplace_matches_its_naive_twin_word_for_word(t, s):
    key, n = 0xDEADBEEFCAFEF00D, _noise.BLOCK + 300
    got = _noise.discrete_laplace(key, t, s, n, 2)
    assert got.tolist() == _twin("laplace", key, n, t, s)


@pytest.mark.parametrize("p, q", [(1, 4), (5, 2), (30, 1), (1000, 3), (7, 1000)])
def test_kernel_gaussian_matches_its_naive_twin_word_for_word(p, q):
    key, n = 12345, _noise.BLOCK + 300
    assert _noise.discrete_gaussian(key, p, q, n, 2).tolist() == _twin("gaussian", key, n, p, q)


@pytest.mark.parametrize("a, b", [(0, 1), (1, 3), (5, 2), (7, 1), (2**62, 2**62 - 1)])
def test_kernel_bernoulli_exp_matches_its_naive_twin_word_for_word(a, b):
    key, n = 777, _noise.BLOCK + 300
    assert _noise.bernoulli_exp(key, a, b, n, 2).tolist() == _twin("bexp", key, n, a, b)
