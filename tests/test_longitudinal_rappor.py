"""Full RAPPOR (fastldp.longitudinal.rappor.LongitudinalRAPPOR).

The paper's privacy formulas in rational arithmetic and the headline example;
the one-report and permanent channels enumerated by plain Python over all
2^k outputs (largest ratio exactly e^epsilon_1 / e^epsilon_inf for two values
with disjoint filters); the sampler against that law; the memo; the decode
against a naive weighted least-squares twin (numpy.linalg.lstsq) with its
sandwich standard errors; unbiasedness and the variance by simulation;
partial / merge bit-identity; report files; sanitization; bad inputs.
"""

from __future__ import annotations

import itertools
import math
from fractions import Fraction

import numpy as np
import pytest

from _merging import merge_in_order
from fastldp.longitudinal import MemoryMemo
from fastldp.longitudinal.rappor import LongitudinalRAPPOR, rappor_epsilons


# ------------------------------------------------------------------ privacy formulas
def test_headline_epsilons_match_the_paper():
    # k = 128, h = 2, m = 64, f = 1/2, p = 1/2, q = 3/4: epsilon_inf = 2 h ln((1 - f/2) / (f/2))
    # = 4 ln 3; q* = f(p+q)/2 + (1-f) q = 11/16, p* = f(p+q)/2 + (1-f) p = 9/16,
    # epsilon_1 = h ln(q*(1-p*)/(p*(1-q*))) = 2 ln((11/16 * 7/16) / (9/16 * 5/16)) = 2 ln(77/45)
    f, p, q = Fraction(1, 2), Fraction(1, 2), Fraction(3, 4)
    qs = f * (p + q) / 2 + (1 - f) * q
    ps = f * (p + q) / 2 + (1 - f) * p
    assert (qs, ps) == (Fraction(11, 16), Fraction(9, 16))
    r = LongitudinalRAPPOR(domain_size=300, k=128, h=2, m=64, f=0.5, p=0.5, q=0.75,
                           codebook_seed=0)
    assert r.epsilon_inf == pytest.approx(4 * math.log(3), rel=1e-15)
    assert r.epsilon_1 == pytest.approx(2 * math.log(77 / 45), rel=1e-14)
    assert round(r.epsilon_1, 4) == 1.0743  # 2 ln(77/45), four digits
    assert (r.q_star, r.p_star) == (11 / 16, 9 / 16)
    assert r.privacy().epsilon == r.epsilon_1 and r.privacy().epsilon_inf == r.epsilon_inf


def _bits(y, k):
    return [(y >> j) & 1 for j in range(k)]


def _naive_law(r, value, cohort, which):
    """P[report = y] for every y in [0, 2^k), by plain Python over the k independent bits."""
    k = r.n_bits
    filt = set(int(j) for j in r.bloom_positions([cohort], [value])[0])
    out = []
    for y in range(2 ** k):
        prob = 1.0
        for j, s in enumerate(_bits(y, k)):
            b = 1 if j in filt else 0
            if which == "permanent":   # flip w.p. f/2
                one = (1 - r.f / 2) if b else r.f / 2
            else:                       # sum over the permanent bit, then p / q
                one_perm = (1 - r.f / 2) if b else r.f / 2
                one = one_perm * r.q + (1 - one_perm) * r.p
            prob *= one if s else 1 - one
        out.append(prob)
    return np.array(out)


def _disjoint_pair(r, cohort=0):
    filters = [set(int(j) for j in r.bloom_positions([cohort], [v])[0]) for v in
               range(r.domain_size)]
    for u, v in itertools.combinations(range(r.domain_size), 2):
        if len(filters[u]) == r.n_hashes == len(filters[v]) and not filters[u] & filters[v]:
            return u, v
    raise AssertionError("no pair with disjoint filters")


