"""SHE and THE: the Laplace tails, the exact ratio of THE in floats, the optimal threshold,
the samplers against naive twins, exact sums, sanitization, streaming, report files, audits
and the variance formulas by simulation."""

import math
import pickle
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats
from scipy.optimize import minimize_scalar

from _merging import merge_in_order
from fastldp import audit
from fastldp._random import as_generator
from fastldp.oracles import _laws as laws
from fastldp.audit.exact import audit_law
from fastldp.oracles import SHE, THE, FrequencyEstimate
from fastldp.oracles.histogram_encoding import (
    GOLDEN_STEPS, OUT_OF_RANGE_SCALES, optimal_threshold, the_probabilities, the_variance,
)
from fastldp.oracles.unary import UnaryEncoding
from fastldp.streaming import Partial

EPS_GRID = [0.05, 0.3, 1.0, 2.0, 4.0, 8.0, 20.0]
ULP = 2.0**-52


def make_the(D=4, eps=1.0, **kw):
    return THE(domain_size=D, epsilon=eps, codebook_seed=3, n_threads=1, **kw)


def make_she(D=4, eps=1.0, **kw):
    return SHE(domain_size=D, epsilon=eps, codebook_seed=3, **kw)


def _same(a, b):
    return a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()


def _fsum_columns(rows):
    return np.array([math.fsum(rows[:, v]) for v in range(rows.shape[1])])


# ---------------------------------------------------------------- THE: constants
@pytest.mark.parametrize("eps", EPS_GRID)
@pytest.mark.parametrize("theta", [0.0, 0.25, 0.5, 0.62, 0.9, 1.0])
def test_the_probabilities_are_the_laplace_tails(eps, theta):
    # p = P(1 + L > theta) = 1 - F(theta - 1), q = P(L > theta) = 1 - F(theta), L ~ Lap(2/eps)
    p, q = the_probabilities(eps, theta)
    lap = stats.laplace(scale=2.0 / eps)
    assert float(p) == pytest.approx(lap.sf(theta - 1.0), rel=1e-12)
    assert float(q) == pytest.approx(lap.sf(theta), rel=1e-12)


def test_the_variance_equals_an_independent_form_of_the_formula():
    # q (1 - q) / (p - q)^2 rewritten in a = eps theta / 2 (the form pure-ldp minimizes):
    # (2 e^a - 1) / (1 + e^(eps (theta - 1/2)) - 2 e^a)^2
    for eps in EPS_GRID[:-1]:
        for theta in np.linspace(0.5, 1.0, 11):
            a = eps * theta / 2
            e_a = math.exp(a)
            other = (2 * e_a - 1) / (1 + math.exp(eps * (theta - 0.5)) - 2 * e_a) ** 2
            assert float(the_variance(eps, theta)) == pytest.approx(other, rel=1e-9)
    # and to the oracle's own variances (unary encoding's formula on THE's p, q)
    o = make_the(eps=2.0)
    assert float(o.variances(np.array([2.0]))[0]) == pytest.approx(
        float(the_variance(2.0, o.threshold)), rel=1e-12)


@pytest.mark.parametrize("eps", EPS_GRID)
def test_optimal_threshold_minimizes_the_variance(eps):
    theta = float(optimal_threshold(eps))
    assert 0.5 < theta < 1.0
    grid = np.linspace(0.5, 1.0, 50_001)
    v = the_variance(eps, grid)
    assert float(the_variance(eps, theta)) <= v.min() * (1 + 1e-12)
    # an independent minimizer (Brent, bounded) agrees where the variance is not flat
    brent = minimize_scalar(lambda t: float(the_variance(eps, t)), bounds=(0.5, 1.0),
                            method="bounded", options={"xatol": 1e-10}).x
    assert abs(theta - brent) < 1e-4
    # and a threshold a little off costs variance: the search is not returning an endpoint
    assert float(the_variance(eps, min(theta + 0.05, 1.0))) > float(the_variance(eps, theta))
    assert float(the_variance(eps, theta - 0.05)) > float(the_variance(eps, theta))


def test_optimal_threshold_is_elementwise_and_documented():
    many = optimal_threshold([0.3, 1.0, 7.0, 1.0])
    assert many[1] == many[3] == optimal_threshold(1.0) == optimal_threshold([1.0])[0]
    assert optimal_threshold(np.full((2, 3), 2.0)).shape == (2, 3)
    assert 0.5 * 0.6180339887 ** GOLDEN_STEPS < 1e-12
    # larger budgets push the threshold up (q falls faster than p - q)
    assert np.all(np.diff(optimal_threshold([0.5, 1.0, 2.0, 4.0, 8.0])) > 0)


