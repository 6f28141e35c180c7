"""GRR, OLH and Hadamard response: exact channels, the array layer the families use, attacks."""

import math

import numpy as np
import pytest
from scipy.linalg import hadamard
from scipy.stats import chisquare

from fastldp._kernels._hadamard import fwht
from fastldp.oracles import GRR, OLH, HadamardResponse
from fastldp.oracles.olh import MAX_BUCKETS

ORACLES = [GRR, OLH, HadamardResponse]
D = 6


def make(cls, seed=11):
    return cls(domain_size=D, epsilon=None, codebook_seed=seed, n_threads=1)


@pytest.mark.parametrize("cls", ORACLES)
@pytest.mark.parametrize("eps", [0.3, 1.0, 2.5])
@pytest.mark.parametrize("identity", [0, 7, 123])
def test_channel_likelihood_ratio_is_exactly_e_eps(cls, eps, identity):
    law = make(cls).channel(eps, identity)
    np.testing.assert_allclose(law.sum(axis=1), 1.0, rtol=1e-12)
    col_ratio = law.max(axis=0) / law.min(axis=0)
    assert col_ratio.max() <= math.exp(eps) * (1 + 1e-12)
    assert col_ratio.max() == pytest.approx(math.exp(eps), rel=1e-12)


@pytest.mark.parametrize("cls", ORACLES)
def test_sampler_draws_from_the_channel(cls):
    oracle = make(cls)
    eps, ident, x, n = 1.2, 5, 2, 40_000
    law = oracle.channel(eps, ident)[x]
    out = oracle.perturb(np.full(n, x), np.full(n, eps), np.full(n, ident, np.uint64),
                         np.random.default_rng(0))
    counts = np.bincount(out, minlength=law.shape[0])
    assert counts.shape[0] == law.shape[0]
    assert chisquare(counts, n * law).pvalue > 1e-4


@pytest.mark.parametrize("cls", [GRR, HadamardResponse])
@pytest.mark.parametrize("eps", [0.4, 2.0])
def test_exact_mean_and_variance_of_one_report(cls, eps):
    # Enumerate every output y of every input x: E[c(v)] = [x = v] and the
    # second moment gives variances() off the held symbol, held_variances() on it.
    oracle = make(cls)
    law = oracle.channel(eps, 0)
    n_out = law.shape[1]
    one = np.ones(1)
    c = np.stack([oracle.aggregate(np.array([y]), np.array([eps]), np.zeros(1, np.uint64), one)
                  for y in range(n_out)])  # (outputs, D)
    mean = law @ c
    second = law @ c**2
    np.testing.assert_allclose(mean, np.eye(D), atol=1e-12)
    var = second - mean**2
    off = ~np.eye(D, dtype=bool)
    np.testing.assert_allclose(var[off], oracle.variances(np.array([eps]))[0], rtol=1e-10)
    np.testing.assert_allclose(np.diag(var), oracle.held_variances(np.array([eps]))[0], rtol=1e-10)


def test_olh_mean_over_codebooks_is_the_indicator():
    # For OLH the null probability 1/g holds over the hash: average the exact
    # per-identity expectation over many identities (independent hashes).
    oracle = make(OLH)
    eps, n_id = 1.3, 4000
    g = int(oracle.buckets(np.array([eps]))[0])
    p = float(oracle._p(np.array([eps]), g)[0])
    total = np.zeros((D, D))
    for ident in range(n_id):
        law = oracle.channel(eps, ident)  # (D, g)
        hashed = oracle.hash(np.full(D, ident, np.uint64), np.arange(D), np.full(D, g))
        c = ((hashed[None, :] == np.arange(g)[:, None]) - 1.0 / g) / (p - 1.0 / g)  # (g, D)
        total += law @ c
    mean = total / n_id
    np.testing.assert_allclose(np.diag(mean), 1.0, atol=1e-12)
    # off the diagonal, one identity contributes ([H(x) = H(v)] - 1/g)(p - q') / (p - 1/g):
    # mean 0 over hashes, sd sqrt((1/g)(1 - 1/g)) (p - q') / (p - 1/g)
    q_other = (1 - p) / (g - 1)
    sd = math.sqrt((1 / g) * (1 - 1 / g)) * (p - q_other) / (p - 1 / g)
    assert np.abs(mean[~np.eye(D, dtype=bool)]).max() < 5 * sd / math.sqrt(n_id)


