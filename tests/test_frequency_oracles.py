"""GRR, OLH and Hadamard response with personal budgets."""

import math

import numpy as np
import pytest
from scipy.linalg import hadamard
from scipy.stats import chisquare

from fastldp._kernels._hadamard import fwht
from fastldp.oracles import GRR, OLH, HadamardResponse

ORACLES = [GRR, OLH, HadamardResponse]
D = 6


def make(cls, seed=11):
    return cls(D, seed, 1)


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
    out = oracle.privatize(np.full(n, x), np.full(n, eps), np.full(n, ident, np.uint64),
                           np.random.default_rng(0))
    counts = np.bincount(out, minlength=law.shape[0])
    assert counts.shape[0] == law.shape[0]
    assert chisquare(counts, n * law).pvalue > 1e-4


@pytest.mark.parametrize("cls", ORACLES)
def test_per_identity_estimator_is_unbiased(cls):
    # n identities with distinct codebooks all hold x = 2; the mean of c_i(v)
    # is the indicator of v = 2, with sd at most sqrt(B / n) per coordinate.
    oracle = make(cls)
    n, x = 60_000, 2
    rng = np.random.default_rng(1)
    eps = rng.uniform(0.5, 2.0, n)
    ids = np.arange(n, dtype=np.uint64)
    reports = oracle.privatize(np.full(n, x), eps, ids, rng)
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
    reports = oracle.privatize(rng.integers(0, D, n), eps, ids, rng)
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
    assert HadamardResponse(6, 0).K == 8
    assert HadamardResponse(7, 0).K == 8
    assert HadamardResponse(8, 0).K == 16


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
