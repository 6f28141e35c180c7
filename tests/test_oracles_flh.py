"""FLH: exact privacy given the public pool, the pool's bias, the O(n + h D) server."""

import math

import numpy as np
import pytest
from scipy.stats import chisquare

from fastldp._kernels._flh import flh_support
from fastldp._kernels._olh import olh_buckets
from fastldp.oracles import FLH


def make(D=5, eps=1.0, h=16, seed=3, **kw):
    return FLH(domain_size=D, epsilon=eps, n_hashes=h, codebook_seed=seed, n_threads=1, **kw)


@pytest.mark.parametrize("eps", [0.2, 1.0, 2.0, 4.0])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_likelihood_ratio_over_all_index_bucket_pairs_is_exactly_e_eps(eps, seed):
    o = make(eps=eps, seed=seed)
    law = o.channel(eps)  # (D, h g): every (pool index, bucket) pair
    assert law.shape == (5, 16 * o.g)
    np.testing.assert_allclose(law.sum(axis=1), 1.0, rtol=1e-12)
    ratio = (law.max(axis=0) / law.min(axis=0)).max()
    assert ratio <= math.exp(eps) * (1 + 1e-12)
    assert ratio == pytest.approx(math.exp(eps), rel=1e-12)


def test_personal_budgets_keep_g_and_meet_their_own_eps():
    o = make(eps=2.0)
    for eps in (0.3, 1.0, 3.0):
        law = o.channel(eps)
        assert law.shape[1] == 16 * o.g
        assert (law.max(axis=0) / law.min(axis=0)).max() == pytest.approx(math.exp(eps), rel=1e-12)


def test_pool_is_the_olh_hash_of_the_pool_index():
    o = make(D=9, h=7, seed=11)
    H = o.pool()
    for j in range(7):
        np.testing.assert_array_equal(
            H[j], olh_buckets(11, np.full(9, j, np.uint64), np.arange(9), np.full(9, o.g)))


def test_sampler_draws_from_the_channel():
    o = make(h=8)
    n, x = 100_000, 3
    reports = o.privatize(np.full(n, x), rng=0)
    assert reports.shape == (n, 2) and reports.dtype == np.int64
    cells = reports[:, 0] * o.g + reports[:, 1]
    counts = np.bincount(cells, minlength=8 * o.g)
    assert chisquare(counts, n * o.channel(1.0)[x]).pvalue > 1e-4


def test_server_kernel_equals_the_dense_sum():
    rng = np.random.default_rng(4)
    seed, h, g, D = 7, 45, 5, 1003  # D not a multiple of 8, h not of the chunk
    table = rng.random((h, g))
    H = np.stack([olh_buckets(seed, np.full(D, j, np.uint64), np.arange(D), np.full(D, g))
                  for j in range(h)])
    ref = table[np.arange(h)[:, None], H].sum(axis=0)
    np.testing.assert_allclose(flh_support(seed, table, D, 1), ref, rtol=1e-12)
    np.testing.assert_array_equal(flh_support(seed, table, D, 1), flh_support(seed, table, D, 3))


def test_estimate_equals_the_per_report_sum():
    o = make(D=7, h=12)
    x = np.random.default_rng(5).integers(0, 7, 300)
    eps = np.random.default_rng(6).uniform(0.5, 2.0, 300)
    reports = o.privatize(x, epsilons=eps, rng=7)
    H = o.pool()
    p = o._p(eps)
    per = ((H[reports[:, 0]] == reports[:, 1][:, None]) - 1.0 / o.g) / (p - 1.0 / o.g)[:, None]
    np.testing.assert_allclose(o.estimate(reports, epsilons=eps).counts, per.sum(axis=0),
                               rtol=1e-10, atol=1e-9)


def test_one_pass_estimate_is_finalize_of_the_partial_bit_for_bit():
    """estimate() counts clean equal-budget reports with one checking kernel pass: the same
    bits as finalize(partial()) for every integer layout; an illegal pair (a bucket >= g, a
    uint64 index >= 2**63) goes the sanitizing way."""
    o = make(D=50, eps=1.0, h=32)
    reports = o.privatize(np.arange(700) % 50, rng=3)
    want = o.finalize(o.partial(reports))
    for r in (reports, np.asfortranarray(reports), reports.astype(np.int16),
              reports.view(np.uint64), np.repeat(reports, 2, axis=0)[::2]):
        got = o.estimate(r)
        assert got.counts.tobytes() == want.counts.tobytes()
        assert got.variances.tobytes() == want.variances.tobytes()
        assert got.sanitization == want.sanitization and got.privacy == want.privacy
    bad = reports.copy()
    bad[9, 1] = o.g
    huge = reports.view(np.uint64).copy()
    huge[0, 0] = np.uint64(2**64 - 1)
    for r in (bad, huge):
        got = o.estimate(r)
        assert got.sanitization.by_reason["out_of_range"] == 1
        assert got.counts.tobytes() == o.finalize(o.partial(r)).counts.tobytes()