# ---------------------------------------------------------------- THE: exact privacy
@pytest.mark.parametrize("eps", EPS_GRID + [40.0, 60.0])
@pytest.mark.parametrize("theta", [None, 0.5, 0.75, 0.99, 0.01])
def test_the_report_ratio_is_at_most_e_eps_exactly_in_floats(eps, theta):
    """``p (1 - q) / (q (1 - p))`` of the binary64 p and q, as an exact rational, is at
    most ``e^eps`` within a few ulps; it is the closed form and strictly inside."""
    o = make_the(eps=eps, threshold=theta)
    p, q = (float(v[0]) for v in o._pq(np.array([eps])))
    ratio = Fraction(p) * (1 - Fraction(q)) / (Fraction(q) * (1 - Fraction(p)))
    assert float(ratio) <= math.exp(eps) * (1 + 4 * ULP)
    t = o.threshold
    closed = (2 * math.exp((1 - t) * eps / 2) - 1) * (2 * math.exp(t * eps / 2) - 1)
    if min(1 - p, q) > 1e-6:  # else 1 - p carries few digits: the ratio is far inside anyway
        assert float(ratio) == pytest.approx(closed, rel=1e-9)
    assert float(ratio) < math.exp(eps) * (1 - 1e-9)  # thresholding loses budget


def test_the_refuses_budgets_whose_bits_are_not_random_in_binary64():
    # p = 1 - exp(-(1 - theta) eps / 2) / 2 rounds to 1 (the held bit always set: the
    # realized ratio is infinite) or q < 2^-64 (the sampler never sets another bit)
    with pytest.raises(ValueError, match=r"'epsilon' parameter of THE .*binary64"):
        make_the(eps=100.0, threshold=0.01)
    with pytest.raises(ValueError, match=r"'epsilon' parameter of THE .*binary64"):
        make_the(eps=700.0)
    o = THE(domain_size=4, epsilon=None, threshold=0.5, codebook_seed=1)
    with pytest.raises(ValueError, match=r"'epsilons' parameter of THE.privatize .*at index 1"):
        o.privatize([0, 1], epsilons=[1.0, 200.0], rng=0)


@pytest.mark.parametrize("eps", [0.5, 1.0, 2.5])
def test_the_channel_on_every_bit_vector_and_its_exact_audit(eps):
    o = make_the(D=4, eps=eps)
    law = o.channel(eps)
    assert law.shape == (4, 16)
    np.testing.assert_allclose(law.sum(axis=1), 1.0, rtol=1e-12)
    ratio = (law.max(axis=0) / law.min(axis=0)).max()
    t = o.threshold
    closed = (2 * math.exp((1 - t) * eps / 2) - 1) * (2 * math.exp(t * eps / 2) - 1)
    assert ratio == pytest.approx(closed, rel=1e-12) and ratio < math.exp(eps)
    # the audit's law, written apart, is the same table; in rationals it holds at eps,
    # strictly inside, and a THE built at 1.5 eps fails the claim eps
    audited = laws.the_law(4, eps, t, [0])
    cols = [sum(b << v for v, b in enumerate(bits)) for bits in audited.outputs]
    np.testing.assert_allclose(audited.probs[0], law[:, cols], rtol=1e-15, atol=0)
    res = audit_law(audited, eps)
    assert res.holds and res.epsilon_audited < eps
    assert res.epsilon_audited == pytest.approx(math.log(closed), rel=1e-12)
    loud = make_the(D=4, eps=1.5 * eps)
    assert not audit_law(laws.the_law(4, 1.5 * eps, loud.threshold, [0]), eps).holds


@pytest.mark.parametrize("eps", [0.5, 2.0])
def test_the_exact_mean_and_variance_of_one_report(eps):
    D = 4
    o = make_the(D=D, eps=eps)
    law = o.channel(eps)
    reports = o.pack_outputs(np.arange(2**D))
    c = np.stack([o.aggregate(reports[y:y + 1], np.array([eps]), np.zeros(1, np.uint64),
                              np.ones(1)) for y in range(2**D)])
    mean = law @ c
    var = law @ c**2 - mean**2
    np.testing.assert_allclose(mean, np.eye(D), atol=1e-12)
    off = ~np.eye(D, dtype=bool)
    np.testing.assert_allclose(var[off], o.variances(np.array([eps]))[0], rtol=1e-10)
    np.testing.assert_allclose(np.diag(var), o.held_variances(np.array([eps]))[0], rtol=1e-10)