@pytest.mark.parametrize("cls", ORACLES)
def test_per_identity_estimator_is_unbiased(cls):
    # n identities with distinct codebooks all hold x = 2; the mean of c_i(v)
    # is the indicator of v = 2, with sd at most sqrt(B / n) per coordinate.
    oracle = make(cls)
    n, x = 60_000, 2
    rng = np.random.default_rng(1)
    eps = rng.uniform(0.5, 2.0, n)
    ids = np.arange(n, dtype=np.uint64)
    reports = oracle.perturb(np.full(n, x), eps, ids, rng)
    lam = np.ones(n)
    mean = oracle.aggregate(reports, eps, ids, lam) / n
    expected = np.zeros(D)
    expected[x] = 1.0
    bound = np.max(1.0 / (4 * _gap(oracle, eps) ** 2)) if cls is not HadamardResponse \
        else np.max(1.0 / np.tanh(eps / 2) ** 2)
    assert np.max(np.abs(mean - expected)) < 5 * math.sqrt(bound / n)


def _gap(oracle, eps):
    if isinstance(oracle, GRR):
        p, q = oracle._pq(eps)
        return p - q
    g = oracle.buckets(eps)
    return oracle._p(eps, g) - 1.0 / g


@pytest.mark.parametrize("cls", ORACLES)
def test_aggregate_equals_explicit_sum_of_per_identity_estimates(cls):
    oracle = make(cls)
    rng = np.random.default_rng(2)
    n = 200
    eps = rng.uniform(0.3, 3.0, n)
    ids = rng.integers(0, 2**60, n).astype(np.uint64)
    reports = oracle.perturb(rng.integers(0, D, n), eps, ids, rng)
    lam = oracle.weights(eps)
    explicit = np.zeros(D)
    for i in range(n):
        for v in range(D):
            w = np.zeros(D)
            w[v] = 1.0
            explicit[v] += lam[i] * oracle.response_scores(eps[i:i + 1], ids[i:i + 1], np.arange(D),
                                                           w, reports[i:i + 1])[0]
    np.testing.assert_allclose(oracle.aggregate(reports, eps, ids, lam), explicit, rtol=1e-9, atol=1e-9)


def test_weights_are_equal_for_equal_budgets_and_favor_larger_budgets():
    for cls in ORACLES:
        w = make(cls).weights(np.array([1.0, 1.0, 2.0]))
        assert w[0] == w[1] and w[2] > w[0]


@pytest.mark.parametrize("cls", ORACLES)
def test_best_response_beats_every_legal_output(cls):
    oracle = make(cls)
    rng = np.random.default_rng(3)
    n = 12
    eps = rng.uniform(0.3, 3.0, n)
    ids = rng.integers(0, 2**60, n).astype(np.uint64)
    items = np.array([0, 3, 4])
    weights = np.array([1.0, -1.0, 1.0])
    best, score = oracle.best_response(eps, ids, items, weights, rng)
    sizes = oracle.output_sizes(eps)
    for i in range(n):
        assert 0 <= best[i] < sizes[i]
        all_scores = [oracle.response_scores(eps[i:i + 1], ids[i:i + 1], items, weights,
                                             np.array([y]))[0] for y in range(sizes[i])]
        assert score[i] == pytest.approx(max(all_scores), rel=1e-12, abs=1e-12)
        assert oracle.response_scores(eps[i:i + 1], ids[i:i + 1], items, weights,
                                      best[i:i + 1])[0] == pytest.approx(score[i], rel=1e-12, abs=1e-12)


def test_fwht_equals_dense_hadamard_product():
    rng = np.random.default_rng(4)
    for K in (1, 2, 8, 64, 512):
        x = rng.standard_normal(K)
        np.testing.assert_allclose(fwht(x), hadamard(K) @ x, rtol=1e-12, atol=1e-12)
    with pytest.raises(ValueError, match="power of two"):
        fwht(np.ones(6))


def test_hadamard_domain_is_next_power_of_two_above_D():
    assert HadamardResponse(domain_size=6, epsilon=1.0, codebook_seed=0).K == 8
    assert HadamardResponse(domain_size=7, epsilon=1.0, codebook_seed=0).K == 8
    assert HadamardResponse(domain_size=8, epsilon=1.0, codebook_seed=0).K == 16