def _exact_mean(o, eps):
    """E[c(v) | x] for the fixed pool: sum over (j, y) of law * estimator."""
    law = o.channel(eps)  # (D, h g)
    H = o.pool()  # (h, D)
    p = float(o._p(np.array([eps]))[0])
    j = np.repeat(np.arange(o.n_hashes), o.g)
    y = np.tile(np.arange(o.g), o.n_hashes)
    c = ((H[j] == y[:, None]) - 1.0 / o.g) / (p - 1.0 / o.g)  # (h g, D)
    return law @ c


@pytest.mark.parametrize("eps", [0.5, 1.5])
def test_exact_mean_for_a_fixed_pool_is_the_indicator_plus_the_documented_bias(eps):
    o = make(D=6, eps=eps, h=10)
    mean = _exact_mean(o, eps)
    H = o.pool()
    kappa = (H[:, :, None] == H[:, None, :]).mean(axis=0)  # (D, D) collision fraction
    p = float(o._p(np.array([eps]))[0])
    q_other = (1 - p) / (o.g - 1)
    expected = np.eye(6) + (1 - np.eye(6)) * (kappa - 1 / o.g) * (p - q_other) / (p - 1 / o.g)
    np.testing.assert_allclose(mean, expected, atol=1e-12)


def test_estimate_is_unbiased_over_pools():
    # average the exact expectation over many codebook seeds: the pool bias
    # has mean 0 and sd sqrt((1/g)(1 - 1/g) / h) (p - q') / (p - 1/g) per pool
    eps, h, seeds = 1.0, 8, 400
    total = np.zeros((5, 5))
    for s in range(seeds):
        total += _exact_mean(make(eps=eps, h=h, seed=1000 + s), eps)
    o = make(eps=eps, h=h)
    p = float(o._p(np.array([eps]))[0])
    q_other = (1 - p) / (o.g - 1)
    sd = math.sqrt((1 / o.g) * (1 - 1 / o.g) / h) * (p - q_other) / (p - 1 / o.g)
    mean = total / seeds
    np.testing.assert_allclose(np.diag(mean), 1.0, atol=1e-12)
    assert np.abs(mean[~np.eye(5, dtype=bool)]).max() < 5 * sd / math.sqrt(seeds)


def test_variances_are_olh_variances_with_the_fixed_g():
    o = make(eps=1.0)
    eps = np.array([0.5, 1.0, 2.0])
    p = np.exp(eps) / (np.exp(eps) + o.g - 1)
    np.testing.assert_allclose(o.variances(eps), (1 / o.g) * (1 - 1 / o.g) / (p - 1 / o.g) ** 2)
    np.testing.assert_allclose(o.held_variances(eps), p * (1 - p) / (p - 1 / o.g) ** 2)


def test_sanitize_replaces_illegal_pairs_publicly():
    o = make(h=16)
    reports = o.privatize(np.arange(5), rng=1)
    bad = reports.copy()
    bad[0, 0] = 16  # index outside the pool
    bad[1, 1] = -1
    eps, ids = np.full(5, 1.0), np.arange(5, dtype=np.uint64)
    clean, rep = o.sanitize(bad, eps, ids, "t")
    assert rep.n_valid == 3 and rep.by_reason["out_of_range"] == 2 and not rep.wrong_dtype
    assert np.all((clean[:, 0] >= 0) & (clean[:, 0] < 16) & (clean[:, 1] >= 0) & (clean[:, 1] < o.g))
    np.testing.assert_array_equal(clean[2:], reports[2:])
    np.testing.assert_array_equal(clean, o.sanitize(bad, eps, ids, "t")[0])
    with pytest.raises(ValueError, match=r"'reports' parameter of t must be a \(5, 2\) array"):
        o.sanitize(reports[:, :1], eps, ids, "t")