@pytest.mark.parametrize("f,p,q", [(0.5, 0.5, 0.75), (0.25, 0.2, 0.9)])
def test_exact_channels_reach_their_epsilons_and_no_more(f, p, q):
    r = LongitudinalRAPPOR(domain_size=8, k=6, h=2, m=1, f=f, p=p, q=q, codebook_seed=11)
    for which, eps in (("permanent", r.epsilon_inf), ("report", r.epsilon_1)):
        laws = np.array([_naive_law(r, v, 0, which) for v in range(r.domain_size)])
        assert np.allclose(laws.sum(axis=1), 1.0, rtol=0, atol=1e-12)
        worst = np.log(laws[:, None, :] / laws[None, :, :]).max()
        # no pair exceeds e^eps; a pair with disjoint 2-bit filters reaches it
        assert worst <= eps + 1e-12
        u, v = _disjoint_pair(r)
        assert np.log(laws[u] / laws[v]).max() == pytest.approx(eps, rel=1e-12)


def test_sampler_follows_the_law():
    # n independent identities (fresh permanent responses) of one value and one cohort: the
    # report frequencies are multinomial with the enumerated law; each cell within 5 sd
    r = LongitudinalRAPPOR(domain_size=5, k=4, h=2, m=1, f=0.5, p=0.5, q=0.75,
                           codebook_seed=2)
    n = 200_000
    law = _naive_law(r, 3, 0, "report")
    reports = r.privatize(np.full(n, 3), memo=MemoryMemo(), rng=7)
    y = reports[:, 0].astype(np.int64)
    freq = np.bincount(y, minlength=16) / n
    assert np.all(np.abs(freq - law) <= 5 * np.sqrt(law * (1 - law) / n))
    # the permanent responses themselves (p = 0, q = 1 sends the permanent bits)
    rp = LongitudinalRAPPOR(domain_size=5, k=4, h=2, m=1, f=0.5, p=0.0, q=1.0,
                            codebook_seed=2)
    law_p = _naive_law(rp, 3, 0, "permanent")
    freq_p = np.bincount(rp.privatize(np.full(n, 3), memo=MemoryMemo(), rng=8)[:, 0],
                         minlength=16) / n
    assert np.all(np.abs(freq_p - law_p) <= 5 * np.sqrt(law_p * (1 - law_p) / n))


def test_memo_keeps_one_permanent_response_per_identity_and_value():
    # p = 0, q = 1: a report is its permanent response, so equal reports == one memo entry
    r = LongitudinalRAPPOR(domain_size=50, k=32, h=2, m=4, f=0.5, p=0.0, q=1.0,
                           codebook_seed=1)
    memo = MemoryMemo()
    x = np.arange(400) % 50
    day1 = r.privatize(x, memo=memo, rng=1)
    day2 = r.privatize(x, memo=memo, rng=2)
    assert np.array_equal(day1, day2) and len(memo) == 400
    moved = r.privatize((x + 1) % 50, memo=memo, rng=3)
    assert len(memo) == 800 and not np.array_equal(moved, day1)
    back = r.privatize(x, memo=memo, rng=4)
    assert np.array_equal(back, day1)
    # without the memo (a fresh one per round) the permanent responses differ
    fresh = r.privatize(x, memo=MemoryMemo(), rng=5)
    assert not np.array_equal(fresh, day1)


# ------------------------------------------------------------------ decode
def _naive_decode(r, reports, ids):
    """Weighted least squares by numpy.linalg.lstsq on dense per-cohort filters, and the
    sandwich variances written out with dense matrices."""
    k, C = r.n_bits, r.n_cohorts
    bits = np.unpackbits(reports, axis=1, bitorder="little")[:, :k].astype(np.int64)
    coh = ids % C
    m = np.bincount(coh, minlength=C).astype(float)
    y = np.array([bits[coh == c].sum(axis=0) for c in range(C)], dtype=float)
    t = (y - r.p_star * m[:, None]) / (r.q_star - r.p_star)
    X = np.vstack([r.bloom_filters(np.full(len(r.candidates), c), r.candidates).T.astype(float)
                   for c in range(C)])                        # (C k, M)
    w = np.repeat(m, k)
    A = X * np.sqrt(w)[:, None]
    b = t.ravel() / np.sqrt(w)
    f = np.linalg.lstsq(A, b, rcond=None)[0]
    n = m.sum()
    a = np.clip(t, 0, m[:, None]).ravel()
    var_t = (a * r.q_star * (1 - r.q_star) + (w - a) * r.p_star * (1 - r.p_star)) \
        / (r.q_star - r.p_star) ** 2
    Ginv = np.linalg.inv(A.T @ A)
    cov = n * n * Ginv @ X.T @ np.diag(var_t) @ X @ Ginv
    return n * f, np.diag(cov)