def test_the_sampler_draws_the_bits_of_thresholded_laplace_noise():
    """The naive twin: the one-hot vector plus Lap(2/eps), thresholded at theta. Both
    samplers follow the exact law of THE's bit vectors (chi-square over all 8 vectors)."""
    D, eps, n, x = 3, 1.2, 60_000, 1
    o = make_the(D=D, eps=eps)
    law = o.channel(eps)[x]
    rng = np.random.default_rng(0)
    noisy = np.eye(D)[np.full(n, x)] + rng.laplace(0.0, 2.0 / eps, (n, D))
    twin = (noisy > o.threshold) @ (1 << np.arange(D))
    bits = np.unpackbits(o.privatize(np.full(n, x), rng=1), axis=1, count=D, bitorder="little")
    ours = bits @ (1 << np.arange(D))
    for y in (twin, ours):
        assert stats.chisquare(np.bincount(y, minlength=2**D), n * law).pvalue > 1e-4
    # the test bites: a threshold off by 0.1 is rejected
    off = (noisy > o.threshold + 0.1) @ (1 << np.arange(D))
    assert stats.chisquare(np.bincount(off, minlength=2**D), n * law).pvalue < 1e-6


def test_the_reports_are_oue_layout_and_its_server_is_the_bit_count():
    D, eps = 21, 1.5
    o = make_the(D=D, eps=eps)
    x = np.arange(600) % D
    y = o.privatize(x, rng=2)
    assert y.shape == (600, 3) and y.dtype == np.uint8
    assert not (y[:, -1] & np.uint8(0xE0)).any()  # padding bits zero
    bits = np.unpackbits(y, axis=1, count=D, bitorder="little").sum(axis=0)
    p, q = (float(v[0]) for v in o._pq(np.array([eps])))
    np.testing.assert_allclose(o.estimate(y).counts, (bits - 600 * q) / (p - q), rtol=1e-12)
    assert isinstance(o, UnaryEncoding)  # THE reuses unary encoding's rows, server, sanitizer


def test_the_threshold_parameter():
    o = make_the(eps=2.0)
    assert o.threshold == float(optimal_threshold(2.0)) and "threshold" not in repr(o)
    assert o.stream_params()["threshold"] is None
    fixed = make_the(eps=2.0, threshold=0.6)
    assert fixed.threshold == 0.6 and "threshold=0.6" in repr(fixed)
    assert fixed.stream_params()["threshold"] == 0.6
    p, q = fixed._pq(np.array([0.5, 2.0]))
    np.testing.assert_allclose(q, 0.5 * np.exp(-0.6 * np.array([0.5, 2.0]) / 2), rtol=1e-15)
    # personal budgets use their own optimal threshold unless one is given
    free = THE(domain_size=4, epsilon=None, codebook_seed=1)
    assert free.threshold is None
    np.testing.assert_array_equal(free.thresholds(np.array([1.0, 3.0])),
                                  optimal_threshold([1.0, 3.0]))
    for bad in (0.0, 1.0, -0.2, float("nan"), 2):
        with pytest.raises(ValueError, match="'threshold' parameter of THE must be a float in "
                                             r"\(0.0, 1.0\)"):
            make_the(threshold=bad)
    with pytest.raises(TypeError, match="'threshold' parameter of THE"):
        make_the(threshold="0.7")


def test_the_personal_budgets_are_unbiased_and_summarized():
    D, n = 6, 30_000
    o = THE(domain_size=D, epsilon=None, codebook_seed=2, n_threads=2)
    rng = np.random.default_rng(5)
    eps = rng.choice([0.5, 1.0, 3.0], n)
    x = rng.integers(0, D, n)
    est = o.estimate(o.privatize(x, epsilons=eps, rng=6), epsilons=eps)
    truth = np.bincount(x, minlength=D)
    assert np.all(np.abs(est.counts - truth) < 5 * est.std)
    assert est.privacy.personal and est.privacy.epsilon_min == 0.5


def test_the_results_do_not_depend_on_the_thread_count():
    x = np.arange(5000) % 40
    a = THE(domain_size=40, epsilon=1.0, codebook_seed=1, n_threads=1)
    b = THE(domain_size=40, epsilon=1.0, codebook_seed=1, n_threads=2)
    ya, yb = a.privatize(x, rng=3), b.privatize(x, rng=3)
    assert _same(ya, yb)
    assert _same(a.estimate(ya).counts, b.estimate(ya).counts)


