"""dBitFlipPM (fastldp.longitudinal.dbitflip.DBitFlipPM).

Exact laws enumerated by plain Python (largest ratio exactly e^epsilon_inf for
the memoized response and e^epsilon_1 for one report with output
perturbation); the sampler against them; Floyd's subsets uniform; the memo
(d + 1 cases); the estimator against multi-freq-ldpy's aggregator on the same
reports and against a naive loop; unbiasedness and the variance formula by
simulation; partial / merge bit-identity; report files; sanitization; bad
inputs.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from _merging import merge_in_order
from fastldp.longitudinal import MemoryMemo
from fastldp.longitudinal.dbitflip import DBitFlipPM


def _naive_law(k, d, eps, gamma, v):
    """P[(subset, bits)] by plain Python: subset uniform, bit at own bucket 1 w.p. P else Q."""
    e = math.exp(eps / 2)
    P = e / (e + 1) * (1 - gamma) + gamma / 2
    Q = 1 / (e + 1) * (1 - gamma) + gamma / 2
    law = {}
    subsets = list(itertools.combinations(range(k), d))
    for s in subsets:
        for bits in itertools.product((0, 1), repeat=d):
            prob = 1 / len(subsets)
            for j, b in zip(s, bits):
                one = P if j == v else Q
                prob *= one if b else 1 - one
            law[tuple(2 * j + b for j, b in zip(s, bits))] = prob
    return law


@pytest.mark.parametrize("k,d,gamma", [(3, 2, 0.0), (4, 2, 0.3), (4, 1, 0.0), (3, 3, 0.1)])
def test_exact_channels_reach_their_epsilons_and_no_more(k, d, gamma):
    m = DBitFlipPM(domain_size=k, n_buckets=k, n_sampled=d, epsilon_inf=1.5, gamma=gamma)
    assert m.outputs() == list(_naive_law(k, d, 1.5, gamma, 0))
    for which, eps, g in (("permanent", m.epsilon_inf, 0.0), ("report", m.epsilon_1, gamma)):
        law = m.channel(which)
        naive = np.array([list(_naive_law(k, d, 1.5, g, v).values()) for v in range(k)])
        np.testing.assert_allclose(law, naive, rtol=1e-14)
        worst = np.log(law[:, None, :] / law[None, :, :]).max()
        # two values' bits differ in their two positions (ratio e^(eps/2) each); with d = 1
        # only one position exists, so the channel spends half the stated budget
        assert worst == pytest.approx(eps if d >= 2 else eps / 2, rel=1e-12)
    if gamma == 0:
        assert m.epsilon_1 == m.epsilon_inf
    else:  # output perturbation lowers one report's budget: 2 ln(P*/Q*)
        assert m.epsilon_1 < m.epsilon_inf
        assert m.epsilon_1 == pytest.approx(2 * math.log(m.P / m.Q), rel=1e-15)


@pytest.mark.parametrize("gamma", [0.0, 0.4])
def test_sampler_follows_the_law(gamma):
    # n identities holding bucket 1 with fresh memos: one report each is a draw of the law;
    # every cell within 5 sd of its multinomial frequency
    k, d, n = 4, 2, 200_000
    m = DBitFlipPM(domain_size=k, n_buckets=k, n_sampled=d, epsilon_inf=1.0, gamma=gamma)
    law = m.channel("report")[1]
    index = {y: i for i, y in enumerate(m.outputs())}
    reports = m.privatize(np.full(n, 1), memo=MemoryMemo(), rng=3)
    cells = np.array([index[tuple(row)] for row in reports.tolist()])
    freq = np.bincount(cells, minlength=len(law)) / n
    assert np.all(np.abs(freq - law) <= 5 * np.sqrt(law * (1 - law) / n))


def test_sampled_subsets_are_uniform():
    # C(6, 3) = 20 subsets, 100k draws: chi-square with 19 degrees of freedom; its 1e-6 upper
    # quantile is about 62
    m = DBitFlipPM(domain_size=6, n_buckets=6, n_sampled=3, epsilon_inf=1.0)
    s = m.sample_buckets(100_000, np.random.default_rng(0))
    assert np.all(np.diff(s, axis=1) > 0)
    code = {c: i for i, c in enumerate(itertools.combinations(range(6), 3))}
    counts = np.bincount([code[tuple(r)] for r in s.tolist()], minlength=20)
    expected = 100_000 / 20
    assert ((counts - expected) ** 2 / expected).sum() < 62


def test_memo_keeps_samples_and_one_response_per_case():
    m = DBitFlipPM(domain_size=100, n_buckets=10, n_sampled=2, epsilon_inf=1.0)
    memo = MemoryMemo()
    x = np.arange(1000) % 100
    day1 = m.privatize(x, memo=memo, rng=1)
    assert np.array_equal(m.privatize(x, memo=memo, rng=2), day1)   # gamma = 0
    # a value in another bucket: the sampled buckets stay; the bits change only if the case
    # (position of the bucket among the sampled ones, or none) changes
    y = (x + 10) % 100
    day3 = m.privatize(y, memo=memo, rng=3)
    assert np.array_equal(day3 >> 1, day1 >> 1)
    samp = day1 >> 1
    case1 = m.cases(samp, m.buckets(x))
    case3 = m.cases(samp, m.buckets(y))
    same = case1 == case3
    assert same.sum() > 100 and np.array_equal(day3[same], day1[same])
    # with output perturbation the reports differ round to round, the samples do not
    g = DBitFlipPM(domain_size=100, n_buckets=10, n_sampled=2, epsilon_inf=1.0, gamma=0.5)
    memo = MemoryMemo()
    r1, r2 = g.privatize(x, memo=memo, rng=1), g.privatize(x, memo=memo, rng=2)
    assert np.array_equal(r1 >> 1, r2 >> 1) and not np.array_equal(r1, r2)


def _to_multi_freq(reports, k):
    out = -np.ones((reports.shape[0], k))
    rows = np.repeat(np.arange(reports.shape[0]), reports.shape[1])
    out[rows, (reports >> 1).ravel()] = (reports & 1).ravel()
    return out


def test_estimator_matches_multi_freq_ldpy_and_a_naive_loop():
    mf = pytest.importorskip("multi_freq_ldpy.long_freq_est.dBitFlipPM")
    k, d, eps = 8, 3, 2.0
    m = DBitFlipPM(domain_size=32, n_buckets=k, n_sampled=d, epsilon_inf=eps)
    x = np.random.default_rng(0).integers(0, 32, 3000)
    reports = m.privatize(x, rng=1)
    est = m.estimate(reports)
    # naive loop: (k / d) sum over reports sampling v of (b (e^(eps/2) + 1) - 1) / (e^(eps/2) - 1)
    e = math.exp(eps / 2)
    naive = np.zeros(k)
    for row in reports.tolist():
        for entry in row:
            naive[entry >> 1] += ((entry & 1) * (e + 1) - 1) / (e - 1)
    np.testing.assert_allclose(est.counts, naive * k / d, rtol=1e-12, atol=1e-9)
    theirs = mf.dBitFlipPM_Aggregator_MI(_to_multi_freq(reports, k), k, d, eps)
    ours = np.clip(est.counts, 0, None)
    np.testing.assert_allclose(ours / ours.sum(), theirs, rtol=1e-10)


def test_unbiased_and_variance_by_simulation():
    # 400 collections with fresh memos; means within 4 sd / sqrt(400); the variance formula
    # n (k/d) P Q / (P - Q)^2 + N (k/d - 1) (over the sampling and the bits) against the
    # sample variance: relative sd sqrt(2/399) = 0.071, so [0.72, 1.28] is a 4-sd band
    k, d = 6, 2
    m = DBitFlipPM(domain_size=k, n_buckets=k, n_sampled=d, epsilon_inf=1.0)
    x = np.repeat(np.arange(k), [900, 500, 300, 200, 100, 0])
    truth = np.bincount(x, minlength=k)
    rng = np.random.default_rng(2)
    counts = np.array([m.estimate(m.privatize(x, memo=MemoryMemo(), rng=rng)).counts
                       for _ in range(400)])
    formula = m.count_variances(x.shape[0], truth)
    assert np.all(np.abs(counts.mean(axis=0) - truth) < 4 * np.sqrt(formula / 400))
    ratio = counts.var(axis=0, ddof=1) / formula
    assert np.all((ratio > 0.72) & (ratio < 1.28)), ratio


def test_mean_from_the_buckets():
    m = DBitFlipPM(domain_size=10, n_buckets=5, n_sampled=5, epsilon_inf=50.0)
    # eps = 50: P = 1 - 1e-11, so the estimate is the exact bucket histogram
    assert np.array_equal(m.bucket_midpoints(), [0.5, 2.5, 4.5, 6.5, 8.5])
    x = np.array([0, 1, 2, 9, 9, 5])
    est = m.estimate(m.privatize(x, rng=0))
    np.testing.assert_allclose(est.counts, [2, 1, 1, 0, 2], atol=1e-6)
    assert m.mean(est) == pytest.approx((0.5 * 2 + 2.5 + 4.5 + 8.5 * 2) / 6, abs=1e-6)
    uneven = DBitFlipPM(domain_size=10, n_buckets=3, epsilon_inf=1.0)
    assert list(uneven.buckets(np.arange(10))) == [0, 0, 0, 0, 1, 1, 1, 2, 2, 2]
    assert np.array_equal(uneven.bucket_midpoints(), [1.5, 5.0, 8.0])


@pytest.mark.parametrize("mode", ["sequential", "balanced", "random"])
def test_partials_are_bit_identical(mode):
    m = DBitFlipPM(domain_size=50, n_buckets=25, n_sampled=4, epsilon_inf=2.0, gamma=0.1)
    reports = m.privatize(np.arange(2000) % 50, rng=4)
    whole = m.estimate(reports)
    cuts = [0, 1, 500, 1999, 2000]
    parts = [m.partial(reports[a:b], identities=np.arange(a, b))
             for a, b in zip(cuts[:-1], cuts[1:])]
    est = m.finalize(merge_in_order(m, parts, mode, seed=1))
    assert np.array_equal(est.counts, whole.counts)
    assert np.array_equal(est.variances, whole.variances)


def test_report_files_round_trip(tmp_path):
    pytest.importorskip("pyarrow")
    from fastldp.reports import decode_files, write_reports

    m = DBitFlipPM(domain_size=20, n_buckets=10, n_sampled=3, epsilon_inf=1.0, codebook_seed=2)
    reports = m.privatize(np.arange(300) % 20, rng=1)
    path = write_reports(tmp_path / "r.parquet", m, reports, row_group_size=50)
    est = decode_files(DBitFlipPM(domain_size=20, n_buckets=10, n_sampled=3, epsilon_inf=1.0,
                                  codebook_seed=2), path)
    assert np.array_equal(est.counts, m.estimate(reports).counts)


def test_sanitization_replaces_and_counts_bad_rows():
    m = DBitFlipPM(domain_size=10, n_buckets=10, n_sampled=3, epsilon_inf=1.0, codebook_seed=5)
    good = m.privatize(np.arange(8), rng=0)
    bad = good.copy()
    bad[1, 0] = 20                       # bucket 10 of 10
    bad[2] = [4, 5, 9]                   # bucket 2 twice
    bad[3] = [9, 4, 1]                   # not ascending
    bad[4, 2] = -1
    est = m.estimate(bad)
    s = est.sanitization
    # integer rows that are no legal report (a bucket out of range, repeated or out of
    # order) all count as out of range
    assert (s.n_received, s.n_valid, s.by_reason["out_of_range"]) == (8, 4, 4)
    clean, _ = m.sanitize(bad, np.arange(8, dtype=np.uint64), "t")
    assert np.array_equal(clean[[0, 5, 6, 7]], good[[0, 5, 6, 7]])
    public = m.public_rows(np.arange(1, 5, dtype=np.uint64))
    assert np.array_equal(clean[1:5], public)
    assert np.all(np.diff(public >> 1, axis=1) > 0) and np.all((public >= 0) & (public < 20))
    floats = m.estimate(good.astype(float) + np.eye(8, 3) * 0.5)
    assert floats.sanitization.by_reason["non_integer"] == 3 and floats.sanitization.wrong_dtype


def test_bad_parameters_are_named():
    with pytest.raises(ValueError, match="'n_sampled' parameter of DBitFlipPM"):
        DBitFlipPM(domain_size=10, n_buckets=4, n_sampled=5, epsilon_inf=1.0)
    with pytest.raises(ValueError, match="'n_buckets' parameter"):
        DBitFlipPM(domain_size=10, k=11, epsilon_inf=1.0)
    with pytest.raises(ValueError, match="'gamma' parameter"):
        DBitFlipPM(domain_size=10, epsilon_inf=1.0, gamma=1.0)
    with pytest.raises(ValueError, match="'epsilon_inf' parameter"):
        DBitFlipPM(domain_size=10, epsilon_inf=float("nan"))
    m = DBitFlipPM(domain_size=10, epsilon_inf=1.0, d=2)
    assert m.n_sampled == 2 and m.n_buckets == 10
    with pytest.raises(ValueError, match="'values' parameter"):
        m.privatize([0, 10])
    with pytest.raises(ValueError, match="'epsilons' parameter"):
        m.privatize([0, 1], epsilons=2.0)
    with pytest.raises(ValueError, match="'reports' parameter"):
        m.estimate(np.zeros((3, 5), dtype=np.int64))


def test_epsilon_sets_the_output_perturbation():
    m = DBitFlipPM(domain_size=10, epsilon_inf=4.0, epsilon=1.0, n_sampled=3)
    assert m.gamma == DBitFlipPM.gamma_for(4.0, 1.0) and m.epsilon == 1.0
    assert 2 * math.log(m.P / m.Q) == pytest.approx(1.0, rel=1e-13)
    with pytest.raises(ValueError, match="not both"):
        DBitFlipPM(domain_size=10, epsilon_inf=4.0, epsilon=1.0, gamma=0.1)
    with pytest.raises(ValueError, match="'epsilon' parameter"):
        DBitFlipPM(domain_size=10, epsilon_inf=1.0, epsilon=2.0)


def test_report_files_refuse_float_reports(tmp_path):
    pytest.importorskip("pyarrow")
    from fastldp.reports import write_reports

    m = DBitFlipPM(domain_size=20, n_buckets=10, n_sampled=3, epsilon_inf=1.0, codebook_seed=2)
    reports = m.privatize(np.arange(30) % 20, rng=1)
    with pytest.raises(ValueError):
        write_reports(tmp_path / "f.parquet", m, reports.astype(float))


@pytest.mark.parametrize("kwargs", [dict(gamma=0.2), dict(epsilon=1.0), {}])
def test_stream_params_rebuild_the_same_object(kwargs):
    m = DBitFlipPM(domain_size=30, n_sampled=3, epsilon_inf=2.0, codebook_seed=8, **kwargs)
    again = DBitFlipPM(**m.stream_params())
    assert again.stream_params() == m.stream_params()
    assert (again.gamma, again.epsilon_1, again.P) == (m.gamma, m.epsilon_1, m.P)


def test_memo_store_on_disk_keeps_samples_and_bits(tmp_path):
    from fastldp.longitudinal import MemoStore

    m = DBitFlipPM(domain_size=40, n_buckets=8, n_sampled=3, epsilon_inf=1.0)
    x = np.arange(40)
    ids = np.arange(40, dtype=np.uint64) * np.uint64(5) + np.uint64(2**63)
    with MemoStore(tmp_path / "memo.sqlite") as memo:
        day1 = m.privatize(x, memo=memo, identities=ids, rng=1)
    with MemoStore(tmp_path / "memo.sqlite") as memo:
        day2 = m.privatize(x, memo=memo, identities=ids, rng=2)
        assert len(memo) == 80   # one sample and one case response per identity
    assert np.array_equal(day1, day2)


# ------------------------------------------------------------------ 1BitMean
from fastldp.longitudinal.dbitflip import OneBitMean  # noqa: E402


@pytest.mark.parametrize("gamma", [0.0, 0.3])
def test_one_bit_mean_law_at_the_ends_and_its_epsilons(gamma):
    # grid values round deterministically (t - floor(t) = 0 is never above alpha; x = m rounds
    # to s): the bit is Bernoulli(c0 + c1 k / s); x = 0 against x = m is the largest ratio
    m = OneBitMean(max_value=10.0, epsilon_inf=1.2, n_points=5, gamma=gamma)
    e = math.exp(1.2)
    lo = (1 - gamma) / (e + 1) + gamma / 2
    hi = (1 - gamma) * e / (e + 1) + gamma / 2
    assert (m.c0, m.c0 + m.c1) == (pytest.approx(lo, rel=1e-15), pytest.approx(hi, rel=1e-15))
    ratio = max(hi / lo, (1 - lo) / (1 - hi))
    assert math.log(ratio) == pytest.approx(m.epsilon_1, rel=1e-12)
    if gamma == 0:
        assert m.epsilon_1 == 1.2
    n = 200_000
    for x, p in ((0.0, lo), (10.0, hi), (4.0, lo + (hi - lo) * 2 / 5)):
        bits = m.privatize(np.full(n, x), memo=MemoryMemo(), rng=int(x) + 1)
        assert abs(bits.mean() - p) < 5 * math.sqrt(p * (1 - p) / n)


def test_alpha_point_rounding_is_unbiased_over_alpha():
    # over J evenly spaced alphas the mean rounded index is t to within 1 / J
    m = OneBitMean(max_value=7.0, epsilon_inf=1.0, n_points=4)
    x = np.array([0.0, 0.3, 1.75, 2.0, 5.123, 6.99, 7.0])
    t = x * 4 / 7
    J = 1000
    alphas = (np.arange(J) + 0.5) / J
    mean_k = np.mean([m.round_points(x, np.full(x.shape, a)) for a in alphas], axis=0)
    assert np.all(np.abs(mean_k - t) <= 1 / J + 1e-12)


def test_one_bit_mean_memo_and_unbiasedness():
    m = OneBitMean(max_value=100.0, epsilon_inf=1.0, n_points=8)
    x = np.random.default_rng(0).uniform(0, 100, 5000)
    memo = MemoryMemo()
    day1 = m.privatize(x, memo=memo, rng=1)
    assert np.array_equal(m.privatize(x, memo=memo, rng=2), day1)
    assert len(memo) == 2 * 5000        # one alpha and one grid-point bit per identity
    # 300 collections with fresh memos: the mean within 4 sd / sqrt(300) of the truth, and
    # the conservative variance at least the empirical one (relative sd of the sample
    # variance sqrt(2 / 299) = 0.08: a 0.75 factor is 3 sd)
    rng = np.random.default_rng(3)
    ests = [m.estimate(m.privatize(x, memo=MemoryMemo(), rng=rng)) for _ in range(300)]
    means = np.array([e.mean[0] for e in ests])
    var = np.mean([e.variances[0] for e in ests])
    assert abs(means.mean() - x.mean()) < 4 * means.std(ddof=1) / math.sqrt(300)
    assert means.var(ddof=1) * 0.75 <= var


def test_one_bit_mean_partials_sanitization_and_budgets():
    m = OneBitMean(max_value=1.0, epsilon_inf=2.0, epsilon=1.0, n_points=3, codebook_seed=4)
    assert m.epsilon == 1.0 and m.gamma == OneBitMean.gamma_for(2.0, 1.0)
    assert OneBitMean(**m.stream_params()).stream_params() == m.stream_params()
    bits = m.privatize(np.linspace(0, 1, 1000), rng=0)
    whole = m.estimate(bits)
    parts = [m.partial(bits[:300]), m.partial(bits[300:], identities=np.arange(300, 1000))]
    assert np.array_equal(m.finalize(merge_in_order(m, parts, "random", seed=0)).mean,
                          whole.mean)
    bad = bits.astype(float)
    bad[[3, 4]] = [2.0, 0.5]
    s = m.estimate(bad).sanitization
    assert (s.n_valid, s.by_reason["out_of_range"], s.by_reason["non_integer"]) == (998, 1, 1)
    with pytest.raises(ValueError, match="'values' parameter"):
        m.privatize([0.5, 1.5])
    with pytest.raises(ValueError, match="not both"):
        OneBitMean(max_value=1.0, epsilon_inf=2.0, epsilon=1.0, gamma=0.1)