def test_decode_matches_a_naive_least_squares_twin():
    r = LongitudinalRAPPOR(domain_size=1000, candidates=[3, 17, 256, 999, 500, 42],
                           k=16, h=2, m=4, codebook_seed=5)
    x = np.repeat([3, 17, 256, 999, 7], [500, 300, 200, 100, 400])
    ids = np.arange(x.shape[0])
    reports = r.privatize(x, rng=3)
    est = r.estimate(reports)
    counts, variances = _naive_decode(r, reports, ids)
    np.testing.assert_allclose(est.counts, counts, rtol=1e-9, atol=1e-7)
    np.testing.assert_allclose(est.variances, variances, rtol=1e-9)
    assert est.categories == (3, 17, 256, 999, 500, 42)
    assert est.to_frame().shape[0] == 6


def test_headline_example_detects_the_heavy_values():
    r = LongitudinalRAPPOR(domain_size=200, k=128, h=2, m=64, f=0.5, p=0.5, q=0.75,
                           codebook_seed=9)
    rng = np.random.default_rng(0)
    heavy = np.repeat([5, 60, 120], [40_000, 25_000, 15_000])
    x = np.concatenate([heavy, rng.integers(0, 200, 20_000)])
    est = r.estimate(r.privatize(x, rng=1))
    found = [c for c, _, _ in est.detections()]
    assert found[:3] == [5, 60, 120]
    # Bonferroni at alpha / M: a value nobody holds beyond the uniform 100 reports is
    # detected with probability at most alpha over all of them
    assert est.detected.sum() <= 3 + 5
    for c, count, se in est.detections()[:3]:
        truth = {5: 40_000, 60: 25_000, 120: 15_000}[c] + int((x[80_000:] == c).sum())
        assert abs(count - truth) < 5 * se


def test_unbiased_and_variance_by_simulation():
    # 300 independent collections (fresh memos): each count's mean within 4 sd of the truth
    # (sd of the mean = sd / sqrt(300)); the mean plug-in variance against the empirical one:
    # the sample variance of 300 draws has relative sd sqrt(2 / 299) = 0.082, so a ratio in
    # [0.67, 1.33] is a 4-sd band
    r = LongitudinalRAPPOR(domain_size=6, k=16, h=2, m=4, f=0.5, p=0.5, q=0.75,
                           codebook_seed=4)
    x = np.repeat(np.arange(6), [600, 400, 300, 200, 100, 0])
    truth = np.bincount(x, minlength=6)
    rng = np.random.default_rng(1)
    rows = [r.estimate(r.privatize(x, memo=MemoryMemo(), rng=rng)) for _ in range(300)]
    counts = np.array([e.counts for e in rows])
    var_mean = np.array([e.variances for e in rows]).mean(axis=0)
    sd = counts.std(axis=0, ddof=1)
    assert np.all(np.abs(counts.mean(axis=0) - truth) < 4 * sd / np.sqrt(300))
    ratio = counts.var(axis=0, ddof=1) / var_mean
    assert np.all((ratio > 0.67) & (ratio < 1.33)), ratio