# ---------------------------------------------------------------- SHE: the mechanism
def test_she_reports_are_the_one_hot_vector_plus_laplace_noise():
    D, eps, n = 5, 1.5, 40_000
    o = make_she(D=D, eps=eps)
    x = np.arange(n) % D
    y = o.privatize(x, rng=4)
    assert y.shape == (n, D) and y.dtype == np.float64
    noise = y - np.eye(D)[x]
    assert stats.kstest(noise.ravel()[:100_000], stats.laplace(scale=2.0 / eps).cdf).pvalue > 1e-4
    # the test bites: noise of the wrong scale (sensitivity 1) is rejected
    assert stats.kstest(noise.ravel()[:100_000], stats.laplace(scale=1.0 / eps).cdf).pvalue < 1e-6
    # personal budgets scale each row's noise
    eps_i = np.where(np.arange(n) % 2 == 0, 0.5, 4.0)
    z = o.privatize(x, epsilons=eps_i, rng=5) - np.eye(D)[x]
    for level in (0.5, 4.0):
        rows = z[eps_i == level].ravel()[:50_000]
        assert stats.kstest(rows, stats.laplace(scale=2.0 / level).cdf).pvalue > 1e-4


def test_she_counts_are_the_exact_column_sums_and_variances_exact():
    D, n = 7, 3000
    o = make_she(D=D, eps=0.8)
    rng = np.random.default_rng(8)
    y = o.privatize(rng.integers(0, D, n), rng=9)
    est = o.estimate(y)
    assert isinstance(est, FrequencyEstimate)
    assert _same(est.counts, _fsum_columns(y))  # correctly rounded, whatever the order
    assert _same(o.estimate(y[::-1].copy()).counts, est.counts)
    np.testing.assert_array_equal(est.variances, np.full(D, n * 8 / 0.8**2))
    # personal budgets: the counts are the same sums, the variance the exact sum of 8/eps_i^2
    eps = rng.uniform(0.3, 3.0, n)
    y2 = o.privatize(rng.integers(0, D, n), epsilons=eps, rng=10)
    est2 = o.estimate(y2, epsilons=eps)
    assert _same(est2.counts, _fsum_columns(y2))
    np.testing.assert_array_equal(est2.variances, np.full(D, math.fsum(8 / eps**2)))


def test_she_is_unbiased():
    D, n = 6, 20_000
    o = make_she(D=D, eps=2.0)
    x = np.random.default_rng(1).integers(0, D, n)
    est = o.estimate(o.privatize(x, rng=2))
    truth = np.bincount(x, minlength=D)
    assert np.all(np.abs(est.counts - truth) < 5 * est.std)


def test_she_client_is_the_kernel_keyed_by_the_generator_and_thread_free():
    from fastldp._kernels._encoding import she_perturb
    D, n = 13, 2000
    x = np.random.default_rng(3).integers(0, D, n)
    eps = np.random.default_rng(4).uniform(0.2, 5.0, n)
    rows = SHE(domain_size=D, epsilon=1.0, codebook_seed=3, n_threads=2).privatize(
        x, epsilons=eps, rng=11)
    key = as_generator(11).integers(0, 2**64, size=2, dtype=np.uint64)  # rng=11's Generator
    want = she_perturb(int(key[0]), int(key[1]), x.astype(np.int64), 2.0 / eps, D, 1)
    assert _same(rows, want)
    one = SHE(domain_size=D, epsilon=1.0, codebook_seed=3, n_threads=1)
    assert _same(one.privatize(x, epsilons=eps, rng=11), rows)