@pytest.mark.parametrize("cls", ORACLES)
def test_sanitize_replaces_illegal_reports_publicly_and_counts(cls):
    oracle = make(cls)
    eps = np.full(7, 1.0)
    ids = np.arange(7, dtype=np.uint64)
    size = int(oracle.output_sizes(eps)[0])
    raw = np.array([0, 1, -1, size, 2.5, np.nan, "x"], dtype=object)
    clean, rep = oracle.sanitize(raw, eps, ids, "test")
    again, _ = oracle.sanitize(raw, eps, ids, "test")
    np.testing.assert_array_equal(clean, again)
    assert np.all((clean >= 0) & (clean < size))
    assert clean[0] == 0 and clean[1] == 1
    assert rep.n_valid == 2 and rep.wrong_dtype
    assert rep.by_reason == {"non_numeric": 1, "non_integer": 2, "out_of_range": 2}


@pytest.mark.parametrize("cls", ORACLES)
def test_sanitize_fast_path_matches_the_general_path(cls):
    # all-legal integer reports take a shortcut; it must return what the
    # element-by-element path returns
    oracle = make(cls)
    rng = np.random.default_rng(5)
    eps = rng.uniform(0.5, 3.0, 500)
    ids = np.arange(500, dtype=np.uint64)
    reports = oracle.perturb(rng.integers(0, D, 500), eps, ids, rng)
    fast, rep_fast = oracle.sanitize(reports, eps, ids, "test")
    slow, rep_slow = oracle.sanitize(reports.astype(object), eps, ids, "test")
    np.testing.assert_array_equal(fast, slow)
    assert rep_fast.n_valid == rep_slow.n_valid == 500 and not rep_fast.wrong_dtype


def test_olh_buckets_are_capped_at_two_to_the_32():
    oracle = make(OLH)
    eps = np.array([1.0, 22.0, 23.0, 40.0, 700.0])
    g = oracle.buckets(eps)
    assert g[0] == 4 and g[1] == round(math.exp(22.0)) + 1
    assert g[2:].tolist() == [MAX_BUCKETS] * 3
    assert np.all(np.isfinite(oracle.variances(eps))) and np.all(oracle.variances(eps) > 0)
    # the hash reaches every bucket of the capped range, and the estimate works
    n = 4000
    o = OLH(domain_size=50, epsilon=23.0, codebook_seed=3, n_threads=1)
    assert o.buckets(np.array([23.0]))[0] == MAX_BUCKETS
    x = np.random.default_rng(6).integers(0, 50, n)
    est = o.estimate(o.privatize(x, rng=7))
    truth = np.bincount(x, minlength=50)
    assert np.all(np.abs(est.counts - truth) <= 5 * est.std + 1e-9)


@pytest.mark.parametrize("eps", [0.4, 1.0, 3.0])
def test_fixed_budget_counts_equal_the_naive_decoders(eps):
    # the fixed-budget closed forms, each against the textbook decoder written here from
    # the channel's own constants (a 2% change of any constant moves the counts by ~2%)
    D, n = 6, 4000
    values = np.random.default_rng(5).integers(0, D, n)
    e = math.exp(eps)
    # GRR: p = e^eps / (e^eps + D - 1), q = 1 / (e^eps + D - 1)
    grr = GRR(domain_size=D, epsilon=eps, codebook_seed=1)
    reports = grr.privatize(values, rng=2)
    p, q = e / (e + D - 1), 1 / (e + D - 1)
    naive = (np.bincount(reports, minlength=D) - n * q) / (p - q)
    np.testing.assert_allclose(grr.estimate(reports).counts, naive, rtol=1e-12, atol=1e-9)
    # HR: c(v) = H[v + 1, y] / tanh(eps / 2), summed over the reports
    hr = HadamardResponse(domain_size=D, epsilon=eps, codebook_seed=1)
    reports = hr.privatize(values, rng=3)
    H = hadamard(hr.K)
    naive = H[1:D + 1][:, reports].sum(axis=1) / math.tanh(eps / 2)
    np.testing.assert_allclose(hr.estimate(reports).counts, naive, rtol=1e-12, atol=1e-9)