# ------------------------------------------------------------------ streaming, files
@pytest.mark.parametrize("mode", ["sequential", "balanced", "random"])
def test_partials_are_bit_identical(mode):
    r = LongitudinalRAPPOR(domain_size=40, k=32, h=2, m=8, codebook_seed=6)
    x = np.arange(3000) % 40
    reports = r.privatize(x, rng=2)
    whole = r.estimate(reports)
    cuts = [0, 1, 700, 701, 2000, 3000]
    parts = [r.partial(reports[a:b], identities=np.arange(a, b)) for a, b in
             zip(cuts[:-1], cuts[1:])]
    est = r.finalize(merge_in_order(r, parts, mode, seed=3))
    assert np.array_equal(est.counts, whole.counts)
    assert np.array_equal(est.variances, whole.variances)
    assert np.array_equal(est.p_values, whole.p_values)


def test_report_files_round_trip(tmp_path):
    pytest.importorskip("pyarrow")
    from fastldp.reports import decode_files, write_reports

    r = LongitudinalRAPPOR(domain_size=30, k=16, h=2, m=4, codebook_seed=8)
    reports = r.privatize(np.arange(500) % 30, rng=1)
    path = write_reports(tmp_path / "r.parquet", r, reports, row_group_size=64)
    est = decode_files(LongitudinalRAPPOR(domain_size=30, k=16, h=2, m=4, codebook_seed=8), path)
    assert np.array_equal(est.counts, r.estimate(reports).counts)
    with pytest.raises(ValueError):
        decode_files(LongitudinalRAPPOR(domain_size=30, k=16, h=2, m=4, codebook_seed=9), path)


def test_sanitization_replaces_and_counts_bad_rows():
    r = LongitudinalRAPPOR(domain_size=10, k=12, h=2, m=2, codebook_seed=3)
    good = r.privatize(np.arange(10), rng=0)
    bad = good.astype(np.float64)
    bad[1, 0] = 0.5          # non-integer
    bad[2, 1] = 300          # out of a byte
    bad[3, 1] = 0xF0         # padding bits (k = 12: bits 12..15 of the second byte)
    bad[4, 0] = np.nan       # a float that is no integer (NaN counts as non-integer)
    est = r.estimate(bad)
    s = est.sanitization
    assert (s.n_received, s.n_valid) == (10, 6) and s.wrong_dtype
    assert s.by_reason["non_integer"] == 2 and s.by_reason["non_numeric"] == 0
    assert s.by_reason["out_of_range"] == 2
    # the replacements are public: keyed by (codebook seed, identity), the same each time
    clean, _ = r.sanitize(bad, np.arange(10, dtype=np.uint64), "t")
    assert np.array_equal(clean[[0, 5]], good[[0, 5]])
    assert np.array_equal(clean[1:5], r.public_rows(np.arange(1, 5, dtype=np.uint64)))
    assert (clean[3, 1] & 0xF0) == 0


def test_bad_parameters_are_named():
    with pytest.raises(ValueError, match="'q' parameter of LongitudinalRAPPOR"):
        LongitudinalRAPPOR(domain_size=10, p=0.8, q=0.5)
    with pytest.raises(ValueError, match="'f' parameter"):
        LongitudinalRAPPOR(domain_size=10, f=float("nan"))
    with pytest.raises(ValueError, match="another name"):
        LongitudinalRAPPOR(domain_size=10, k=16, n_bits=16)
    with pytest.raises(ValueError, match="'candidates' parameter"):
        LongitudinalRAPPOR(domain_size=10, candidates=[1, 1])
    with pytest.raises(ValueError, match="'candidates' parameter"):
        LongitudinalRAPPOR(domain_size=10**6)
    r = LongitudinalRAPPOR(domain_size=10, k=16, m=2, codebook_seed=0)
    with pytest.raises(ValueError, match="'values' parameter"):
        r.privatize([0, 10])
    with pytest.raises(ValueError, match="'epsilons' parameter"):
        r.privatize([0, 1], epsilons=2.0)
    r.privatize([0, 1], epsilons=r.epsilon_1)
    with pytest.raises(ValueError, match="singular"):
        LongitudinalRAPPOR(domain_size=100, k=8, h=2, m=1, codebook_seed=0).estimate(
            np.zeros((4, 1), np.uint8))