@pytest.mark.parametrize("budgets", ["equal", "mixed"])
def test_she_server_kernel_equals_the_digit_by_digit_sums(budgets):
    # the fused pass (legality + exact sums) against sanitize() and ExactSum.add of the
    # clean rows: the same exact numbers, with hostile entries and illegal rows
    D, n = 9, 4100
    o = SHE(domain_size=D, epsilon=1.0, codebook_seed=5, n_threads=2)
    rng = np.random.default_rng(6)
    eps = None if budgets == "equal" else rng.choice([1.0, 0.4, 3.0], n)
    ids = np.arange(n, dtype=np.uint64) + 7
    y = o.privatize(rng.integers(0, D, n), epsilons=eps, rng=7)
    bound = OUT_OF_RANGE_SCALES * (2.0 / (np.ones(n) if eps is None else eps))  # as _bounds
    y[rng.random((n, D)) < 0.05] = 0.0
    y[rng.random((n, D)) < 0.05] = -0.0
    y[rng.random((n, D)) < 0.05] = 5e-324
    y[rng.random((n, D)) < 0.05] = -1e-310
    edge = np.flatnonzero(rng.random(n) < 0.02)
    y[edge, 0] = 1.0 + bound[edge]   # on the bound: legal
    y[edge, 1] = -bound[edge]
    y[[5, 6, 7], [0, 3, 8]] = [np.nan, np.inf, 1.0 + bound[7] * (1 + 2**-40)]
    part = o.partial(y, eps, ids)
    all_eps = np.full(n, 1.0) if eps is None else eps
    clean, report = o.sanitize(y, all_eps, ids, "t")
    assert report.n_valid == n - 3
    fixed = all_eps == 1.0
    assert part.sums["hits"] == o._slow_sums(clean[fixed] if eps is not None else clean)
    if eps is not None:
        assert part.sums["support"] == o._slow_sums(clean[~fixed])
    for threads in (1, 2):
        again = SHE(domain_size=D, epsilon=1.0, codebook_seed=5, n_threads=threads)
        assert again.partial(y, eps, ids) == part
    want = o.estimate(y, epsilons=eps, identities=ids).counts
    assert _same(want, _fsum_columns(clean))


def test_she_weighted_sums_are_exact_products_summed():
    D, n = 5, 3000
    o = SHE(domain_size=D, epsilon=None, codebook_seed=1)
    rng = np.random.default_rng(8)
    eps = rng.uniform(0.5, 2.0, n)
    y = o.privatize(rng.integers(0, D, n), epsilons=eps, rng=9)
    lam = rng.uniform(0.0, 4.0, n)
    support, offset = o.weighted_sums(y, eps, np.arange(n, dtype=np.uint64), lam)
    assert support == o._slow_sums(y, lam) and not offset.value().any()
    assert _same(support.value(), _fsum_columns(y * lam[:, None]))
    # weights too large for the kernel's grids (beta > 850): summed digit by digit, as exactly
    huge = lam * 1e290
    support, _ = o.weighted_sums(y, eps, np.arange(n, dtype=np.uint64), huge)
    assert _same(support.value(), _fsum_columns(y * huge[:, None]))


# ---------------------------------------------------------------- SHE: sanitization
def test_she_sanitizes_malformed_rows_publicly_and_counts_them():
    D, n, eps = 4, 40, 1.0
    o = make_she(D=D, eps=eps)
    y = o.privatize(np.arange(n) % D, rng=0)
    bound = OUT_OF_RANGE_SCALES * 2.0 / eps
    bad = y.copy()
    bad[3, 1] = np.nan
    bad[5, 0] = np.inf
    bad[7, 2] = 1.0 + bound * 1.001          # beyond any Laplace draw
    bad[8, 3] = -bound * 1.001
    bad[9, 0] = 1.0 + bound * 0.999          # legal: inside the bound
    ids = np.arange(100, 100 + n, dtype=np.uint64)
    est = o.estimate(bad, identities=ids)
    san = est.sanitization
    assert san.n_received == n and san.n_valid == n - 4
    assert san.by_reason == {"non_numeric": 0, "non_finite": 2, "out_of_range": 2}
    clean, _ = o.sanitize(bad, np.full(n, eps), ids, "t")
    replaced = o.public_rows(ids[[3, 5, 7, 8]], np.full(4, 2.0 / eps))
    np.testing.assert_array_equal(clean[[3, 5, 7, 8]], replaced)
    np.testing.assert_array_equal(np.delete(clean, [3, 5, 7, 8], axis=0),
                                  np.delete(bad, [3, 5, 7, 8], axis=0))
    assert _same(est.counts, _fsum_columns(clean))
    # an object array with strings and None: non_numeric, never an exception
    obj = y.astype(object)
    obj[0, 0], obj[1, 3], obj[2, 2] = "x", None, 3 + 1j
    obj[4, 1] = float("nan")
    est = o.estimate(obj)
    assert est.sanitization.by_reason == {"non_numeric": 3, "non_finite": 1, "out_of_range": 0}
    assert est.sanitization.wrong_dtype
    # integer and float32 reports are numbers
    assert o.estimate(y.astype(np.float32)).sanitization.n_valid == n
    assert o.estimate(np.zeros((n, D), dtype=np.int64)).sanitization.n_valid == n
    # only a wrong shape raises
    for shape in ((n, D + 1), (n,), (n - 1, D)):  # the last: one report short of the budgets
        with pytest.raises(ValueError, match=r"('reports'|'epsilons') parameter of SHE\.estimate"):
            o.estimate(np.zeros(shape), epsilons=np.full(n, eps))


