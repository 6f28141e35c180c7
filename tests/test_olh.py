"""OLH kernels: hashing layout, support counting, bucket search."""

import numpy as np
import pytest

from fastldp._kernels import _olh
from _reference import numpy_olh_bucket


def test_buckets_follow_documented_layout():
    rng = np.random.default_rng(0)
    ids = rng.integers(0, 2**64, 40, dtype=np.uint64)
    items = rng.integers(0, 5000, 40).astype(np.int64)
    g = rng.integers(2, 30, 40).astype(np.int64)
    got = _olh.olh_buckets(17, ids, items, g)
    for j in range(40):
        assert got[j] == numpy_olh_bucket(17, int(ids[j]), int(items[j]), int(g[j]))


def test_hash_all_agrees_with_single_item_hashing():
    allb = _olh.olh_hash_all(3, 12, 100, 7)
    single = _olh.olh_buckets(3, np.full(100, 12, np.uint64), np.arange(100, dtype=np.int64),
                              np.full(100, 7, np.int64))
    np.testing.assert_array_equal(allb, single)


def test_buckets_are_uniform():
    # chi-square over g = 5 buckets with 20,000 items: df = 4, P(chi2 > 23.5) ~ 1e-4
    b = _olh.olh_hash_all(1, 2, 20000, 5)
    counts = np.bincount(b, minlength=5)
    chi2 = np.sum((counts - 4000.0) ** 2 / 4000.0)
    assert chi2 < 23.5


def test_support_counts_match_naive():
    rng = np.random.default_rng(1)
    n, p = 150, 77
    ids = np.arange(n, dtype=np.uint64)
    g = rng.integers(2, 6, n).astype(np.int64)
    reports = np.array([rng.integers(0, gi) for gi in g], dtype=np.int64)
    w = rng.integers(1, 8, n) / 4.0
    got = _olh.olh_support(5, ids, reports, g, w, p, 2)
    ref = np.zeros(p)
    for i in range(n):
        ref += w[i] * (_olh.olh_hash_all(5, int(ids[i]), p, int(g[i])) == reports[i])
    np.testing.assert_array_equal(got, ref)
    one = _olh.olh_support(5, ids, reports, g, w, p, 1)
    assert one.tobytes() == got.tobytes()


@pytest.mark.parametrize("trial", range(25))
def test_bucket_search_equals_brute_force(trial):
    rng = np.random.default_rng(trial)
    n = 6
    ids = rng.integers(0, 2**64, n, dtype=np.uint64)
    g = rng.integers(2, 9, n).astype(np.int64)
    m = int(rng.integers(1, 12))
    items = rng.choice(300, m, replace=False).astype(np.int64)
    weights = rng.choice([-1.0, 1.0, 0.5, -2.0], m)
    best, score, n_max = _olh.olh_bucket_search(8, ids, g, items, weights, 2)
    for i in range(n):
        scores = _olh.olh_bucket_scores(8, int(ids[i]), int(g[i]), items, weights)
        assert score[i] == scores.max()
        assert best[i] == int(np.flatnonzero(scores == scores.max())[0])
        assert n_max[i] == int(np.sum(scores == scores.max()))


# The kernels reject what the oracles reject (no bucket count the 32-bit lane cannot reach).
@pytest.mark.parametrize("g", [1, 0, -3, 2**32 + 1])
def test_olh_kernels_reject_bad_bucket_counts(g):
    ids = np.arange(2, dtype=np.uint64)
    with pytest.raises(ValueError, match=r"g must be in \[2, 2\*\*32\]"):
        _olh.olh_buckets(1, ids, np.zeros(2, np.int64), np.full(2, g, np.int64))
    with pytest.raises(ValueError, match=r"g must be in \[2, 2\*\*32\]"):
        _olh.olh_support(1, ids, np.zeros(2, np.int64), np.full(2, g, np.int64), np.ones(2), 8)
    with pytest.raises(ValueError, match=r"g must be in \[2, 2\*\*32\]"):
        _olh.olh_bucket_search(1, ids, np.full(2, g, np.int64), np.arange(3, dtype=np.int64),
                               np.ones(3))


def test_olh_kernels_reject_negative_items_and_out_of_range_reports():
    ids = np.arange(2, dtype=np.uint64)
    g = np.full(2, 4, np.int64)
    with pytest.raises(ValueError, match="items must be >= 0"):
        _olh.olh_bucket_search(1, ids, g, np.array([0, -1], np.int64), np.ones(2))
    with pytest.raises(ValueError, match="items must be >= 0"):
        _olh.olh_bucket_scores(1, 0, 4, np.array([-2], np.int64), np.ones(1))
    with pytest.raises(ValueError, match=r"reports must lie in \[0, g\)"):
        _olh.olh_support(1, ids, np.array([0, 4], np.int64), g, np.ones(2), 8)


def test_largest_bucket_count_reaches_the_top_bucket_range():
    # g = 2**32: the bucket is the lane itself, so it covers [0, 2**32) and no more
    ids = np.arange(4000, dtype=np.uint64)
    out = _olh.olh_buckets(3, ids, np.zeros(4000, np.int64), np.full(4000, 2**32, np.int64))
    assert out.min() >= 0 and out.max() < 2**32 and out.max() > 2**31