def test_budget_keywords_set_f_and_a_symmetric_p_q():
    r = LongitudinalRAPPOR(domain_size=10, h=2, epsilon_inf=4.0, epsilon=1.0, codebook_seed=0)
    # f / 2 = 1 / (1 + e^(epsilon_inf / 2h)); p = 1 - q reaching epsilon_1 by the paper's formula
    assert r.f == pytest.approx(2 / (1 + math.exp(1.0)), rel=1e-15) and r.p == 1 - r.q
    e_inf, e_1 = rappor_epsilons(h=2, f=r.f, p=r.p, q=r.q)
    assert e_inf == pytest.approx(4.0, rel=1e-14) and e_1 == pytest.approx(1.0, rel=1e-13)
    assert (r.epsilon_inf, r.epsilon_1, r.epsilon) == (4.0, 1.0, 1.0)
    with pytest.raises(ValueError, match="'epsilon' parameter"):
        LongitudinalRAPPOR(domain_size=10, epsilon=1.0, q=0.9)
    with pytest.raises(ValueError, match="'epsilon_inf' parameter"):
        LongitudinalRAPPOR(domain_size=10, epsilon_inf=4.0, f=0.3)
    with pytest.raises(ValueError, match="'epsilon' parameter"):
        LongitudinalRAPPOR(domain_size=10, epsilon_inf=2.0, epsilon=2.5)  # above epsilon_inf


def test_report_files_refuse_float_reports(tmp_path):
    pytest.importorskip("pyarrow")
    from fastldp.reports import write_reports

    r = LongitudinalRAPPOR(domain_size=30, k=16, h=2, m=4, codebook_seed=8)
    reports = r.privatize(np.arange(50) % 30, rng=1)
    with pytest.raises(ValueError):
        write_reports(tmp_path / "f.parquet", r, reports.astype(float))


@pytest.mark.parametrize("kwargs", [dict(f=0.3, p=0.2, q=0.9), dict(epsilon_inf=3.0, epsilon=1.0),
                                    dict(epsilon_inf=3.0), dict(f=0.4, epsilon=0.7)])
def test_stream_params_rebuild_the_same_object(kwargs):
    r = LongitudinalRAPPOR(domain_size=30, k=16, h=2, m=4, codebook_seed=8, **kwargs)
    again = LongitudinalRAPPOR(**r.stream_params())
    assert again.stream_params() == r.stream_params()
    assert (again.f, again.p, again.q) == (r.f, r.p, r.q)
    assert (again.epsilon_inf, again.epsilon_1) == (r.epsilon_inf, r.epsilon_1)


def test_memo_store_on_disk_keeps_the_permanent_responses(tmp_path):
    from fastldp.longitudinal import MemoStore

    r = LongitudinalRAPPOR(domain_size=50, k=32, h=2, m=4, f=0.5, p=0.0, q=1.0,
                           codebook_seed=1)
    x = np.arange(40) % 50
    ids = np.arange(40, dtype=np.uint64) * np.uint64(7) + np.uint64(2**63)  # beyond int64
    with MemoStore(tmp_path / "memo.sqlite") as memo:
        day1 = r.privatize(x, memo=memo, identities=ids, rng=1)
    with MemoStore(tmp_path / "memo.sqlite") as memo:   # reopened
        day2 = r.privatize(x, memo=memo, identities=ids, rng=2)
        assert len(memo) == 40
    assert np.array_equal(day1, day2)


def test_reports_and_counts_do_not_depend_on_the_thread_count():
    # 20000 x 33 bits is above the one-thread cut (2^18): the kernels run on a team
    x = np.arange(20_000) % 40
    out = []
    for threads in (1, 2):
        r = LongitudinalRAPPOR(domain_size=40, k=32, h=2, m=1, codebook_seed=3, n_threads=threads)
        reports = r.privatize(x, memo=MemoryMemo(), rng=5)
        out.append((reports, r.bit_counts(reports, np.zeros(x.shape[0], np.int64))))
    assert np.array_equal(out[0][0], out[1][0]) and np.array_equal(out[0][1], out[1][1])