def test_she_public_rows_are_laplace_noise_keyed_by_seed_and_identity():
    o = make_she(D=50, eps=1.0)
    ids = np.arange(4000, dtype=np.uint64)
    rows = o.public_rows(ids, np.full(4000, 2.0))
    assert stats.kstest(rows.ravel(), stats.laplace(scale=2.0).cdf).pvalue > 1e-4
    np.testing.assert_array_equal(rows[10], o.public_rows(ids[10:11], np.array([2.0]))[0])
    other = SHE(domain_size=50, epsilon=1.0, codebook_seed=4).public_rows(ids[:5], np.full(5, 2.0))
    assert not np.array_equal(other, rows[:5])


# ---------------------------------------------------------------- SHE: streaming
N = 240


def _she_case(budgets, malformed, seed=0):
    o = SHE(domain_size=9, epsilon=1.0, codebook_seed=7)
    rng = np.random.default_rng(100 + seed)
    eps = {"equal": None, "continuous": rng.uniform(0.3, 3.0, N),
           "levels": rng.choice([0.5, 1.0, 2.5], N)}[budgets]
    ids = rng.choice(2**40, size=N, replace=False).astype(np.uint64)
    y = o.privatize(rng.integers(0, 9, N), epsilons=eps, identities=ids, rng=rng)
    if malformed == "same-dtype":
        y[rng.choice(N, 6, replace=False), 2] = [np.nan, np.inf, -np.inf, 1e300, -1e300, np.nan]
    elif malformed == "object":
        y = y.astype(object)
        y[rng.choice(N, 5, replace=False), 1] = ["x", None, np.nan, 3 + 1j, 1e301]
    return o, y, eps, ids


@pytest.mark.parametrize("malformed", ["none", "same-dtype", "object"])
@pytest.mark.parametrize("budgets", ["equal", "continuous", "levels"])
@settings(max_examples=15, deadline=None, derandomize=True)
@given(cuts=st.lists(st.integers(0, N), max_size=5),
       mode=st.sampled_from(["sequential", "balanced", "tree"]), seed=st.integers(0, 2**32 - 1))
def test_she_split_and_merge_is_bit_identical(budgets, malformed, cuts, mode, seed):
    o, y, eps, ids = _she_case(budgets, malformed)
    want = o.estimate(y, epsilons=eps, identities=ids)
    b = [0, *sorted(cuts), N]
    parts = [o.partial(y[a:c], None if eps is None else eps[a:c], ids[a:c])
             for a, c in zip(b[:-1], b[1:])]
    got = o.finalize(merge_in_order(o, parts, mode, seed))
    assert _same(got.counts, want.counts) and _same(got.variances, want.variances)
    assert got.sanitization == want.sanitization and got.n == N
    if malformed != "none":
        assert want.sanitization.n_valid < N


def test_she_partials_of_mixed_budgets_and_round_trips():
    o, y, _, ids = _she_case("equal", "none")
    rng = np.random.default_rng(3)
    eps = rng.choice([1.0, 0.5, 2.5], N)  # the oracle's budget mixed with others
    y = o.privatize(rng.integers(0, 9, N), epsilons=eps, identities=ids, rng=4)
    want = o.estimate(y, epsilons=eps, identities=ids)
    parts = [o.partial(y[:100], eps[:100], ids[:100]), o.partial(y[100:], eps[100:], ids[100:])]
    parts = [Partial.from_bytes(p.to_bytes()) for p in parts]
    got = o.finalize(pickle.loads(pickle.dumps(o.merge(parts[1], parts[0]))))
    assert _same(got.counts, want.counts) and _same(got.variances, want.variances)
    # equal personal budgets are the equal-budget decode, bit for bit
    yy = o.privatize(np.arange(N) % 9, rng=5)
    assert o.partial(yy, np.full(N, 1.0)) == o.partial(yy)
    empty = o.partial(yy[:0], None, ids[:0])
    zero = o.finalize(empty)
    assert zero.n == 0 and not zero.counts.any() and not zero.variances.any()
    assert o.merge(empty, o.partial(yy)) == o.partial(yy)
    twin = SHE(**o.stream_params())
    assert twin.stream_params() == o.stream_params() == {"domain_size": 9, "epsilon": 1.0,
                                                         "codebook_seed": 7}
    assert _same(twin.finalize(o.partial(yy)).counts, o.estimate(yy).counts)
    with pytest.raises(ValueError, match="cannot be finalized here"):
        SHE(domain_size=9, epsilon=2.0, codebook_seed=7).finalize(o.partial(yy))


def test_she_state_has_one_position_per_symbol():
    o = SHE(domain_size=33, epsilon=1.0, codebook_seed=1)
    p = o.partial(o.privatize(np.arange(2000) % 33, rng=0))
    assert p.sums["hits"].size == p.sums["support"].size == 33
    assert p.sums["var"].size == p.sums["offset"].size == 1
    assert set(p.counts) == {"n", "n_valid", "reason:non_numeric", "reason:non_finite",
                             "reason:out_of_range", "personal"}


# ---------------------------------------------------------------- report files
@pytest.mark.parametrize("cls", [SHE, THE])
def test_report_files_decode_bit_identically(tmp_path, cls):
    pytest.importorskip("pyarrow")
    from fastldp.mechanisms import from_spec, mechanism_spec
    from fastldp.reports import ReportFile, decode_files, write_reports

    o = cls(domain_size=12, epsilon=1.5, codebook_seed=4)
    y = o.privatize(np.arange(700) % 12, rng=1)
    if cls is SHE:
        y[[3, 300]] = np.nan  # malformed rows, sanitized the same way from the file
    path = write_reports(tmp_path / "r.parquet", o, y, row_group_size=200)
    server = from_spec(ReportFile(path).spec)
    assert mechanism_spec(server) == mechanism_spec(o)
    got, want = decode_files(server, path), o.estimate(y)
    assert _same(got.counts, want.counts) and _same(got.variances, want.variances)
    assert got.sanitization == want.sanitization
    if cls is THE:
        fixed = THE(domain_size=12, epsilon=1.5, threshold=0.7, codebook_seed=4)
        path2 = write_reports(tmp_path / "t.parquet", fixed, fixed.privatize(np.arange(50) % 12,
                                                                           rng=2))
        assert from_spec(ReportFile(path2).spec).threshold == 0.7


# ---------------------------------------------------------------- audits
def test_the_registry_audits_the_and_she():
    row = audit.audit_channel(audit.get_channel("the", 1.0), n=20_000, rng=3)
    assert row.holds and row.exact.epsilon_audited < 1.0
    assert row.empirical.lower_bound <= row.exact.epsilon_audited + 1e-12
    row = audit.audit_channel(audit.get_channel("she", 1.0), n=40_000, rng=3)
    assert row.holds and row.kind == "empirical"
    controls = audit.negative_controls(1.0)
    caught = audit.audit_channel(controls["control:she@1.5eps"], n=40_000, rng=4)
    assert not caught.holds and caught.as_expected
    sampler = audit.audit_channel(controls["control:the-sampler"], n=40_000, rng=4)
    assert sampler.exact.holds and not sampler.empirical.holds and sampler.as_expected


# ---------------------------------------------------------------- variances by simulation
def _pooled_ratio(estimates, truth, variances):
    """Mean over repetitions of ``s_r = mean_v (est_rv - truth_v)^2 / var_v`` and its standard
    error from the repetitions (they are i.i.d., whatever the correlation across symbols)."""
    s = ((estimates - truth) ** 2 / variances).mean(axis=1)
    return s.mean(), s.std(ddof=1) / math.sqrt(s.shape[0])


def _assert_resolves_two_percent(mean, se):
    # 4 se below 0.98% and |mean - 1| within 4 se: a variance formula 2% off (either way)
    # moves the mean by at least 1.96% - 0.98% > 4 se, so it would fail this test
    assert 4 * se < 0.0098, se
    assert abs(mean - 1.0) < 4 * se, (mean, se)
    for wrong in (1.02, 0.98):
        assert abs(mean / wrong - 1.0) > 4 * se


@pytest.mark.slow
def test_the_variance_formula_by_simulation():
    """R = 8000 repetitions of n = 50 users over D = 64 symbols: the per-repetition mean of
    the 64 normalized squared errors has variance about 2/64 (binomial counts, nearly
    Gaussian), so its mean over R has standard error sqrt(2 / (64 R)) = 0.0020: 4 se = 0.8%,
    enough to resolve a 2% error in the variance formula."""
    D, n, R, eps = 64, 50, 8000, 1.0
    o = THE(domain_size=D, epsilon=eps, codebook_seed=1, n_threads=1)
    x = np.arange(n) % D
    truth = np.bincount(x, minlength=D).astype(float)
    e = np.array([eps])
    exact = ((n - truth) * o.variances(e)[0] + truth * o.held_variances(e)[0])
    reports = o.privatize(np.tile(x, R), rng=11).reshape(R, n, -1)
    est = np.empty((R, D))
    plug = np.empty((R, D))
    for r in range(R):
        res = o.estimate(reports[r])
        est[r], plug[r] = res.counts, res.variances
    mean, se = _pooled_ratio(est, truth, exact)
    _assert_resolves_two_percent(mean, se)
    # the plug-in variance is the exact one in expectation (clipped counts aside)
    np.testing.assert_allclose(plug.mean(axis=0), exact, rtol=0.01)


@pytest.mark.slow
def test_she_variance_formula_by_simulation():
    """As for THE, with n = 20 users a repetition (sums of 20 Laplace draws: excess kurtosis
    0.15, so the per-repetition mean of 64 normalized squared errors has variance about
    2.15/64) and R = 8000: 4 se = 0.8%."""
    D, n, R, eps = 64, 20, 8000, 1.3
    o = SHE(domain_size=D, epsilon=eps, codebook_seed=1)
    x = np.arange(n) % D
    truth = np.bincount(x, minlength=D).astype(float)
    exact = np.full(D, n * 8 / eps**2)
    est = np.empty((R, D))
    rng = np.random.default_rng(12)
    for block in range(0, R, 1000):  # 1000 repetitions at a time: 20,000 reports of 64 doubles
        reports = o.privatize(np.tile(x, 1000), rng=rng).reshape(1000, n, D)
        for r in range(1000):
            res = o.estimate(reports[r])
            est[block + r] = res.counts
            assert _same(res.variances, exact)
    mean, se = _pooled_ratio(est, truth, exact)
    _assert_resolves_two_percent(mean, se)


# ---------------------------------------------------------------- hostile input (as tests/test_fuzz_api.py)
from conftest import fuzz  # noqa: E402
from test_fuzz_api import call, garbage, numeric_arrays, scalars  # noqa: E402

FUZZ = {"she": lambda: SHE(domain_size=6, epsilon=1.0, codebook_seed=1),
        "the": lambda: THE(domain_size=6, epsilon=1.0, codebook_seed=1)}


@pytest.mark.parametrize("name", sorted(FUZZ))
@fuzz(25)
@given(values=garbage, eps=st.one_of(st.none(), garbage))
def test_privatize_rejects_or_releases_legal_reports(name, values, eps):
    mech = FUZZ[name]()
    out = call(lambda: mech.privatize(values, epsilons=eps, rng=0))
    if out is not None:
        est = mech.estimate(out, epsilons=eps)
        assert est.sanitization.n_sanitized == 0      # its own reports are all legal
        assert np.isfinite(est.counts).all()


@pytest.mark.parametrize("name", sorted(FUZZ))
@fuzz(25)
@given(reports=st.one_of(numeric_arrays, st.lists(st.lists(scalars, min_size=6, max_size=6),
                                                  min_size=1, max_size=5),
                         st.lists(st.lists(scalars, max_size=3), min_size=1, max_size=5)))
def test_estimate_sanitizes_hostile_reports_or_rejects_their_shape(name, reports):
    mech = FUZZ[name]()
    est = call(lambda: mech.estimate(reports))
    if est is not None:
        assert est.sanitization.n_received == est.n
        assert sum(est.sanitization.by_reason.values()) == est.sanitization.n_sanitized
        assert np.isfinite(est.counts).all() and np.isfinite(est.variances).all()


@pytest.mark.parametrize("name", sorted(FUZZ))
@fuzz(15)
@given(domain=scalars, eps=scalars, seed=scalars, theta=scalars)
def test_constructors_reject_bad_parameters(name, domain, eps, seed, theta):
    cls = type(FUZZ[name]())
    extra = {"threshold": theta} if cls is THE else {}
    mech = call(lambda: cls(domain_size=domain, epsilon=eps, codebook_seed=seed, **extra))
    if mech is not None:
        assert isinstance(mech.domain_size, int) and mech.domain_size >= 2
        assert mech.epsilon is None or 0 < mech.epsilon <= 700
